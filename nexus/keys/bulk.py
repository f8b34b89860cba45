"""Checking many Ed25519 signatures fast: what a full ``nexus verify`` and an index build spend most
of their CPU on (one check an entry).

:func:`fast_signature_ok` answers only "yes, valid"; anything it does not accept goes to OpenSSL
(``identity.verify_signature``), which decides. Two checkers are tried in turn:

1. **ed25519-zebra** (the Zcash Foundation's Rust crate over curve25519-dalek, with its AVX2 backend
   where the CPU has it; ``py-ed25519-zebra-bindings``): about 0.6× libsodium's CPU on this machine.
   It checks the cofactored equation of ZIP-215 (``[8][S]B = [8]R + [8][k]A``) where OpenSSL checks
   ``[S]B - [k]A`` and compares its encoding with R's bytes. The two answers agree on every
   signature made the standard way, and on everything anyone without the private key can make (k is
   a hash of R's bytes, so R cannot be changed after signing). They differ on three kinds of input;
   nexus hands zebra neither of the first two:

   * a public key of small order, or outside the prime-order subgroup, or not canonically encoded:
     such a key is never handed to zebra (libsodium's ``crypto_core_ed25519_is_valid_point``, once
     a key);
   * R not canonically encoded (``y >= p``, or ``x = 0`` with the sign bit set): handed on;
   * R with a small-order component: only the key's holder can make such a signature (it needs the
     secret scalar). zebra accepts it, OpenSSL refuses it: the entry is still its author's own, made
     deliberately non-standard. That is the one difference left, and it never says "valid" of
     anything its author did not sign.

2. **libsodium** (PyNaCl): about 0.5× OpenSSL's CPU, accepting a subset of what OpenSSL accepts
   (it also refuses small-order and non-canonical points).

Without either library OpenSSL checks everything; the verdicts are the same (but for that one
deliberately non-standard kind), only slower (``tests/test_fast_signatures.py``).
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import Any

_P = 2**255 - 19
_Y_MASK = (1 << 255) - 1

# Each checker once imported: (zebra's ed_verify or None, libsodium's crypto_sign_open or None,
# libsodium's BadSignatureError, libsodium's is_valid_point or None).
_LIBS: list[Any] = []
# Raw 32 bytes of each public key (``ed25519:<base64>``), and whether zebra may check it.
_KEYS: dict[str, tuple[bytes, bool]] = {}


def _libs() -> list[Any]:
    if not _LIBS:
        zebra: Callable[[bytes, bytes, bytes], bool] | None = None
        sign_open: Any = None
        bad: Any = ValueError
        valid_point: Any = None
        try:
            from ed25519_zebra import ed_verify

            zebra = ed_verify
        except ImportError:  # (a dependency; a platform without its wheel falls back to libsodium)
            pass
        try:
            from nacl.bindings import crypto_core_ed25519_is_valid_point, crypto_sign_open
            from nacl.exceptions import BadSignatureError

            sign_open, bad = crypto_sign_open, BadSignatureError
            valid_point = crypto_core_ed25519_is_valid_point
        except ImportError:  # (a dependency; without it, OpenSSL checks everything)
            zebra = None  # (zebra is used only for keys libsodium found to be sound points)
        _LIBS[:] = [zebra, sign_open, bad, valid_point]
    return _LIBS


def _key(public_key: str) -> tuple[bytes, bool] | None:
    """The raw key and whether zebra may check it (a canonical point of the prime-order subgroup,
    not of small order); None for a key that is not ``ed25519:`` and 32 bytes of base64."""
    known = _KEYS.get(public_key)
    if known is not None:
        return known
    from .trust import raw_key

    raw = raw_key(public_key)
    if raw is None:
        return None
    valid_point = _libs()[3]
    sound = bool(valid_point is not None and valid_point(raw))
    if len(_KEYS) < 4096:
        _KEYS[public_key] = (raw, sound)
    return raw, sound


def _canonical_r(sig: bytes) -> bool:
    """R (the signature's first 32 bytes) is a canonical encoding: y below p, and no sign bit on
    a point whose x is 0 (y = 1 or y = p - 1)."""
    r = int.from_bytes(sig[:32], "little")
    y = r & _Y_MASK
    return y < _P and not (r >> 255 and y in (1, _P - 1))


def fast_signature_ok(public_key: str, signature: str, data: bytes) -> bool:
    """True when ``signature`` (base64) by ``public_key`` (``ed25519:<base64>``) holds for ``data`` by
    zebra or libsodium (see the module's docstring); False means "ask OpenSSL", never "invalid"."""
    zebra, sign_open, bad, _ = _libs()
    if sign_open is None:
        return False
    key = _key(public_key)
    if key is None:
        return False
    try:
        sig = binascii.a2b_base64(signature, strict_mode=True)
    except (binascii.Error, ValueError):
        return False
    if len(sig) != 64:
        return False
    raw, sound = key
    if zebra is not None and sound and _canonical_r(sig):
        try:
            return bool(zebra(sig, data, raw))  # (its False: libsodium would refuse too)
        except (ValueError, TypeError):
            pass
    try:
        sign_open(sig + data, raw)
    except (bad, ValueError, TypeError):
        return False
    return True
