"""One verdict on a signature (``keys/signatures.py``): OpenSSL's, for every surface.

Test vectors made here with the curve's arithmetic (RFC 8032, section 6): keys and R of small order,
R with a small-order component, non-canonical S, R and keys, and random bit flips. libsodium, asked
first when many signatures are checked, must accept only what OpenSSL accepts; the bulk and the single
verdict must be the same. Then crafted entries in a real vault get the same verdict from ``verify``,
``verify --full``, search, the brief, ``log read`` and the MCP tools.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
from dataclasses import replace
from typing import Any

import pytest
from conftest import Env
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from nexus.keys import identity, signatures
from nexus.storage import entries, machine_text

P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = -121665 * pow(121666, P - 2, P) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)
Point = tuple[int, int, int, int]  # extended coordinates (X, Y, Z, T)


def _add(a: Point, b: Point) -> Point:
    p1 = (a[1] - a[0]) * (b[1] - b[0]) % P
    p2 = (a[1] + a[0]) * (b[1] + b[0]) % P
    c = 2 * a[3] * b[3] * D % P
    d = 2 * a[2] * b[2] % P
    e, f, g, h = p2 - p1, d - c, d + c, p2 + p1
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def _mul(s: int, point: Point) -> Point:
    q: Point = (0, 1, 1, 0)
    while s > 0:
        if s & 1:
            q = _add(q, point)
        point = _add(point, point)
        s >>= 1
    return q


def _x(y: int, sign: int) -> int | None:
    x2 = (y * y - 1) * pow(D * y * y + 1, P - 2, P) % P
    if x2 == 0:  # (x = 0 with the sign bit set: not canonical; ZIP-215 reads it as x = 0)
        return 0
    x = pow(x2, (P + 3) // 8, P)
    if (x * x - x2) % P:
        x = x * SQRT_M1 % P
    if (x * x - x2) % P:
        return None
    return P - x if (x & 1) != sign else x


def _decode(s: bytes) -> Point:
    n = int.from_bytes(s, "little")
    y = (n & ((1 << 255) - 1)) % P  # (a non-canonical y read as y - p, as ZIP-215 reads it)
    x = _x(y, n >> 255)
    assert x is not None
    return (x, y, 1, x * y % P)


def _encode(point: Point) -> bytes:
    zi = pow(point[2], P - 2, P)
    x, y = point[0] * zi % P, point[1] * zi % P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


_GY = 4 * pow(5, P - 2, P) % P
_GX = _x(_GY, 0)
assert _GX is not None
G: Point = (_GX, _GY, 1, _GX * _GY % P)

# The eight points of small order (libsodium's list), each checked: [8]T is the neutral element.
SMALL = [
    bytes.fromhex(h)
    for h in (
        "0100000000000000000000000000000000000000000000000000000000000000",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000080",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    )
]
ORDER_8 = SMALL[4]
NON_CANONICAL_SMALL = [  # small-order points encoded another way (y + p, or x = 0 with the sign bit)
    (P + 1).to_bytes(32, "little"),  # the neutral element, y = p + 1
    P.to_bytes(32, "little"),  # y = 0 (order 4) as y = p
    ((1 << 255) | 1).to_bytes(32, "little"),  # the neutral element with the sign bit
    ((1 << 255) | (P - 1)).to_bytes(32, "little"),  # order 2 with the sign bit
]


class Key:
    """A private key as the curve's numbers: its scalar, its prefix and its public encoding."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        seed = private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        h = hashlib.sha512(seed).digest()
        self.a = (int.from_bytes(h[:32], "little") & ((1 << 254) - 8)) | (1 << 254)
        self.prefix = h[32:]
        self.public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        assert _encode(_mul(self.a, G)) == self.public
        self.text = "ed25519:" + base64.b64encode(self.public).decode()

    def sign_with_r(self, r_bytes: bytes, r: int, data: bytes) -> bytes:
        """A signature whose R is ``r_bytes`` (any encoding), with S = r + h·a: the cofactored
        equation holds whenever [8]R = [8][r]B."""
        h = int.from_bytes(hashlib.sha512(r_bytes + self.public + data).digest(), "little") % L
        return r_bytes + ((r + h * self.a) % L).to_bytes(32, "little")


