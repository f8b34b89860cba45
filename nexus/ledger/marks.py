"""Where an incremental reader stopped in a segment: one mark, one validity check, one way to read on.

Every reader that remembers how far it got in a log segment keeps a :class:`Mark`: the tail state
(``tail.json``), each agent's read cursor, the coordination state, the watcher's track of a segment
and the search manifest. A mark stands just after the end line of the last entry the reader took
(``last``), at byte ``offset``, which starts line ``line``; ``scanned`` is how many bytes of the
segment the reader had looked at when it took the mark (text after the last entry that is not an
entry yet, or nothing: ``scanned >= offset``).

A mark is *valid* for a segment's bytes now when the line ending at ``offset`` is still the end line
of entry ``last`` (:meth:`Mark.holds`): whatever was written before it is then taken as read, and
reading goes on from ``offset`` (:meth:`Mark.read`). Anything else (an editor rewrote the file, a
truncation, a person's text inserted before the mark) makes the mark invalid and its reader starts
again from the segment's start. A mark without a last entry is valid only at the start.

On disk a mark is the JSON list ``[offset, line, last, scanned]`` (:meth:`Mark.to_json`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..storage import segments

WINDOW = 8192  # bytes read back from a mark to find the end line it follows
CHUNK = 1 << 20  # what ``read_chunks`` scans at a time: about 2,000 entries (4 MB peaked 40 MB higher)


def ends_with_entry(data: bytes, entry_id: str) -> bool:
    """``data`` (bytes that end where a mark stands, line breaks after it aside) ends with the end line
    of entry ``entry_id``: the one search for "the entry that ends here" every reader uses."""
    return segments.ends_with_entry(data, entry_id)


@dataclass(frozen=True, slots=True)
class Mark:
    """Where a reader stopped in one segment (see the module docstring)."""

    offset: int = 0
    line: int = 1
    last: str | None = None
    scanned: int = 0

    # ---- the one validity check
    def holds(self, path: str | os.PathLike[str], upto: int | None = None) -> bool:
        """The mark is still valid for the segment at ``path``: the line ending at ``offset`` is the
        end line of entry ``last`` (a mark without one: ``offset`` is 0). With ``upto`` (a size the
        reader recorded past the mark), only line breaks may stand between ``offset`` and ``upto``.
        One read of at most ``WINDOW`` bytes before the mark."""
        if self.last is None:
            return self.offset == 0
        stop = self.offset if upto is None else upto
        if not 0 < self.offset <= stop:
            return False
        start = max(0, self.offset - WINDOW)
        try:
            with open(path, "rb") as f:
                f.seek(start)
                window = f.read(stop - start)
        except OSError:
            return False
        if len(window) != stop - start or window[self.offset - start :].strip(b"\r\n"):
            return False
        return ends_with_entry(window[: self.offset - start], self.last)

    def unchanged(self, size: int) -> bool:
        """The segment has the size it had when the mark was taken (nothing to read, if valid)."""
        return size == self.scanned

    # ---- the one way to read on
    def read(
        self, path: str | os.PathLike[str], file: str, size: int | None = None
    ) -> tuple[bytes, segments.Scan]:
        """The segment's bytes from the mark on (up to ``size``, default the end) and their scan;
        ``file`` is the segment's vault-relative path."""
        with open(path, "rb") as f:
            f.seek(self.offset)
            data = f.read() if size is None else f.read(max(0, size - self.offset))
        return data, segments.scan(data, file, offset=self.offset, line=self.line)

    def read_chunks(
        self, path: str | os.PathLike[str], file: str, size: int | None = None, chunk: int | None = None
    ) -> Iterator[segments.Scan]:
        """The scan of the segment's bytes from the mark on (up to ``size``, default the end), a
        piece of about ``chunk`` bytes at a time, each cut just after an end line: what
        :meth:`read` finds, with memory bounded by the piece instead of the segment (an entry is
        never split; only readers of entries use it: framing that is cut short is named only by
        ``verify``, which cuts the same way and says so)."""
        chunk = CHUNK if chunk is None else chunk
        with open(path, "rb") as f:
            f.seek(self.offset)
            offset, line, pending = self.offset, self.line, b""
            left = None if size is None else max(0, size - self.offset)
            while True:
                want = chunk if left is None else min(chunk, left)
                block = f.read(want) if want > 0 else b""
                if left is not None:
                    left -= len(block)
                pending += block
                last = not block or left == 0
                cut = -1 if last else segments.last_cut(pending)
                if not last and cut < 0:
                    continue  # one entry longer than a piece: read on
                part = pending if last else pending[: cut + 1]
                pending = b"" if last else pending[cut + 1 :]
                yield segments.scan(part, file, offset=offset, line=line)
                if last:
                    return
                offset, line = offset + len(part), line + part.count(b"\n")

    def after(self, found: segments.Scan, scanned: int) -> Mark:
        """The mark once ``found`` (a scan from this mark) was read, having looked at ``scanned`` bytes."""
        if found.entries:
            return Mark.past(found.entries[-1], scanned)
        return replace(self, scanned=scanned)

    @staticmethod
    def past(located: Any, scanned: int | None = None) -> Mark:
        """The mark just after entry ``located`` (a :class:`~nexus.records.Located`)."""
        end = located.end_offset
        return Mark(end, located.line_end + 1, located.entry.id, end if scanned is None else scanned)

    # ---- JSON
    def to_json(self) -> list[Any]:
        return [self.offset, self.line, self.last, self.scanned]

    @classmethod
    def from_json(cls, raw: Any) -> Mark | None:
        """The mark ``raw`` holds, or None when it has another shape (an older layout: start over)."""
        if not isinstance(raw, list) or len(raw) != 4:
            return None
        offset, line, last, scanned = raw
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (offset, line, scanned)):
            return None
        if not (last is None or isinstance(last, str)) or offset < 0 or line < 1 or scanned < offset:
            return None
        return cls(offset, line, last, scanned)


START = Mark()
