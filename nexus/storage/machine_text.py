"""Format 2's machine text: the end line ``%% SEQ TOKEN %%`` and the acknowledgements' line.

The end line is the entry's only Obsidian comment: after ``%%`` a space, or the letter of ``via``
(``w``: the watcher signed a person's text; ``s``: a hand edit of the project state recorded), the
author's sequence number in decimal, a space, and TOKEN: base64url without padding of the Ed25519
signature (64 bytes) and, when the author had read an entry, the id of the newest it had read (16
bytes): 107 characters, or 86. At most 120 characters for every seq up to 999,999
(:data:`MAX_MACHINE_CHARS`). The entries it acknowledges are visible links on the line above it:
``↩ [[log/2026-11#^ID]] · …``. No I/O.
"""

from __future__ import annotations

import base64
import binascii
import re

from ..records import Entry
from .ids import ID_PATTERN, ID_RE, decode_id_ms, from_bytes, id_bytes, segment_name, utc_ts

MAX_MACHINE_CHARS = 120  # a format 2 end line, for any seq up to 999,999
# Format 2's end line: a space, or the letter of ``via`` (``w`` watcher, ``s`` state), then seq, then
# base64url of the signature (64 bytes) and, when there is one, the seen id (16 bytes).
_TOKEN = "[A-Za-z0-9_-]"
END_V2_RE = re.compile(rf"%%([ ws])([0-9]+) ({_TOKEN}{{86}}(?:{_TOKEN}{{21}})?) %%")
END_V2_PREFIX = "%%"
ACK_MARK = "↩ "
_ACK_LINK = re.compile(rf"\[\[log/\d{{4}}-\d\d#\^({ID_PATTERN})\]\]")
ACK_RE = re.compile(rf"↩ {_ACK_LINK.pattern}(?: · {_ACK_LINK.pattern})*")
_VIA_FLAG = {None: " ", "watcher": "w", "state": "s"}
FLAG_VIA = {flag: via for via, flag in _VIA_FLAG.items()}
_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_B64URL_VALUE = {c: i for i, c in enumerate(_B64URL)}
_URL_TO_STD = bytes.maketrans(b"-_", b"+/")  # (bytes.translate: a C table; str.translate a dict)


def ack_line(ack: tuple[str, ...]) -> str:
    """Format 2's visible acknowledgements: ``↩ [[log/2026-11#^ID]] · …`` (an id's segment is the
    month of its time)."""
    links = []
    for a in ack:
        if not ID_RE.fullmatch(a):
            raise ValueError(f"an acknowledged id is not an entry id: {a!r}")
        links.append(f"[[log/{segment_name(utc_ts(decode_id_ms(a)))}#^{a}]]")
    return ACK_MARK + " · ".join(links)


def machine_token(sig: str, seen: str | None) -> str:
    """Format 2's token: base64url (no padding) of the signature's 64 bytes and the seen id's 16."""
    raw = base64.b64decode(sig, validate=True)
    if len(raw) != 64:
        raise ValueError("a signature is 64 bytes")
    if seen is not None:
        if not ID_RE.fullmatch(seen):
            raise ValueError(f"seen is not an entry id: {seen!r}")
        raw += id_bytes(seen)
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def from_token(token: str) -> tuple[str, str | None]:
    """(signature as base64, seen id or None) from a format 2 token (86 or 107 characters)."""
    raw = binascii.a2b_base64(
        token.encode("ascii").translate(_URL_TO_STD) + (b"==" if len(token) == 86 else b"=")
    )
    sig = binascii.b2a_base64(raw[:64], newline=False).decode("ascii")
    if len(raw) == 64:
        return sig, None
    return sig, from_bytes(raw[64:])


def end_line_v2(entry: Entry) -> str:
    """Format 2's end line: ``%% SEQ TOKEN %%`` (``%%wSEQ …`` when the watcher signed, ``%%sSEQ …``
    for the project state's entries)."""
    flag = _VIA_FLAG.get(entry.via)
    if flag is None:
        raise ValueError(f"format 2 has no flag for via={entry.via!r}")
    if entry.seq.__class__ is not int or entry.seq < 0:
        raise ValueError("seq")
    return f"%%{flag}{entry.seq} {machine_token(entry.sig, entry.seen)} %%"


def acks(line: str) -> tuple[str, ...]:
    """The acknowledged ids of an acknowledgements' line (``ACK_RE`` matched it)."""
    return tuple(_ACK_LINK.findall(line))


def canonical_end(seq: str, token: str) -> bool:
    """Whether an end line read with ``END_V2_RE`` (its ``seq`` and ``token``) is the one
    :func:`end_line_v2` writes: seq without leading zeros, the token's last character's bits beyond
    the bytes zero."""
    spare = 15 if len(token) == 86 else 3
    return (seq[0] != "0" or seq == "0") and not _B64URL_VALUE[token[-1]] & spare
