"""The on-disk form of a live-context entry: render, parse, canonical bytes, ids.

An entry in a segment file (``log/YYYY-MM.md``) is written in format 2::

    **2026-11-30 04:41:07Z** · ella · build · note — Set up the CI pipeline ^01JDQ8Z6V3M2K4T5N7P9R1S3W5

    The body, verbatim, Markdown allowed.
    ↩ [[log/2026-11#^01JDQ7…]] · [[log/2026-11#^01JDQ5…]]
    %% 12 <signature and seen id: 107 base64url characters> %%
    <blank line>

The header line opens the entry; its block id makes it linkable as ``[[log/2026-11#^ID]]``. The
entries it acknowledges are links on the line before the end (``↩``); the one machine comment holds
the author's sequence number and, in one base64url token, the Ed25519 signature (64 bytes) and the
id of the newest entry the author had read (16 bytes, when there is one): at most 120 characters for
any seq up to 999,999. The signing key is not stored (the reader tries the author's trusted keys), nor
the previous entry's hash.

Format 1, which nexus wrote before and still reads, puts ``%% nexus:begin ID %%`` before the header and
``%% nexus:end {json} %%`` (id, key, prev, seen, seq, sig, acks) after the body. A segment may hold
both, format 1 entries first. A body line that could be mistaken for framing gets one extra leading
backslash on write and loses it on read (each format has its own rule, so a format 1 body reads
exactly as before), so every body round-trips byte for byte and never creates an entry.

This module does no I/O; see ``log.py`` for the write path.
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import json
import re
from dataclasses import replace
from typing import Any

from ..records import Entry
from . import machine_text
from .ids import ID_PATTERN as ID_PATTERN
from .ids import ID_RE as ID_RE
from .ids import decode_id_ms as decode_id_ms
from .ids import encode_id as encode_id
from .ids import new_id as new_id
from .ids import new_id_ms as new_id_ms
from .ids import segment_name as segment_name
from .ids import utc_ts as utc_ts
from .machine_text import ACK_RE
from .machine_text import END_V2_PREFIX as END_V2_PREFIX
from .machine_text import END_V2_RE as END_V2_RE
from .machine_text import MAX_MACHINE_CHARS as MAX_MACHINE_CHARS
from .machine_text import ack_line as ack_line
from .machine_text import end_line_v2 as end_line_v2
from .machine_text import machine_token as machine_token

FORMAT_VERSION = 1  # format 1's end line says ``"v":1``
SIGN_CONTEXT = b"nexus/entry/v1\n"
WRITTEN_VERSION = 2  # what nexus writes
SIGN_CONTEXT_V2 = b"nexus/entry/v2\n"

BEGIN_PREFIX = "%% nexus:begin "
END_PREFIX = "%% nexus:end "
FRAME_PREFIX = "%% nexus:"
BEGIN_RE = re.compile(rf"%% nexus:begin (?P<id>{ID_PATTERN}) %%")
END_RE = re.compile(r"%% nexus:end (?P<json>\{.*\}) %%")
HEADER_RE = re.compile(
    r"\*\*(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)Z\*\* · (?P<agent>[a-z0-9-]+) · "
    r"(?P<channel>[a-z0-9-]+) · (?P<type>[a-z0-9-]+) — (?P<summary>.*) \^(?P<bid>[A-Za-z0-9-]+)"
)
# Anything a parser could take for framing: escaped in bodies (format 1).
_LOOKS_LIKE_FRAME = re.compile(r"\\*(?:%%\s*nexus:|\*\*\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\*\* · )")
# Format 2: any line starting with ``%%`` (an end line ends the entry), a header (a header opens one),
# or the acknowledgements' ``↩ `` (the line before the end).
_LOOKS_LIKE_FRAME_V2 = re.compile(r"\\*(?:%%|\*\*\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\*\* · |↩ )")


# ---------------------------------------------------------------- canonical form


# One encoder each, built once (``json.dumps`` with arguments builds a new encoder on every call).
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
_END_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_STR = json.encoder.encode_basestring  # (what those encoders write for a string: C functions)
_ASCII = json.encoder.encode_basestring_ascii


def canonical(entry: Entry) -> bytes:
    """The bytes an entry's signature covers: every field but ``sig``, as sorted compact JSON (format
    2: without ``key`` and ``prev``, which it does not store)."""
    if entry.v != FORMAT_VERSION:
        return canonical_v2(**_signed_fields(entry))
    return canonical_fields(**_signed_fields(entry), prev=entry.prev, key=entry.key)


def _signed_fields(entry: Entry) -> dict[str, Any]:
    """The fields both formats sign, as keyword arguments."""
    return {
        "id": entry.id,
        "ts": entry.ts,
        "agent": entry.agent,
        "channel": entry.channel,
        "type": entry.type,
        "summary": entry.summary,
        "body": entry.body,
        "ack": entry.ack,
        "seen": entry.seen,
        "seq": entry.seq,
        "via": entry.via,
    }


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


def canonical_v2(
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
    via: str | None,
) -> bytes:
    """Format 2's canonical bytes: ``{v, id, ts, agent, channel, type, summary, body, ack, seen, seq,
    via}`` as sorted compact JSON, UTF-8 (what the signature covers after ``nexus/entry/v2\n``)."""
    if seq.__class__ is int and isinstance(ack, tuple | list):  # (written out, as canonical_fields)
        try:
            text = (
                f'{{"ack":[{",".join(map(_STR, ack))}],"agent":{_STR(agent)},'
                f'"body":{"null" if body is None else _STR(body)},"channel":{_STR(channel)},'
                f'"id":{_STR(id)},"seen":{"null" if seen is None else _STR(seen)},"seq":{seq!r},'
                f'"summary":{_STR(summary)},"ts":{_STR(ts)},"type":{_STR(type)},'
                f'"v":2,"via":{"null" if via is None else _STR(via)}}}'
            )
            return text.encode("utf-8", "surrogatepass")
        except TypeError:
            pass
    data: dict[str, Any] = {
        "v": 2,
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
        "via": via,
    }
    return _CANONICAL_JSON(data).encode("utf-8", "surrogatepass")


def sign_context(entry: Entry) -> bytes:
    """What the signature covers before the canonical bytes: the format's signing context."""
    return SIGN_CONTEXT if entry.v == FORMAT_VERSION else SIGN_CONTEXT_V2


