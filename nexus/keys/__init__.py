"""Who wrote what: keys and signatures, the keys pinned on this machine, signed heads, rotation."""
