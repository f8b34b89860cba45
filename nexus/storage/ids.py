"""Entry ids (ULIDs: 48 bits of milliseconds, 80 random bits, Crockford base32) and the times and
month segments they name. No I/O."""

from __future__ import annotations

import os
import re
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_PATTERN = r"[0-9A-HJKMNP-TV-Z]{26}"
ID_RE = re.compile(ID_PATTERN)


_PAIRS = [a + b for a in _CROCKFORD for b in _CROCKFORD]  # 10 bits -> two digits
_SHIFTS = range(120, -1, -10)
_TO_DIGITS = str.maketrans(_CROCKFORD, "0123456789abcdefghijklmnopqrstuv")
_RAND_MASK = (1 << 80) - 1


def encode_id(ms: int, rand: int) -> str:
    """A ULID: 48 bits of milliseconds then 80 random bits, Crockford base32, time-sortable."""
    value = (ms << 80) | rand  # 130 bits as 13 pairs of base32 digits
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in _SHIFTS])


def decode_id_ms(entry_id: str) -> int:
    return int(entry_id.translate(_TO_DIGITS), 32) >> 80


def new_id(after: str | None = None, now_ms: int | None = None) -> str:
    """A fresh id, strictly greater than ``after`` (monotonic under the log lock)."""
    return new_id_ms(after, now_ms)[0]


def new_id_ms(after: str | None = None, now_ms: int | None = None) -> tuple[str, int]:
    """A fresh id strictly greater than ``after``, and the millisecond time it encodes."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    rand = os.urandom(10)
    if after is not None:
        last = int(after.translate(_TO_DIGITS), 32)  # (Crockford digits -> int()'s base-32 digits)
        if ms <= last >> 80:  # the same millisecond (or the clock went back): count on from ``after``
            value = last + 1 + int.from_bytes(rand[:2], "big")
            return encode_id(value >> 80, value & _RAND_MASK), value >> 80
    return encode_id(ms, int.from_bytes(rand, "big")), ms


def utc_ts(ms: int) -> str:
    """``2026-11-30T04:41:07Z`` (second precision; the id carries milliseconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def segment_name(ts: str) -> str:
    """The month segment an entry written at ``ts`` belongs to: ``2026-11``."""
    return ts[:7]


def id_bytes(entry_id: str) -> bytes:
    """The id's 128 bits, big-endian (format 2 stores ``seen`` so)."""
    return int(entry_id.translate(_TO_DIGITS), 32).to_bytes(16, "big")


def from_bytes(raw: bytes) -> str:
    """The id whose 128 bits are ``raw`` (16 bytes, big-endian)."""
    value = int.from_bytes(raw, "big")
    return encode_id(value >> 80, value & _RAND_MASK)
