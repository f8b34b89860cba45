"""Scanning a log segment's bytes into entries, stray text, broken framing and a torn tail.

A scan never raises on bad bytes: whatever it cannot read becomes a finding, so a reader survives any
truncation or hand edit. It is pure (bytes in, findings out); callers do the I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..records import Located
from . import entries
from .entries import BEGIN_PREFIX, BEGIN_RE, HEADER_RE, FrameError, ends_entry, starts_entry

SEGMENT_MARKER_PREFIX = "%% nexus:segment "


def preamble(segment: str) -> str:
    """The text a new segment file starts with."""
    return (
        "---\n"
        f'segment: "{segment}"\n'
        "tags:\n  - nexus/log\n"
        "---\n"
        f"# Live context — {segment}\n\n"
        "> [!info] Append-only, signed by its authors\n"
        "> Agents append here with `nexus log append`; never edit an entry. A person may write a note\n"
        "> at the very end of this file, below the last entry: `nexus watch` signs it as an entry of\n"
        "> the vault's human identity. Format: [[NEXUS-FORMAT]].\n\n"
        f"{SEGMENT_MARKER_PREFIX}{segment} %%\n\n"
    )


@dataclass(frozen=True)
class Stray:
    """Lines outside any entry (a person's text, or damage)."""

    line_start: int
    line_end: int
    offset: int
    end_offset: int
    text: str


@dataclass(frozen=True)
class Broken:
    """An entry whose framing or fields cannot be read."""

    line: int
    offset: int
    end_offset: int
    message: str
    entry_id: str | None
    text: str


@dataclass(frozen=True)
class Torn:
    """Incomplete bytes at the end of a segment (a writer died mid-write, or a writer is mid-write)."""

    offset: int
    line: int
    size: int


@dataclass
class Scan:
    """What scanning segment bytes found: entries, stray and broken text, a torn tail, where content ends."""

    entries: list[Located] = field(default_factory=list)
    stray: list[Stray] = field(default_factory=list)
    broken: list[Broken] = field(default_factory=list)
    torn: Torn | None = None
    end_offset: int = 0  # where complete content ends (the start of a torn tail, or the data's end)
    end_line: int = 1  # the 1-based number of the line that starts at end_offset


def scan(data: bytes, file: str, *, offset: int = 0, line: int = 1, tail: bool = True) -> Scan:
    """Scan ``data``, the bytes of segment ``file`` from byte ``offset`` (which starts line ``line``).
    ``tail``: ``data`` may end the segment, so garbage after its last entry is a torn tail (False: a
    piece cut from inside it, where such bytes are damaged text as anywhere else).

    When ``offset`` is 0 everything before the segment marker line (or the first entry) is preamble.

    Entries exactly as nexus writes them (a begin line, lines none of which begins another entry, the
    end line, one empty line) are cut out a whole entry at a time (:func:`_regular`); from the first
    byte that is anything else (a person's text, damage, a torn tail, a CR, invalid UTF-8) the rest
    is read line by line (:func:`scan_lines`, the reference: the same findings either way, a property
    test checks it). A full verification reads every entry this way: ~40% less CPU than line by line.
    """
    start = 0
    if offset == 0:
        start = _preamble_end(data)
        if start < 0:  # (no marker line and no entry: the whole thing is read line by line)
            return scan_lines(data, file, offset=offset, line=line, tail=tail)
        line += data.count(b"\n", 0, start)
    result = Scan(end_offset=offset + start, end_line=line)
    pos, line = _regular(result, data, start, offset, line, file)
    if pos == len(data):
        result.end_offset, result.end_line = offset + pos, line
        return result
    rest = scan_lines(
        data[pos:] if pos else data, file, offset=offset + pos, line=line, preamble=False, tail=tail
    )
    if not result.entries and not result.broken:
        return rest
    result.entries += rest.entries
    result.broken += rest.broken  # (an entry cut out whole whose fields cannot be read is broken)
    result.stray, result.torn = rest.stray, rest.torn
    result.end_offset, result.end_line = rest.end_offset, rest.end_line
    return result


_BEGIN_B = BEGIN_PREFIX.encode()
_NL_BEGIN = b"\n" + _BEGIN_B
_NL_END = b"\n" + entries.END_PREFIX.encode()
_NL_END_V2 = b"\n" + entries.END_V2_PREFIX.encode()
_MARKER_B = SEGMENT_MARKER_PREFIX.encode()


def _preamble_end(data: bytes) -> int:
    """Where entries may start in a segment read from its start (as ``_after_preamble``): after the
    first line that starts with the segment marker, or at the first line that begins an entry; -1
    when there is neither."""
    pos = 0
    size = len(data)
    while pos < size:
        nl = data.find(b"\n", pos)
        if nl < 0:
            return -1  # (the last line has no newline: never a marker or an entry here)
        if data.startswith(_MARKER_B, pos):
            return nl + 1
        if data.startswith(_BEGIN_B, pos) or _header_at(data, pos, nl):
            return pos
        pos = nl + 1
    return -1


def _header_at(data: bytes, pos: int, nl: int) -> bool:
    """The line ``data[pos:nl]`` is a format 2 header line (it opens an entry)."""
    if data[pos : pos + 2] != b"**":
        return False
    try:
        return HEADER_RE.fullmatch(data[pos:nl].decode("utf-8").removesuffix("\r")) is not None
    except UnicodeDecodeError:
        return False


def _regular(result: Scan, data: bytes, pos: int, offset: int, line: int, file: str) -> tuple[int, int]:
    """Take entries written exactly as nexus writes them from ``pos`` on, each followed by empty lines;
    return where the first thing that is not one starts (a line start) and its line number."""
    size = len(data)
    find, startswith, begin_re = data.find, data.startswith, BEGIN_RE.fullmatch
    while pos < size:
        if data[pos] == 10:  # an empty line between entries
            pos, line = pos + 1, line + 1
            continue
        v1 = startswith(_BEGIN_B, pos)
        if not v1 and not startswith(b"**", pos):
            break
        end = find(_NL_END if v1 else _NL_END_V2, pos)
        if end < 0:
            break
        eol = find(b"\n", end + 1)
        if eol < 0 or find(_NL_BEGIN, pos, eol) >= 0 or find(b"\r", pos, eol) >= 0:
            break  # (cut short, another begin line inside, or a CR: read line by line)
        try:
            lines = data[pos:eol].decode("utf-8").split("\n")
        except UnicodeDecodeError:
            break
        if v1:
            if begin_re(lines[0]) is None:
                break
        elif HEADER_RE.fullmatch(lines[0]) is None or (
            find(b"\n**", pos, end) >= 0
            and any(line.startswith("**") and HEADER_RE.fullmatch(line) for line in lines[1:])
        ):
            break  # (not a header, or another entry's header inside: read line by line)
        last = line + len(lines) - 1
        _finish(result, lines, (offset + pos, line), offset + eol + 1, last, file)
        pos, line = eol + 1, last + 1
    return pos, line


def scan_lines(
    data: bytes, file: str, *, offset: int = 0, line: int = 1, preamble: bool = True, tail: bool = True
) -> Scan:
    """``scan``, line by line: the reference, and what reads whatever is not a regular entry.
    ``preamble``: when ``offset`` is 0, skip the preamble first."""
    result = Scan(end_offset=offset, end_line=line)
    raw_lines = data.split(b"\n")
    partial = raw_lines.pop()  # bytes after the last newline (b"" when data ends with one)
    first, pos, line_no = (
        _after_preamble(raw_lines, offset, line) if offset == 0 and preamble else (0, offset, line)
    )
    reader = _Reader(result, file)
    for raw in raw_lines[first:]:
        next_pos = pos + len(raw) + 1
        # Invalid UTF-8 becomes U+FFFD: the entry's signature then fails and verify names it.
        # A CR before the LF (an editor saved the file with CRLF endings) is not part of the line:
        # nexus never writes a CR (bodies show one as ⟦U+000D⟧), so dropping it loses nothing.
        text = raw.decode("utf-8", errors="replace")
        if text.endswith("\r"):
            text = text[:-1]
        reader.line(text, pos, next_pos, line_no)
        pos, line_no = next_pos, line_no + 1
    reader.end(partial, pos, line_no, offset + len(data))
    if result.torn is None and tail:
        _garbage_tail(result, data, offset, line)
    return result


def _after_preamble(raw_lines: list[bytes], offset: int, line: int) -> tuple[int, int, int]:
    """Where entries may start in a segment read from its start: (index of the first line after
    the segment marker line, or of the first begin line; its offset; its line number)."""
    marker, begin = SEGMENT_MARKER_PREFIX.encode(), BEGIN_PREFIX.encode()
    pos = offset
    for i, raw in enumerate(raw_lines):
        if raw.startswith(marker):
            return i + 1, pos + len(raw) + 1, line + i + 1
        if raw.startswith(begin) or _header_at(raw, 0, len(raw)):
            return i, pos, line + i
        pos += len(raw) + 1
    return len(raw_lines), pos, line + len(raw_lines)


class _Reader:
    """Reads a segment's lines one at a time into a :class:`Scan`: entries, stray runs, broken ones."""

    def __init__(self, result: Scan, file: str) -> None:
        self.result = result
        self.file = file
        self.cur: list[str] | None = None  # lines of the entry being read
        self.cur_start = (0, 0)  # (offset, line)
        self.stray: list[tuple[int, int, str]] = []  # (offset, line, text) of consecutive stray lines

    def flush_stray(self, end_offset: int) -> None:
        stray = self.stray
        if stray:
            text = "\n".join(s[2] for s in stray)
            self.result.stray.append(Stray(stray[0][1], stray[-1][1], stray[0][0], end_offset, text))
            stray.clear()

    def line(self, text: str, pos: int, next_pos: int, line_no: int) -> None:
        cur = self.cur
        if cur is None:
            if starts_entry(text):
                self.flush_stray(pos)
                self.cur, self.cur_start = [text], (pos, line_no)
            elif text.strip() == "":
                self.flush_stray(pos)
            else:
                self.stray.append((pos, line_no, text))
        elif text.startswith(BEGIN_PREFIX) or (
            text.startswith("**")
            and not cur[0].startswith(BEGIN_PREFIX)
            and HEADER_RE.fullmatch(text) is not None
        ):
            # a new entry starts before the previous one ended (in a format 2 entry, a header line
            # opens the next entry: its body escapes lookalikes)
            _broken(self.result, cur, self.cur_start, pos, "entry has no end line")
            self.cur, self.cur_start = [text], (pos, line_no)
        else:
            cur.append(text)
            if ends_entry(cur[0], text):
                _finish(self.result, cur, self.cur_start, next_pos, line_no, self.file)
                self.cur = None

    def end(self, partial: bytes, pos: int, line_no: int, size_end: int) -> None:
        """After the last complete line: an open entry or framing cut short is a torn tail; a person's
        text without a final newline is stray text, reported but not consumed."""
        result = self.result
        if self.cur is not None:
            start = self.cur_start
            result.torn = Torn(start[0], start[1], size_end - start[0])
            result.end_offset, result.end_line = start
            self.stray.clear()
            return
        if partial and (
            partial.startswith(b"%")
            or _header_start(partial)
            or (self.stray and self.stray[-1][2].startswith("%%"))
        ):
            result.torn = Torn(pos, line_no, len(partial))  # (the start of framing: a writer's torn write)
            self.flush_stray(pos)
        elif partial:
            self.stray.append((pos, line_no, partial.decode("utf-8", errors="replace")))
            self.flush_stray(pos + len(partial))
        else:
            self.flush_stray(pos)
        result.end_offset, result.end_line = pos, line_no


# The start of a format 2 header line: what a writer that died in its first line leaves (``9``: a digit).
_HEADER_TEMPLATE = "**9999-99-99 99:99:99Z** · ".encode()


def _header_start(partial: bytes) -> bool:
    """Whether ``partial`` (bytes after the last newline) is a format 2 header line cut short."""
    for i, b in enumerate(partial[: len(_HEADER_TEMPLATE)]):
        want = _HEADER_TEMPLATE[i]
        if not (48 <= b <= 57 if want == 57 else b == want):
            return False
    return True


def _unprintable(raw: bytes) -> bool:
    """Bytes no person types: NUL and other control characters (tab, CR aside), invalid UTF-8."""
    if any((b < 32 and b not in (9, 13)) or b == 127 for b in raw):
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _garbage_tail(result: Scan, data: bytes, offset: int, line: int) -> None:
    """Zero-filled or garbage bytes after the last entry (what a crash leaves on some filesystems)
    are a torn tail, from the first line that holds them to the end: never a person's text."""
    last_end = max(
        [loc.end_offset for loc in result.entries] + [b.end_offset for b in result.broken] + [offset]
    )
    trailing = [s for s in result.stray if s.offset >= last_end]
    if not trailing:
        return
    pos = trailing[0].offset
    rel = pos - offset
    while rel < len(data):
        nl = data.find(b"\n", rel)
        stop = len(data) if nl < 0 else nl
        if _unprintable(data[rel:stop]):
            start = offset + rel
            at_line = line + data.count(b"\n", 0, rel)
            kept: list[Stray] = []
            for s in result.stray:
                if s.offset >= start:
                    continue
                if s.end_offset > start:  # a run whose later lines are the garbage: keep its start
                    n = data.count(b"\n", s.offset - offset, start - offset)
                    s = Stray(
                        s.line_start,
                        s.line_start + max(0, n - 1),
                        s.offset,
                        start,
                        "\n".join(s.text.split("\n")[:n]),
                    )
                kept.append(s)
            result.stray = kept
            result.torn = Torn(start, at_line, offset + len(data) - start)
            result.end_offset, result.end_line = start, at_line
            return
        rel = stop + 1


def _finish(
    result: Scan, lines: list[str], start: tuple[int, int], end: int, last_line: int, file: str
) -> None:
    try:
        entry, flaw = entries.parse_checked(lines)
    except FrameError as err:
        _broken(result, lines, start, end, str(err))
        return
    result.entries.append(
        Located(
            entry,
            file,
            start[1],
            last_line,
            start[0],
            end,
            None if flaw is None else f"non-canonical: {flaw}",
        )
    )


def _broken(result: Scan, lines: list[str], start: tuple[int, int], end: int, message: str) -> None:
    result.broken.append(
        Broken(start[1], start[0], end, message, entry_id_of(lines[0]) if lines else None, "\n".join(lines))
    )


def entry_id_of(first: str) -> str | None:
    """The id an entry's first line names (a format 1 begin line, a format 2 header), or None."""
    match = BEGIN_RE.fullmatch(first)
    if match is not None:
        return match.group("id")
    header = HEADER_RE.fullmatch(first)
    if header is not None and entries.ID_RE.fullmatch(header.group("bid")):
        return header.group("bid")
    return None


# ------------------------------------------------------------------ entry boundaries in raw bytes
#
# Readers that seek in a segment without scanning all of it (a mark's check, the last entries, a
# parallel verify's or index build's cuts, a merge) find entries with these, for both formats.

_END_LINE_B = re.compile(
    rb"^(?:%% nexus:end [^\n]*|%%[ ws][0-9]+ [A-Za-z0-9_-]{86}(?:[A-Za-z0-9_-]{21})? %%\r?)$", re.M
)
_OPENING_B = re.compile(
    rb"^(?:%% nexus:begin ([0-9A-HJKMNP-TV-Z]{26}) %%|\*\*\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\*\* \xc2\xb7 "
    rb"[^\n]* \^([0-9A-HJKMNP-TV-Z]{26}))\r?$",
    re.M,
)


def next_cut(data: bytes, start: int = 0) -> int:
    """The index of the newline that ends the first end line (either format) starting at or after
    ``start``: an entry boundary follows it. -1 when there is none."""
    for m in _END_LINE_B.finditer(data, start):
        if m.end() < len(data):
            return m.end()
    return -1


def last_cut(data: bytes) -> int:
    """As :func:`next_cut`, the last one."""
    stop = len(data)
    while True:
        j = data.rfind(b"\n%%", 0, stop)
        if j < 0:
            return -1
        eol = data.find(b"\n", j + 1)
        if eol >= 0 and _END_LINE_B.fullmatch(data, j + 1, eol):
            return eol
        stop = j


def count_ends(data: bytes, start: int = 0) -> int:
    """How many end lines (either format) start at or after ``start``."""
    return sum(1 for _ in _END_LINE_B.finditer(data, start))


def openings(data: bytes) -> list[tuple[int, str]]:
    """(offset, id) of every line that opens an entry: a format 1 begin line, or a format 2 header
    line (not the header under a begin line), in file order."""
    out: list[tuple[int, str]] = []
    last_v1 = (-2, "")
    for m in _OPENING_B.finditer(data):
        v1, v2 = m.group(1), m.group(2)
        if v1 is not None:
            last_v1 = (m.end(), v1.decode("ascii"))
            out.append((m.start(), last_v1[1]))
            continue
        entry_id = v2.decode("ascii")
        if last_v1[1] == entry_id and data[last_v1[0] : m.start()].strip(b"\r\n") == b"":
            continue  # (a format 1 entry's header)
        if _header_at(data, m.start(), m.end()):
            out.append((m.start(), entry_id))
    return out


def entry_starts(data: bytes, entry_id: str) -> list[int]:
    """Offsets of the lines that open entry ``entry_id`` (either format)."""
    out: list[int] = []
    v1 = f"{BEGIN_PREFIX}{entry_id} %%".encode()
    i = data.find(v1)
    while i >= 0:
        if i == 0 or data[i - 1 : i] == b"\n":
            out.append(i)
        i = data.find(v1, i + 1)
    v2 = f" ^{entry_id}".encode()
    i = data.find(v2)
    while i >= 0:
        e = i + len(v2)
        if e == len(data) or data[e : e + 1] in (b"\n", b"\r"):
            s = data.rfind(b"\n", 0, i) + 1
            before = data[max(0, s - len(v1) - 3) : s].rstrip(b"\r\n")
            if data[s : s + 2] == b"**" and not before.endswith(v1) and _header_at(data, s, e):
                out.append(s)
        i = data.find(v2, i + 1)
    return sorted(out)


def entry_end(data: bytes, start: int) -> int:
    """The index of the newline ending the end line of the entry that opens at ``start``, or -1."""
    v1 = data[start : start + len(_BEGIN_B)] == _BEGIN_B
    at = data.find(_NL_END if v1 else _NL_END_V2, start)
    return data.find(b"\n", at + 1) if at >= 0 else -1


def ends_with_entry(data: bytes, entry_id: str) -> bool:
    """``data`` (bytes that end where a mark stands, line breaks after it aside) ends with the end line
    of entry ``entry_id`` (format 1: the id is in it; format 2: the entry's header is the last line
    opening an entry above it, with no other end line between)."""
    if not data.endswith(b"\n"):
        return False
    body = data.rstrip(b"\r\n")
    start = body.rfind(b"\n") + 1
    end_line = body[start:]
    if end_line.startswith(_NL_END[1:]):
        return f'"id":"{entry_id}"'.encode() in end_line
    if _END_LINE_B.fullmatch(end_line) is None:
        return False
    starts = entry_starts(body, entry_id)
    if not starts or body[starts[-1] : starts[-1] + 2] != b"**":
        return False
    return body.find(b"\n%%", starts[-1], start - 1) < 0 and not any(
        s > 0 for s, _ in openings(body[starts[-1] :])
    )