def signing_bytes(entry: Entry) -> bytes:
    return sign_context(entry) + canonical(entry)


def entry_hash(entry: Entry) -> str:
    """What the author's next entry names as ``prev``: sha256 of the canonical bytes and signature."""
    return hash_canonical(canonical(entry), entry.sig)


def hash_canonical(canonical_bytes: bytes, sig: str) -> str:
    """``entry_hash`` from canonical bytes already computed (the write path signs them too)."""
    # (a signature nexus wrote is base64, so ASCII; a damaged one may hold any character, and hashing
    # it must never raise: the entry is reported, the log goes on)
    return hashlib.sha256(canonical_bytes + b"\n" + sig.encode("utf-8", "surrogatepass")).hexdigest()


# ---------------------------------------------------------------- render


def escape_body_line(line: str, v: int = FORMAT_VERSION) -> str:
    pattern = _LOOKS_LIKE_FRAME if v == FORMAT_VERSION else _LOOKS_LIKE_FRAME_V2
    return "\\" + line if pattern.match(line) else line


def unescape_body_line(line: str, v: int = FORMAT_VERSION) -> str:
    pattern = _LOOKS_LIKE_FRAME if v == FORMAT_VERSION else _LOOKS_LIKE_FRAME_V2
    return line[1:] if line.startswith("\\") and pattern.match(line) else line


def header_line(entry: Entry) -> str:
    date, clock = entry.ts[:10], entry.ts[11:19]
    return (
        f"**{date} {clock}Z** · {entry.agent} · {entry.channel} · {entry.type} — {entry.summary} ^{entry.id}"
    )


def end_line(entry: Entry) -> str:
    e = entry
    if e.v != FORMAT_VERSION:
        return end_line_v2(e)
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
    if entry.v != FORMAT_VERSION:
        lines = [header_line(entry), ""]
        if entry.body is not None:
            lines.extend(escape_body_line(line, 2) for line in entry.body.split("\n"))
        if entry.ack:
            lines.append(ack_line(entry.ack))
        lines.append(end_line_v2(entry))
        return "\n".join(lines) + "\n\n"
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
    """``parse_lines`` and ``canonical_flaw`` together: an end line read by ``_end_plain`` is the very
    line ``end_line`` writes for the entry, so it is not written again to be compared."""
    entry, plain = _parse(lines)
    return entry, canonical_flaw(lines, entry, end_checked=plain)


def _parse(lines: list[str]) -> tuple[Entry, bool]:
    if lines and not lines[0].startswith(BEGIN_PREFIX):
        return _parse_v2(lines)
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