def crafted(key: Key, data: bytes) -> dict[str, bytes]:
    """The non-standard signatures only the key's holder can make (all valid by ZIP-215's cofactored
    equation, refused by OpenSSL's), and a standard one."""
    r = int.from_bytes(hashlib.sha512(key.prefix + data).digest(), "little") % L
    standard = key.sign_with_r(_encode(_mul(r, G)), r, data)
    s = int.from_bytes(standard[32:], "little")
    return {
        "standard": standard,
        "small-order R": key.sign_with_r(ORDER_8, 0, data),
        "mixed-order R": key.sign_with_r(_encode(_add(_mul(r, G), _decode(ORDER_8))), r, data),
        "non-canonical S": standard[:32] + (s + L).to_bytes(32, "little"),
        "non-canonical R": key.sign_with_r(NON_CANONICAL_SMALL[0], 0, data),
    }


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _verdicts(public: str, sig: bytes, data: bytes) -> tuple[bool, bool, bool]:
    """(OpenSSL's verdict, libsodium's "valid", the bulk verdict); asserts they agree as they must."""
    openssl = signatures._openssl_accepts(public, _b64(sig), data)
    sodium = signatures._sodium_accepts(public, _b64(sig), data)
    bulk = signatures.valid(public, _b64(sig), data, bulk=True)
    assert not sodium or openssl, "libsodium accepted what OpenSSL refuses"
    assert bulk == openssl == signatures.valid(public, _b64(sig), data)
    return openssl, sodium, bulk


_KEY = Key(Ed25519PrivateKey.generate())


def test_the_small_order_points_are_of_small_order() -> None:
    for t in SMALL + NON_CANONICAL_SMALL:
        assert _encode(_mul(8, _decode(t))) == SMALL[0]
    assert _encode(_mul(L, G)) == SMALL[0]  # (the arithmetic itself: B has order L)


def test_crafted_signatures_get_openssls_verdict_both_ways() -> None:
    cases = crafted(_KEY, b"x")
    for name, sig in cases.items():
        openssl, _, _ = _verdicts(_KEY.text, sig, b"x")
        assert openssl == (name == "standard"), name
        # each holds by the cofactored equation (what ed25519-zebra, ZIP-215, checks) but S's range
        assert _cofactored(_KEY.public, sig, b"x") == (name != "non-canonical S"), name


def _cofactored(public: bytes, sig: bytes, data: bytes) -> bool:
    """[8][S]B = [8]R + [8][h]A, R read even when not canonically encoded; S must be below L."""
    s = int.from_bytes(sig[32:], "little")
    h = int.from_bytes(hashlib.sha512(sig[:32] + public + data).digest(), "little") % L
    right = _add(_decode(sig[:32]), _mul(h, _decode(public)))
    return s < L and _encode(_mul(8, _mul(s, G))) == _encode(_mul(8, right))


def test_keys_and_r_of_small_order_and_non_canonical_keys() -> None:
    """OpenSSL accepts a small-order key with a small-order R and S = 0 (only a hand-made key is
    one); libsodium refuses every such key, so the bulk verdict is OpenSSL's again."""
    accepted = 0
    for a in SMALL + NON_CANONICAL_SMALL:
        public = "ed25519:" + _b64(a)
        for r in SMALL + NON_CANONICAL_SMALL:
            for s in (0, 1, L, 8):
                openssl, sodium, _ = _verdicts(public, r + s.to_bytes(32, "little"), b"m")
                assert not sodium
                accepted += openssl
    assert accepted > 0  # (the vectors reach OpenSSL's accepting side too)
    for y in (P + 2, P + 5, 2**255 - 1):  # non-canonical keys (y >= p)
        public = "ed25519:" + _b64(y.to_bytes(32, "little"))
        for sig in crafted(_KEY, b"m").values():
            _verdicts(public, sig, b"m")


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200), flip=st.none() | st.integers(0, 10_000), in_sig=st.booleans())
def test_random_signatures_and_bit_flips(data: bytes, flip: int | None, in_sig: bool) -> None:
    sig = bytearray(crafted(_KEY, data)["standard"])
    msg = bytearray(data)
    if flip is not None and (in_sig or msg):
        target = sig if in_sig or not msg else msg
        target[flip % len(target)] ^= 1 << (flip % 8)
    _verdicts(_KEY.text, bytes(sig), bytes(msg))


