"""This machine's seal: a secret outside the vault that marks entries this machine has checked.

Search shows, for every hit, whether its entry's signature checks against its author's pinned key;
an Ed25519 verification costs ~0.14 ms, most of a search's time when its hits are new. The index is
built by reading every entry anyway, so it checks (or finds covered by ``nexus verify``'s proof)
each entry's signature once, and stores beside the entry a seal of its exact bytes::

    HMAC-SHA256(secret, "nexus-seal/1" NUL public key NUL SHA-256(entry bytes))[:16]

At query time the bytes read back and the stored seal prove "these are the bytes this machine found
signed by this public key" with two hashes. The index lives in the vault; the secret does not:
``<NEXUS_HOME>/seal.key``, 32 random bytes, mode 0600, made on first use. Whoever can rewrite the
vault (its index included) cannot forge a seal without the secret, so a seal that does not hold, a
missing one, or no secret at all means the signature is checked as before — never a false
"verified". Losing the secret costs time only (old seals no longer hold).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

FILE = "seal.key"
SIZE = 16  # bytes of a seal
_DOMAIN = b"nexus-seal/1\0"


def secret(home: Path, *, create: bool = False) -> bytes | None:
    """The machine's secret in ``home`` (made when missing and ``create``), or None when there is
    none, or it is unreadable, of another size, or readable by anyone but its owner."""
    path = home / FILE
    try:
        return _read(path)
    except FileNotFoundError:
        if not create:
            return None
    except OSError:
        return None
    with contextlib.suppress(OSError):
        _make(path)
    try:
        return _read(path)
    except OSError:
        return None


def _read(path: Path) -> bytes | None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077 or st.st_uid != os.getuid():
            return None  # a secret others could read (or plant) proves nothing
        data = os.read(fd, 64)
    finally:
        os.close(fd)
    return data if len(data) == 32 else None


def _make(path: Path) -> None:
    """Write a new secret to a temporary file, then link it into place: a reader never sees a
    partial secret, and of two processes making one at once the first link wins."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{FILE}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_bytes(32))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)


def seal(key: bytes, public_key: str, digest: bytes) -> bytes:
    """The seal of an entry whose exact bytes hash to ``digest`` (SHA-256), found signed by
    ``public_key``."""
    message = _DOMAIN + public_key.encode("ascii", "replace") + b"\0" + digest
    return hmac.digest(key, message, hashlib.sha256)[:SIZE]


def holds(key: bytes, public_key: str, digest: bytes, stored: bytes) -> bool:
    """Whether ``stored`` is this machine's seal of those bytes and that key."""
    return len(stored) == SIZE and hmac.compare_digest(seal(key, public_key, digest), stored)
