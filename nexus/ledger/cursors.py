"""Read cursors: what each agent has read of the log, and reading what it has not.

``.nexus/cursors/AGENT.json`` (derived; a missing or unreadable one reads the log again from its
start, skipping nothing it cannot prove was read) holds a :class:`Cursor`: the newest id the agent
has read (``seen``), a :class:`~nexus.ledger.marks.Mark` per segment (how far it read there, and the
segment's size then), and how far into ``.nexus/arrivals`` it has looked.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..records import Entry, Located
from ..storage import durable
from ..storage.text import check_name
from ..storage.vault import Vault
from .logfiles import is_segment_name, marked
from .marks import START, Mark

if TYPE_CHECKING:
    from .check import Checker


@dataclass(frozen=True)
class Cursor:
    """How far one agent has read: ``seen`` (the newest id read), per segment a mark, and the offset
    into ``.nexus/arrivals`` looked at."""

    seen: str | None = None
    segments: dict[str, Mark] = field(default_factory=dict)
    arrived: int = 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"seen": self.seen, "segments": marks_to_json(self.segments)}
        if self.arrived:
            data["arrived"] = self.arrived
        return data

    @classmethod
    def from_json(cls, data: Any) -> Cursor:
        """The cursor ``data`` holds; parts of another shape are dropped (read again, never skipped)."""
        if not isinstance(data, dict) or not isinstance(data.get("segments"), dict):
            return cls()
        seen = data.get("seen")
        arrived = data.get("arrived", 0)
        return cls(
            seen if isinstance(seen, str) else None,
            marks_from_json(data["segments"]),
            arrived if isinstance(arrived, int) else 0,
        )


def marks_from_json(raw: Mapping[str, Any]) -> dict[str, Mark]:
    """Per-segment marks from JSON; a mark of another shape is left out (that segment is read again)."""
    out = {}
    for name, value in raw.items():
        mark = Mark.from_json(value)
        if mark is not None:
            out[name] = mark
    return out


def marks_to_json(marks: Mapping[str, Mark]) -> dict[str, Any]:
    return {name: mark.to_json() for name, mark in marks.items()}


def cursor_path(vault: Vault, agent: str) -> Path:
    return vault.state / "cursors" / f"{check_name(agent)}.json"


def read_cursor(vault: Vault, agent: str) -> Cursor:
    try:
        data = json.loads(cursor_path(vault, agent).read_bytes())
    except (FileNotFoundError, ValueError):
        return Cursor()
    return Cursor.from_json(data)


def advance_cursor(vault: Vault, agent: str, cursor: Cursor) -> None:
    """Save ``agent``'s cursor (as returned by :func:`scan_unread`) durably."""
    durable.replace(cursor_path(vault, agent), json.dumps(cursor.to_json()).encode())


def unread(
    vault: Vault, agent: str, *, advance: bool = True, checker: Checker | None = None
) -> list[Located]:
    """Entries by others that ``agent`` has not read, oldest first, each with its verdict (see
    :func:`scan_unread`); advances the cursor unless told not."""
    items, cursor = scan_unread(vault, agent, checker=checker)
    if advance and cursor is not None:
        advance_cursor(vault, agent, cursor)
    return items


def scan_unread(
    vault: Vault, agent: str, *, checker: Checker | None = None
) -> tuple[list[Located], Cursor | None]:
    """Entries by others that ``agent`` has not read, oldest first, and the cursor that marks them
    read (``None`` when it would not change); nothing is written. See :func:`advance_cursor`.

    Each entry carries its verdict (``Located.verdict``: "ok" only when it is canonical and signed by
    its author's trusted key: ``checker``, see ``logfiles.marked``): readers show the others apart.

    The cursor keeps, per segment, a mark just after the last entry read there and the segment's size
    when read, so a read opens only segments that changed and scans only what was added. If the mark
    no longer holds (the file changed before it) the segment is scanned again from the start, and
    entries up to the last id read (``seen``) are skipped.
    """
    if not vault.identity_path(check_name(agent)).is_file():
        raise vault.unknown_agent(agent)
    cursor = read_cursor(vault, agent)
    arrived, arrived_end = _arrivals_since(vault, cursor.arrived)
    out, marks, newest_seen = scan_after(
        vault,
        cursor.segments,
        cursor.seen,
        keep=lambda e: e.agent != agent,
        arrived=arrived if cursor.seen is not None else frozenset(),
    )
    out = marked(vault, out, checker)
    after = Cursor(newest_seen, marks, arrived_end)
    return out, (None if after == cursor else after)


# Entries a merge (or a conflict copy's import) brought in with ids older than entries already read:
# ``.nexus/arrivals``, one id a line, appended by ``gitsync``/``copies``. A cursor remembers how far
# into it it has looked (``arrived``, a byte offset), so such an entry is read once although its id
# sorts before the cursor's ``seen``.
ARRIVALS_FILE = "arrivals"


def note_arrivals(vault: Vault, ids: list[str]) -> None:
    if ids:
        durable.append(vault.state / ARRIVALS_FILE, "".join(f"{i}\n" for i in ids).encode("ascii"))


def _arrivals_since(vault: Vault, offset: int) -> tuple[set[str], int]:
    path = os.fspath(vault.state / ARRIVALS_FILE)
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return set(), 0
    if size <= offset:
        return set(), size if size < offset else offset
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(size - offset)
    end = data.rfind(b"\n") + 1
    return set(data[:end].decode("ascii", "replace").split()), offset + end


def scan_after(
    vault: Vault,
    segment_marks: Mapping[str, Mark],
    seen: str | None,
    keep: Callable[[Entry], bool] | None = None,
    arrived: set[str] | frozenset[str] = frozenset(),
) -> tuple[list[Located], dict[str, Mark], str | None]:
    """Entries newer than ``seen`` (or in ``arrived``: merged in older than it) after the per-segment
    ``segment_marks`` (a cursor's ``segments``), oldest first and only those ``keep`` accepts; the
    marks after them; and the newest id met.

    Opens only segments whose size changed since their mark and reads only what follows it; a
    segment whose mark no longer holds is scanned again from its start, skipping ids up to ``seen``.
    """
    marks = dict(segment_marks)
    out: list[Located] = []
    newest = seen
    log_dir = vault.log_dir
    prefix = os.fspath(log_dir) + os.sep
    folder = vault.rel(log_dir)
    try:
        names = sorted(n[:-3] for n in os.listdir(log_dir) if n.endswith(".md") and is_segment_name(n[:-3]))
    except FileNotFoundError:
        names = []
    for name in names:
        path = f"{prefix}{name}.md"  # (a str path: Path objects cost ~10 µs each)
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            continue
        mark = marks.get(name, START)
        if name in marks and mark.unchanged(size):
            continue  # unchanged since the last read: not even opened, so old segments cost nothing
        if not mark.holds(path):
            mark = START
        last = None
        for result in mark.read_chunks(path, f"{folder}/{name}.md", size):  # (flat memory: a piece
            for located in result.entries:  # at a time, only the kept entries held)
                e = located.entry
                if seen is not None and e.id <= seen and e.id not in arrived:
                    continue
                if newest is None or e.id > newest:
                    newest = e.id
                if keep is None or keep(e):
                    out.append(located)
            if result.entries:
                last = result.entries[-1]
        marks[name] = replace(mark, scanned=size) if last is None else Mark.past(last, size)
    return out, marks, newest
