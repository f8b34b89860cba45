"""The on-disk form of a live-context entry: render, parse, canonical bytes, ids.

An entry in a segment file (``log/YYYY-MM.md``) looks like this::

    %% nexus:begin 01JDQ8Z6V3M2K4T5N7P9R1S3W5 %%
    **2026-11-30 04:41:07Z** · ella · build · note — Set up the CI pipeline ^01JDQ8Z6V3M2K4T5N7P9R1S3W5

    The body, verbatim, Markdown allowed.
    %% nexus:end {"ack":[],"id":"01JD…","key":"…","prev":"…","seen":null,"seq":1,"sig":"…","v":1} %%
    <blank line>

Obsidian hides ``%% … %%`` comments, so a reader sees the header line (time · agent · channel · type —
summary) and the body; the block id makes the entry linkable as ``[[log/2026-11#^ID]]``. A body line that
could be mistaken for framing gets one extra leading backslash on write and loses it on read, so every
body round-trips byte for byte and never creates an entry.

This module does no I/O; see ``log.py`` for the write path.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import replace
from typing import Any

from ..records import Entry

FORMAT_VERSION = 1
SIGN_CONTEXT = b"nexus/entry/v1\n"

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_PATTERN = r"[0-9A-HJKMNP-TV-Z]{26}"
ID_RE = re.compile(ID_PATTERN)

BEGIN_PREFIX = "%% nexus:begin "
END_PREFIX = "%% nexus:end "
FRAME_PREFIX = "%% nexus:"
BEGIN_RE = re.compile(rf"%% nexus:begin (?P<id>{ID_PATTERN}) %%")
END_RE = re.compile(r"%% nexus:end (?P<json>\{.*\}) %%")
HEADER_RE = re.compile(
    r"\*\*(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)Z\*\* · (?P<agent>[a-z0-9-]+) · "
    r"(?P<channel>[a-z0-9-]+) · (?P<type>[a-z0-9-]+) — (?P<summary>.*) \^(?P<bid>[A-Za-z0-9-]+)"
)
# Anything a parser could take for framing: escaped in bodies.
_LOOKS_LIKE_FRAME = re.compile(r"\\*(?:%%\s*nexus:|\*\*\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\*\* · )")


# ---------------------------------------------------------------- ids and time


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


# ---------------------------------------------------------------- canonical form


# One encoder each, built once (``json.dumps`` with arguments builds a new encoder on every call).
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
_END_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_STR = json.encoder.encode_basestring  # (what those encoders write for a string: C functions)
_ASCII = json.encoder.encode_basestring_ascii


def canonical(entry: Entry) -> bytes:
    """The bytes an entry's signature covers: every field but ``sig``, as sorted compact JSON."""
    return canonical_fields(
        id=entry.id,
        ts=entry.ts,
        agent=entry.agent,
        channel=entry.channel,
        type=entry.type,
        summary=entry.summary,
        body=entry.body,
        ack=entry.ack,
        seen=entry.seen,
        seq=entry.seq,
        prev=entry.prev,
        key=entry.key,
        via=entry.via,
    )


def canonical_fields(
    *,
    id: str,
    ts: str,
    agent: str,
    channel: str,
    type: str,
    summary: str,
    body: str | None,
    ack: tuple[str, ...],
    seen: str | None,
    seq: int,
    prev: str | None,
    key: str,
    via: str | None,
) -> bytes:
    """``canonical`` from an entry's fields before it exists (the write path signs these bytes and
    builds the entry once, with its signature)."""
    # (written out key by key, sorted, with the encoder's own string function: the same bytes as
    # ``_CANONICAL_JSON`` of the dict below, in a third of the time; a full verify makes one per
    # entry. Any field of an unexpected type takes the encoder.)
    if seq.__class__ is int and isinstance(ack, tuple | list):
        try:
            text = (
                f'{{"ack":[{",".join(map(_STR, ack))}],"agent":{_STR(agent)},'
                f'"body":{"null" if body is None else _STR(body)},"channel":{_STR(channel)},'
                f'"id":{_STR(id)},"key":{_STR(key)},"prev":{"null" if prev is None else _STR(prev)},'
                f'"seen":{"null" if seen is None else _STR(seen)},"seq":{seq!r},'
                f'"summary":{_STR(summary)},"ts":{_STR(ts)},"type":{_STR(type)},'
                f'"v":{FORMAT_VERSION},"via":{"null" if via is None else _STR(via)}}}'
            )
            return text.encode("utf-8", "surrogatepass")
        except TypeError:
            pass
    data: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "id": id,
        "ts": ts,
        "agent": agent,
        "channel": channel,
        "type": type,
        "summary": summary,
        "body": body,
        "ack": list(ack),
        "seen": seen,
        "seq": seq,
        "prev": prev,
        "key": key,
        "via": via,
    }
    # (surrogatepass: a field read from a damaged end line may hold a lone surrogate; hashing it must
    # not raise, and its signature simply fails)
    return _CANONICAL_JSON(data).encode("utf-8", "surrogatepass")


def signing_bytes(entry: Entry) -> bytes:
    return SIGN_CONTEXT + canonical(entry)


