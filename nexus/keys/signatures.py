"""The one verdict on an Ed25519 signature, for every surface: OpenSSL's (``cryptography``).

Every reader (brief, ``log read``, hooks, MCP), search, the index build and ``nexus verify`` (both
ways) ask :func:`valid`, so the same bytes get the same answer everywhere. OpenSSL refuses a
non-canonical S (S >= L), a non-canonical R (it recomputes R and compares encodings) and an R with a
small-order component (it checks the cofactorless equation); it accepts a key of small order with a
matching small-order R, which nothing signs by accident (only a hand-made key can).

``bulk=True`` (a full verify, an index build: tens of thousands of checks in one process) asks
libsodium (PyNaCl's ``crypto_sign_open``) first, and only for its "valid": libsodium checks the same
cofactorless equation with the same byte comparison and refuses more (keys and R of small order,
non-canonical keys), so what it accepts OpenSSL accepts too (``tests/test_signatures.py`` checks it on
small-order, mixed-order, non-canonical and random vectors); whatever it refuses OpenSSL decides.
It costs ~0.5x OpenSSL's CPU a signature (56 against 107 µs here), but ~11 ms of CPU to import
(bytecode cached; more from a cold start), which is why a reader (a few signatures, most of them
remembered) does not load it.

``memo``: the machine's memo of signatures found valid (``checked.py``); a verification passes none.
"""

from __future__ import annotations

import base64
import binascii
import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from .checked import Memo

_SODIUM: list[Any] = []  # (libsodium's crypto_sign_open and its refusal, imported on first bulk use)


def valid(
    public_key: str, signature: str, data: bytes, memo: Memo | None = None, *, bulk: bool = False
) -> bool:
    """True when ``signature`` (base64) is ``public_key``'s (``ed25519:<base64>``) signature of
    ``data``, as OpenSSL decides. With ``memo``, a signature this machine found valid before is not
    checked again, and one found valid now is remembered. ``bulk``: libsodium first (see above)."""
    remembered = b""
    if memo is not None:
        from .checked import digest

        remembered = digest(public_key, signature, data)
        if memo.known(remembered):
            return True
    ok = (bulk and _sodium_accepts(public_key, signature, data)) or _openssl_accepts(
        public_key, signature, data
    )
    if ok and memo is not None:
        memo.add(remembered)
    return ok


def _openssl_accepts(public_key: str, signature: str, data: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature

    try:
        _public_key(public_key).verify(base64.b64decode(signature, validate=True), data)
    except (InvalidSignature, ValueError):
        return False
    return True


@functools.lru_cache(maxsize=256)
def _public_key(public_key: str) -> Ed25519PublicKey:
    """The key object for ``ed25519:<base64>`` (decoded once: a full verify checks every entry)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    raw = base64.b64decode(public_key.removeprefix("ed25519:"), validate=True)
    return Ed25519PublicKey.from_public_bytes(raw)


@functools.lru_cache(maxsize=256)
def raw_key(public_key: str) -> bytes | None:
    """The 32 bytes of ``ed25519:<base64>``, or None if malformed (remembered for 256 keys)."""
    if not public_key.startswith("ed25519:"):
        return None
    try:
        raw = base64.b64decode(public_key.removeprefix("ed25519:"), validate=True)
    except ValueError:
        return None
    return raw if len(raw) == 32 else None


def _sodium_accepts(public_key: str, signature: str, data: bytes) -> bool:
    """libsodium's "valid" (False: refused, or libsodium missing; OpenSSL then decides)."""
    if not _SODIUM:
        try:
            from nacl.bindings import crypto_sign_open
            from nacl.exceptions import BadSignatureError

            _SODIUM[:] = [crypto_sign_open, BadSignatureError]
        except ImportError:  # (a dependency; without it OpenSSL checks everything)
            _SODIUM[:] = [None, ValueError]
    sign_open, bad = _SODIUM
    raw = raw_key(public_key)
    if sign_open is None or raw is None:
        return False
    try:
        sig = binascii.a2b_base64(signature, strict_mode=True)
    except (binascii.Error, ValueError):
        return False
    if len(sig) != 64:
        return False
    try:
        sign_open(sig + data, raw)
    except (bad, ValueError, TypeError):
        return False
    return True
