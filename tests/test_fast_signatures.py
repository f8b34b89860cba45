"""A verification asks libsodium first and OpenSSL for whatever libsodium refuses (issue 15: full verify
entries/s): libsodium must accept only what OpenSSL accepts, so every verdict stays OpenSSL's."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given, settings
from hypothesis import strategies as st

from nexus.keys.identity import verify_signature
from nexus.ledger import verify

pytest.importorskip("nacl")  # (a dependency: a .venv bootstrapped before it was added lacks it)

_KEY = Ed25519PrivateKey.generate()
_PUBLIC = (
    "ed25519:" + base64.b64encode(_KEY.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()
)
_OTHER = Ed25519PrivateKey.generate()


def _sig(key: Ed25519PrivateKey, data: bytes) -> str:
    return base64.b64encode(key.sign(data)).decode()


@settings(max_examples=300, deadline=None)
@given(
    data=st.binary(max_size=300),
    flip=st.none() | st.integers(0, 10_000),
    in_sig=st.booleans(),
    other=st.booleans(),
)
def test_libsodium_accepts_exactly_the_signatures_openssl_accepts(
    data: bytes, flip: int | None, in_sig: bool, other: bool
) -> None:
    raw = bytearray(base64.b64decode(_sig(_OTHER if other else _KEY, data)))
    msg = bytearray(data)
    if flip is not None and (in_sig or msg):
        target = raw if in_sig or not msg else msg
        target[flip % len(target)] ^= 1 << (flip % 8)
    sig = base64.b64encode(bytes(raw)).decode()
    expected = verify_signature(_PUBLIC, sig, bytes(msg))
    assert verify.fast_signature_ok(_PUBLIC, sig, bytes(msg)) == expected


def test_what_libsodium_refuses_openssl_decides() -> None:
    """Keys and signatures of small order, non-canonical or malformed: libsodium may refuse what
    OpenSSL accepts (the verdict then comes from OpenSSL), never the other way round."""
    identity_point = b"\x01" + b"\x00" * 31  # (the neutral element: small order)
    cases = [
        ("ed25519:" + base64.b64encode(identity_point).decode(), identity_point + b"\x00" * 32, b"x"),
        ("ed25519:" + base64.b64encode(b"\xff" * 32).decode(), b"\x00" * 64, b"x"),  # (not a point)
        (_PUBLIC, b"\x00" * 64, b"x"),
        (_PUBLIC, base64.b64decode(_sig(_KEY, b"x"))[:63], b"x"),  # (short)
        ("ed25519:AAAA", base64.b64decode(_sig(_KEY, b"x")), b"x"),  # (short key)
    ]
    for public, raw_sig, data in cases:
        sig = base64.b64encode(raw_sig).decode()
        if verify.fast_signature_ok(public, sig, data):
            assert verify_signature(public, sig, data), public
    assert not verify.fast_signature_ok(_PUBLIC, "not base64!", b"x")
    assert not verify.fast_signature_ok(_PUBLIC, _sig(_KEY, b"x") + "==", b"x")
    assert verify.fast_signature_ok(_PUBLIC, _sig(_KEY, b"x"), b"x")