def entry_hash(entry: Entry) -> str:
    """What the author's next entry names as ``prev``: sha256 of the canonical bytes and signature."""
    return hash_canonical(canonical(entry), entry.sig)


def hash_canonical(canonical_bytes: bytes, sig: str) -> str:
    """``entry_hash`` from canonical bytes already computed (the write path signs them too)."""
    # (a signature nexus wrote is base64, so ASCII; a damaged one may hold any character, and hashing
    # it must never raise: the entry is reported, the log goes on)
    return hashlib.sha256(canonical_bytes + b"\n" + sig.encode("utf-8", "surrogatepass")).hexdigest()


# ---------------------------------------------------------------- render


def escape_body_line(line: str) -> str:
    return "\\" + line if _LOOKS_LIKE_FRAME.match(line) else line


def unescape_body_line(line: str) -> str:
    return line[1:] if line.startswith("\\") and _LOOKS_LIKE_FRAME.match(line) else line


def header_line(entry: Entry) -> str:
    date, clock = entry.ts[:10], entry.ts[11:19]
    return (
        f"**{date} {clock}Z** · {entry.agent} · {entry.channel} · {entry.type} — {entry.summary} ^{entry.id}"
    )


def end_line(entry: Entry) -> str:
    e = entry
    if e.seq.__class__ is int and isinstance(e.ack, tuple | list):  # (as ``canonical_fields``)
        try:
            via = "" if e.via is None else ',"via":' + _ASCII(e.via)
            return (
                f'{END_PREFIX}{{"ack":[{",".join(map(_ASCII, e.ack))}],"id":{_ASCII(e.id)},'
                f'"key":{_ASCII(e.key)},"prev":{"null" if e.prev is None else _ASCII(e.prev)},'
                f'"seen":{"null" if e.seen is None else _ASCII(e.seen)},"seq":{e.seq!r},'
                f'"sig":{_ASCII(e.sig)},"v":{FORMAT_VERSION}{via}}} %%'
            )
        except TypeError:
            pass
    meta: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "id": entry.id,
        "ack": list(entry.ack),
        "seen": entry.seen,
        "seq": entry.seq,
        "prev": entry.prev,
        "key": entry.key,
        "sig": entry.sig,
    }
    if entry.via is not None:
        meta["via"] = entry.via
    return END_PREFIX + _END_JSON(meta) + " %%"


def render(entry: Entry) -> str:
    """The entry's text in a segment, ending with the blank separator line."""
    lines = [f"{BEGIN_PREFIX}{entry.id} %%", header_line(entry), ""]
    if entry.body is not None:
        lines.extend(escape_body_line(line) for line in entry.body.split("\n"))
    # Without a body the blank line still comes before the end line: Obsidian takes a block id only at
    # the end of its paragraph, and the end line right under the header would join the header's
    # paragraph, so [[log/…#^ID]] would not land (entries written before this have no blank line:
    # they read the same).
    lines.append(end_line(entry))
    return "\n".join(lines) + "\n\n"


# ---------------------------------------------------------------- parse


class FrameError(ValueError):
    """An entry's framing is broken; ``line`` is 0-based within the entry's lines."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


def parse_lines(lines: list[str]) -> Entry:
    """Parse one entry from its lines (begin line to end line, without the separator)."""
    return _parse(lines)[0]


def parse_checked(lines: list[str]) -> tuple[Entry, str | None]:
    """``parse_lines`` and ``canonical_flaw`` together: an end line read by ``_END_PLAIN`` is the very
    line ``end_line`` writes for the entry, so it is not written again to be compared."""
    entry, plain = _parse(lines)
    return entry, canonical_flaw(lines, entry, end_checked=plain)


def _parse(lines: list[str]) -> tuple[Entry, bool]:
    begin, header, plain, meta = _framing(lines)
    entry_id = begin.group("id")
    if plain is not None:  # (every field of the right type already: built as it is)
        ack, end_id, key, prev, seen, seq, sig, via = plain.groups()
        date, clock, agent, channel, kind, summary = header.group(
            "date", "time", "agent", "channel", "type", "summary"
        )
        acks = tuple(_ACK_ITEM.findall(ack)) if ack else ()
        body = _body(lines[2:-1])
        entry = Entry(
            entry_id,
            f"{date}T{clock}Z",
            agent,
            channel,
            kind,
            summary,
            body,
            acks,
            seen,
            int(seq),
            prev,
            key,
            sig,
            via,
        )
    else:
        entry = _entry(entry_id, header, meta, _body(lines[2:-1]), len(lines) - 1)
        end_id = meta.get("id")
    if end_id != entry_id or header.group("bid") != entry_id:
        raise FrameError("the ids of the begin line, header and end line differ", 1)
    return entry, plain is not None


# An end line exactly as ``end_line`` writes it when every string field is printable ASCII without a
# quote or a backslash (always, for what nexus writes: ids, hex key ids, base64): the same keys in the
# same order, no spaces, no escapes, ``seq`` as ``repr`` writes it. Reading it with this costs a third
# of ``json.loads``; any other end line is read by ``json.loads`` (tests/test_canonical_encoding.py).
_PLAIN = r"[ !#-\[\]-~]*"
_END_PLAIN = re.compile(
    rf'%% nexus:end \{{"ack":\[((?:"{_PLAIN}"(?:,"{_PLAIN}")*)?)\],"id":"({_PLAIN})","key":"({_PLAIN})",'
    rf'"prev":(?:null|"({_PLAIN})"),"seen":(?:null|"({_PLAIN})"),"seq":(0|-?[1-9][0-9]*),'
    rf'"sig":"({_PLAIN})","v":{FORMAT_VERSION}(?:,"via":"({_PLAIN})")?\}} %%'
)
_ACK_ITEM = re.compile(r'"([^"]*)"')


def _framing(
    lines: list[str],
) -> tuple[re.Match[str], re.Match[str], re.Match[str] | None, dict[str, Any]]:
    """The begin line's and header's matches, then ``_END_PLAIN``'s match of the end line, or the end
    line's metadata read by ``json.loads``; FrameError if broken."""
    if len(lines) < 3:
        raise FrameError("entry is cut short", len(lines))
    begin = BEGIN_RE.fullmatch(lines[0])
    if not begin:
        raise FrameError("bad begin line", 0)
    header = HEADER_RE.fullmatch(lines[1])
    if not header:
        raise FrameError("bad header line", 1)
    plain = _END_PLAIN.fullmatch(lines[-1])
    if plain is not None:
        return begin, header, plain, {}
    end = END_RE.fullmatch(lines[-1])
    if not end:
        raise FrameError("bad end line", len(lines) - 1)
    try:
        meta = json.loads(end.group("json"))
    except json.JSONDecodeError as err:
        raise FrameError(f"end line is not valid JSON: {err.msg}", len(lines) - 1) from None
    if not isinstance(meta, dict):
        raise FrameError("end line metadata is not an object", len(lines) - 1)
    return begin, header, None, meta