def _parse_v2(lines: list[str]) -> tuple[Entry, bool]:
    """A format 2 entry from its lines (header line to end line), and whether its end line is the very
    one ``end_line_v2`` writes for it (seq without leading zeros, the token's unused bits zero)."""
    if len(lines) < 3:
        raise FrameError("entry is cut short", len(lines))
    header = HEADER_RE.fullmatch(lines[0])
    if not header or not ID_RE.fullmatch(header.group("bid")):
        raise FrameError("bad header line", 0)
    end = END_V2_RE.fullmatch(lines[-1])
    if not end:
        raise FrameError("bad end line", len(lines) - 1)
    if lines[1] != "":
        raise FrameError("missing blank line after the header", 1)
    middle = lines[2:-1]
    ack: tuple[str, ...] = ()
    if middle and middle[-1].startswith("↩ ") and ACK_RE.fullmatch(middle[-1]):
        ack = machine_text.acks(middle.pop())
    body = "\n".join([unescape_body_line(line, 2) for line in middle]) if middle else None
    flag, seq, token = end.groups()
    try:
        sig, seen = machine_text.from_token(token)
    except (ValueError, binascii.Error) as err:
        raise FrameError(f"bad end line: {err}", len(lines) - 1) from None
    date, clock, agent, channel, kind, summary, bid = header.group(
        "date", "time", "agent", "channel", "type", "summary", "bid"
    )
    entry = Entry(
        bid,
        f"{date}T{clock}Z",
        agent,
        channel,
        kind,
        summary,
        body,
        ack,
        seen,
        int(seq),
        None,
        "",
        sig,
        machine_text.FLAG_VIA[flag],
        2,
    )
    return entry, machine_text.canonical_end(seq, token)


def starts_entry(line: str) -> bool:
    """Whether ``line`` (outside any entry) opens one: a format 1 begin line or a format 2 header."""
    return BEGIN_RE.fullmatch(line) is not None or (
        line.startswith("**") and HEADER_RE.fullmatch(line) is not None
    )


def ends_entry(first: str, line: str) -> bool:
    """Whether ``line`` ends the entry whose first line is ``first``: format 1's end line, or, in a
    format 2 entry, any line starting with ``%%`` (its body escapes every such line)."""
    return line.startswith(END_PREFIX if first.startswith(BEGIN_PREFIX) else END_V2_PREFIX)


# An end line exactly as ``end_line`` writes it when every string field is printable ASCII without a
# quote or a backslash (always, for what nexus writes: ids, hex key ids, base64): the same keys in the
# same order, no spaces, no escapes, ``seq`` as ``repr`` writes it. Reading it with this costs a third
# of ``json.loads``; any other end line is read by ``json.loads`` (tests/test_canonical_encoding.py).
# Compiled when a format-1 entry is first read (~0.6 ms), so a format-2 vault's readers never pay it.
_PLAIN = r"[ !#-\[\]-~]*"


@functools.cache
def _end_plain() -> re.Pattern[str]:
    return re.compile(
        rf'%% nexus:end \{{"ack":\[((?:"{_PLAIN}"(?:,"{_PLAIN}")*)?)\],"id":"({_PLAIN})","key":"({_PLAIN})",'
        rf'"prev":(?:null|"({_PLAIN})"),"seen":(?:null|"({_PLAIN})"),"seq":(0|-?[1-9][0-9]*),'
        rf'"sig":"({_PLAIN})","v":{FORMAT_VERSION}(?:,"via":"({_PLAIN})")?\}} %%'
    )


_ACK_ITEM = re.compile(r'"([^"]*)"')


def _framing(
    lines: list[str],
) -> tuple[re.Match[str], re.Match[str], re.Match[str] | None, dict[str, Any]]:
    """The begin line's and header's matches, then ``_end_plain``'s match of the end line, or the end
    line's metadata read by ``json.loads``; FrameError if broken."""
    if len(lines) < 3:
        raise FrameError("entry is cut short", len(lines))
    begin = BEGIN_RE.fullmatch(lines[0])
    if not begin:
        raise FrameError("bad begin line", 0)
    header = HEADER_RE.fullmatch(lines[1])
    if not header:
        raise FrameError("bad header line", 1)
    plain = _end_plain().fullmatch(lines[-1])
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
    if entry.v != FORMAT_VERSION:
        return _canonical_flaw_v2(lines, entry, end_checked)
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


def _canonical_flaw_v2(lines: list[str], entry: Entry, end_checked: bool) -> str | None:
    if lines[0] != header_line(entry):
        return "the header line is not in canonical form"
    if not end_checked:
        try:
            end = end_line_v2(entry)
        except ValueError:
            end = None
        if lines[-1] != end:
            return "the end line is not in canonical form (seq or token written otherwise)"
    last = len(lines) - 1
    if entry.ack:
        last -= 1
        if lines[last] != ack_line(entry.ack):
            return "the acknowledgements are not written as nexus writes them"
    for line in lines[2:last]:
        if escape_body_line(unescape_body_line(line, 2), 2) != line:
            return "a body line is escaped otherwise than nexus escapes it"
    return None


def unsigned(entry: Entry) -> Entry:
    return replace(entry, sig="")