def test_malformed_keys_and_signatures_are_refused() -> None:
    good = _b64(crafted(_KEY, b"x")["standard"])
    for public, sig in (
        ("ed25519:AAAA", good),
        ("rsa:" + _b64(_KEY.public), good),
        (_KEY.text, "not base64!"),
        (_KEY.text, good + "=="),
        (_KEY.text, good[:-4]),
    ):
        assert not signatures.valid(public, sig, b"x")
        assert not signatures.valid(public, sig, b"x", bulk=True)
    assert signatures.valid(_KEY.text, good, b"x", bulk=True)


# ------------------------------------------------------------------ every surface, one verdict


def _crafted_entry(env: Env, case: str) -> str:
    """An entry by ella whose signature is ``case`` of :func:`crafted`, made with ella's own key
    (only the key's holder can make these); returns its id."""
    env.append("lyra", "a genuine entry about the harbour")
    located = env.append("ella", "the harbour crane is fixed").located
    pem = identity.private_key_path(env.vault, env.keys_home, "ella").read_bytes()
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    private = load_pem_private_key(pem, None)
    assert isinstance(private, Ed25519PrivateKey)
    sig = _b64(crafted(Key(private), entries.signing_bytes(located.entry))[case])
    seg = env.vault.root / located.file
    text = seg.read_bytes()
    # (the signature travels in the end line's token, beside the id of the entry ella had seen)
    before, after = (
        machine_text.end_line_v2(located.entry),
        machine_text.end_line_v2(replace(located.entry, sig=sig)),
    )
    assert text.count(before.encode()) == 1
    seg.write_bytes(text.replace(before.encode(), after.encode()))
    assert entries.signing_bytes(replace(located.entry, sig=sig)) == entries.signing_bytes(located.entry)
    return str(located.entry.id)


def _mcp(env: Env, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    from mcp import Client

    from nexus import workspace
    from nexus.surfaces import mcp_server

    server = mcp_server.build_server(
        workspace.for_vault(env.vault, {}, keys=env.keys_home), "sam", tools="all"
    )

    async def go() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(go())


@pytest.mark.parametrize(
    "case", ["standard", "small-order R", "mixed-order R", "non-canonical S", "non-canonical R"]
)
def test_a_crafted_entry_gets_one_verdict_on_every_surface(env: Env, case: str) -> None:
    eid = _crafted_entry(env, case)
    genuine = case == "standard"

    def flagged(report: dict[str, Any]) -> bool:
        return any(p.get("entry_id") == eid and p["kind"] in ("edited", "forged") for p in report["problems"])

    assert flagged(env.run("verify", "--json", check=False).json()) != genuine
    assert flagged(env.run("verify", "--full", "--json", check=False).json()) != genuine

    hits = env.run("search", "crane", "--json").json()
    assert [h["entry_id"] for h in hits] == [eid] and hits[0]["verified"] == genuine, hits

    brief = env.run("brief", "--agent", "sam", "--peek").stdout
    assert _unverified(brief, eid) != genuine, brief
    items = {
        i["id"]: i["verified"] for i in env.run("log", "read", "--agent", "sam", "--peek", "--json").json()
    }
    assert items[eid] == genuine and sum(items.values()) == 1 + genuine

    read, found, briefed = _mcp(
        env, ("log_read", {"peek": True}), ("search", {"query": "crane"}), ("brief", {"peek": True})
    )
    assert {i["id"]: i["verified"] for i in _items(read)}[eid] == genuine
    assert [(h["entry_id"], h["verified"]) for h in _items(found)] == [(eid, genuine)]
    assert _unverified(briefed.content[0].text, eid) != genuine


def _unverified(text: str, eid: str) -> bool:
    """The brief marks entry ``eid`` UNVERIFIED (and quotes it nowhere as its author's words)."""
    return any("UNVERIFIED" in line and eid in line for line in text.splitlines())


def _items(result: Any) -> list[dict[str, Any]]:
    assert not result.is_error, result.content[0].text
    data = result.structured_content
    for key in ("result", "items", "entries", "hits"):
        if isinstance(data, dict) and key in data:
            data = data[key]
    assert isinstance(data, list), data
    return data