def _body(body_lines: list[str]) -> str | None:
    """The body from the lines between the header and the end line (None: no body)."""
    if not body_lines or body_lines == [""]:  # no body: the end line under the header, or a blank between
        return None
    if body_lines[0] != "":
        raise FrameError("missing blank line after the header", 2)
    text = "\n".join(body_lines[1:])
    if _plain(text):
        return text
    return "\n".join(unescape_body_line(line) for line in body_lines[1:])


def _plain(text: str) -> bool:
    """No line of ``text`` looks like framing, so none is escaped: each of ``_LOOKS_LIKE_FRAME``'s two
    forms holds one of these strings. Two scans of the text instead of two calls a line: parsing an
    entry with a 40-line body costs ~8 µs instead of ~20 (every reader and a full verify parse every
    body they read)."""
    return "nexus:" not in text and "Z** · " not in text


def _entry(entry_id: str, header: re.Match[str], meta: dict[str, Any], body: str | None, end: int) -> Entry:
    """The entry from its parts; FrameError (on end line ``end``) for a missing or bad field."""
    try:
        ack = meta["ack"]
        if not isinstance(ack, list) or not all(isinstance(a, str) for a in ack):
            raise TypeError("ack")
        seq = meta["seq"]
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise TypeError("seq")
        date, clock, agent, channel, kind, summary = header.group(
            "date", "time", "agent", "channel", "type", "summary"
        )
        return Entry(
            id=entry_id,
            ts=f"{date}T{clock}Z",
            agent=agent,
            channel=channel,
            type=kind,
            summary=summary,
            body=body,
            ack=tuple(ack),
            seen=_opt_str(meta.get("seen")),
            seq=seq,
            prev=_opt_str(meta.get("prev")),
            key=str(meta["key"]),
            sig=str(meta["sig"]),
            via=_opt_str(meta.get("via")),
        )
    except (KeyError, TypeError) as err:
        raise FrameError(f"end line metadata is missing or has a bad field: {err}", end) from None


def _opt_str(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def canonical_flaw(lines: list[str], entry: Entry, *, end_checked: bool = False) -> str | None:
    """Why ``lines`` (an entry's lines as read, line endings removed) are not exactly what nexus writes
    for ``entry``, or None when they are. Only the canonical encoding verifies: an end line with an
    extra or renamed field, other spacing or key order, escapes where nexus writes none (or none
    where it writes one) all read as the same entry, so each is a change its signature cannot see.
    ``end_checked``: the end line is known to be ``end_line(entry)`` (``parse_checked``)."""
    if lines[1] != header_line(entry):
        return "the header line is not in canonical form"
    if not end_checked and lines[-1] != end_line(entry):
        return "the end line is not in canonical form (fields, order, spacing or escapes differ)"
    body = lines[3:-1]
    if body and not _plain("\n".join(body)):  # (a line that looks like framing in neither form is
        for line in body:  # left as it is by both functions)
            if escape_body_line(unescape_body_line(line)) != line:
                return "a body line is escaped otherwise than nexus escapes it"
    return None


def unsigned(entry: Entry) -> Entry:
    return replace(entry, sig="")
