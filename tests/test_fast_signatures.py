"""A verification asks zebra or libsodium first and OpenSSL for whatever they do not accept (issue 15:
full verify entries/s, ``keys/bulk.py``): each must accept only what OpenSSL accepts (zebra: on every
key and R it is given), so every verdict stays OpenSSL's. Each test runs once with zebra and once with
libsodium alone."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given, settings
from hypothesis import strategies as st

from nexus.keys import bulk
from nexus.keys.identity import verify_signature

pytest.importorskip("nacl")  # (a dependency: a .venv bootstrapped before it was added lacks it)
pytest.importorskip("ed25519_zebra")


@pytest.fixture(autouse=True, params=["zebra", "libsodium"])
def checker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which fast checker answers: both run every test (libsodium alone: zebra's slot emptied)."""
    libs = list(bulk._libs())
    if request.param == "libsodium":
        libs[0] = None
    monkeypatch.setattr(bulk, "_LIBS", libs)
    return str(request.param)


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
def test_the_fast_checker_accepts_exactly_the_signatures_openssl_accepts(
    data: bytes, flip: int | None, in_sig: bool, other: bool
) -> None:
    raw = bytearray(base64.b64decode(_sig(_OTHER if other else _KEY, data)))
    msg = bytearray(data)
    if flip is not None and (in_sig or msg):
        target = raw if in_sig or not msg else msg
        target[flip % len(target)] ^= 1 << (flip % 8)
    sig = base64.b64encode(bytes(raw)).decode()
    expected = verify_signature(_PUBLIC, sig, bytes(msg))
    assert bulk.fast_signature_ok(_PUBLIC, sig, bytes(msg)) == expected


def test_what_the_fast_checker_refuses_openssl_decides() -> None:
    """Keys and signatures of small order, non-canonical or malformed: the fast checker may refuse
    what OpenSSL accepts (the verdict then comes from OpenSSL), never the other way round."""
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
        if bulk.fast_signature_ok(public, sig, data):
            assert verify_signature(public, sig, data), public
    assert not bulk.fast_signature_ok(_PUBLIC, "not base64!", b"x")
    assert not bulk.fast_signature_ok(_PUBLIC, _sig(_KEY, b"x") + "==", b"x")
    assert bulk.fast_signature_ok(_PUBLIC, _sig(_KEY, b"x"), b"x")


def _with_r(raw_sig: bytes, r: bytes) -> str:
    return base64.b64encode(r + raw_sig[32:]).decode()


def test_zebra_is_never_given_a_key_or_an_r_it_could_answer_differently(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A small-order or non-canonical key, and an R that is not canonically encoded, never reach zebra
    (it checks the cofactored equation and accepts non-canonical encodings, where OpenSSL does not)."""
    from ed25519_zebra import ed_verify as real

    asked: list[bytes] = []

    def spy(sig: bytes, data: bytes, key: bytes) -> bool:
        asked.append(key)
        return bool(real(sig, data, key))

    libs = list(bulk._libs())
    libs[0] = spy
    monkeypatch.setattr(bulk, "_LIBS", libs)
    identity_point = b"\x01" + b"\x00" * 31
    weak = "ed25519:" + base64.b64encode(identity_point).decode()
    forged = base64.b64encode(identity_point + b"\x00" * 32).decode()  # (holds for any data, any key
    assert verify_signature(weak, forged, b"anything")  # of small order: OpenSSL accepts it)
    bulk.fast_signature_ok(weak, forged, b"anything")
    non_canonical_key = (2**255 - 19 + 1).to_bytes(32, "little")  # (y = p + 1: the encoding of y = 1)
    bulk.fast_signature_ok("ed25519:" + base64.b64encode(non_canonical_key).decode(), forged, b"x")
    assert asked == []
    raw_sig = base64.b64decode(_sig(_KEY, b"x"))
    for r in (
        (2**255 - 19).to_bytes(32, "little"),  # y = p
        (2**255 - 1).to_bytes(32, "little"),  # y = 2^255 - 1
        ((1 << 255) | 1).to_bytes(32, "little"),  # x = 0 (y = 1) with the sign bit
        ((1 << 255) | (2**255 - 20)).to_bytes(32, "little"),  # x = 0 (y = p - 1) with the sign bit
    ):
        assert not bulk.fast_signature_ok(_PUBLIC, _with_r(raw_sig, r), b"x")
    assert asked == []
    assert bulk.fast_signature_ok(_PUBLIC, _sig(_KEY, b"x"), b"x")
    assert len(asked) == 1  # (a sound key and a canonical R: zebra answers)


def test_the_checkers_are_really_used(checker: str) -> None:
    """The fixture's two settings really differ: zebra present and used, or emptied."""
    assert (bulk._libs()[0] is not None) == (checker == "zebra")
    assert bulk._libs()[1] is not None  # (libsodium: every setting keeps it)
