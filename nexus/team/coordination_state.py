"""The coordination state's shape (``coordination.py`` keeps it current): the records it is made of
(:class:`Ref`, :class:`Pending`, :class:`Recent`, :class:`RacePair`, :class:`SegmentMark`), its head
(:class:`State`), one agent's :class:`View`, what a refresh found (:class:`Update`), their JSON, and
the files under ``.nexus/coord/`` they are kept in (named by a short hash of the parameters). A file
of another version or shape reads as None: it is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..ledger.marks import Mark
from ..records import Located
from ..storage.vault import Vault
from .pending import Book

VERSION = 6  # 6: claims never race (5: pending entries a month a file; 4: typed records; 3: refused state
# edits never race)

_SHAPE_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError)


_new = tuple.__new__


def _ref(raw: Any) -> Ref:
    """A ref from its JSON list, at C speed (a refresh reads thousands; another shape raises)."""
    if len(raw) != 6:
        raise ValueError("a ref has six fields")
    return _new(Ref, raw)


def _races(raw: Any) -> list[RacePair]:
    return [_new(RacePair, (_ref(a), _ref(b), by)) for a, b, by in raw]


def _pending(raw: Any) -> Pending:
    r, t, a = raw
    return _new(Pending, (_ref(r), t, tuple(a)))


# The records held by the thousand (a ref per pending entry, per recent entry, per race side) are typed
# named tuples: immutable, read by field name, built about three times faster than a frozen dataclass
# and written by ``json`` as lists without a conversion (a refresh loads and saves them all).


class Ref(NamedTuple):
    """Where an entry is: its id and author, segment file, byte range and first line."""

    id: str
    agent: str
    file: str
    offset: int
    end: int
    line: int

    @classmethod
    def of(cls, located: Located) -> Ref:
        e = located.entry
        return cls(e.id, e.agent, located.file, located.offset, located.end_offset, located.line_start)

    @classmethod
    def from_json(cls, raw: Any) -> Ref:
        if len(raw) != 6:
            raise ValueError("a ref has six fields")  # (another shape: the file is rebuilt)
        return _new(cls, raw)  # (at C speed: a refresh reads thousands, a view hundreds)


class Pending(NamedTuple):
    """An entry of an ack-needing type, and the agents (other than its author) that acked it."""

    ref: Ref
    type: str
    acked: tuple[str, ...] = ()

    def owed_by(self, agent: str) -> bool:
        return self.ref.agent != agent and agent not in self.acked

    @classmethod
    def from_json(cls, raw: Any) -> Pending:
        ref, type_, acked = raw
        return _new(cls, (Ref.from_json(ref), type_, tuple(acked)))


class Recent(NamedTuple):
    """An entry inside the race window of the newest one: its time (ms) and whether it can race."""

    ref: Ref
    ms: int
    skip: bool

    @classmethod
    def from_json(cls, raw: Any) -> Recent:
        ref, ms, skip = raw
        return _new(cls, (Ref.from_json(ref), ms, skip))


class RacePair(NamedTuple):
    """Two entries that race (``a`` the older), and the reconcile entry that resolved them, if any."""

    a: Ref
    b: Ref
    resolved_by: str | None = None

    @classmethod
    def from_json(cls, raw: Any) -> RacePair:
        a, b, by = raw
        return _new(cls, (Ref.from_json(a), Ref.from_json(b), by))


@dataclass(frozen=True, slots=True)
class SegmentMark:
    """How far the state absorbed one segment, and how many entries it absorbed there."""

    mark: Mark
    count: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"mark": self.mark.to_json(), "count": self.count}

    @classmethod
    def from_json(cls, raw: Any) -> SegmentMark:
        mark = Mark.from_json(raw["mark"])
        if mark is None:
            raise ValueError("not a mark")
        return cls(mark, int(raw["count"]))


def _marks_json(marks: dict[str, SegmentMark]) -> dict[str, Any]:
    return {name: m.to_json() for name, m in marks.items()}


def _marks_from(raw: Any) -> dict[str, SegmentMark]:
    return {str(name): SegmentMark.from_json(m) for name, m in raw.items()}


@dataclass(frozen=True)
class State:
    """The derived state for one setting of (ack types, race window). Its collections grow in place
    as entries are absorbed; the records in them are replaced, never changed."""

    ack_types: tuple[str, ...]
    window_ms: int
    marks: dict[str, SegmentMark] = field(default_factory=dict)
    pending: Book[Pending] = field(default_factory=Book)
    recent: list[Recent] = field(default_factory=list)
    races: list[RacePair] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The head (the pending entries are in their month files: :meth:`Book.save`)."""
        return {
            "v": VERSION,
            "ack_types": list(self.ack_types),
            "window_ms": self.window_ms,
            "marks": _marks_json(self.marks),
            "gen": self.pending.gen,
            "months": self.pending.months,
            "recent": self.recent,  # (named tuples: json writes them as lists)
            "races": self.races,
        }

    @classmethod
    def from_json(
        cls, raw: Any, read: Callable[[str], tuple[int, dict[str, Any]] | None] | None = None
    ) -> State | None:
        """The state whose head ``raw`` is (its months read with ``read``, when first needed), or
        None when it has another version or shape (rebuilt)."""
        try:
            if raw["v"] != VERSION:
                return None
            months = {str(m): int(g) for m, g in raw["months"].items()}
            return cls(
                tuple(str(t) for t in raw["ack_types"]),
                int(raw["window_ms"]),
                _marks_from(raw["marks"]),
                Book(months, read, _pending, int(raw["gen"])),
                [_new(Recent, (_ref(r), ms, skip)) for r, ms, skip in raw["recent"]],
                _races(raw["races"]),
            )
        except _SHAPE_ERRORS:
            return None


@dataclass(frozen=True)
class View:
    """What one agent owes (oldest first) and its unresolved races, as of ``marks``."""

    agent: str
    marks: dict[str, SegmentMark] = field(default_factory=dict)
    owed: tuple[Ref, ...] = ()
    races: tuple[RacePair, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "v": VERSION,
            "agent": self.agent,
            "marks": _marks_json(self.marks),
            "owed": self.owed,  # (named tuples: json writes them as lists)
            "races": self.races,
        }

    @classmethod
    def from_json(cls, raw: Any) -> View | None:
        try:
            if raw["v"] != VERSION:
                return None
            return cls(
                str(raw["agent"]),
                _marks_from(raw["marks"]),
                tuple([_ref(r) for r in raw["owed"]]),
                tuple(_races(raw["races"])),
            )
        except _SHAPE_ERRORS:
            return None


def params_key(ack_types: tuple[str, ...], window_seconds: float) -> str:
    raw = json.dumps([VERSION, sorted(ack_types), int(window_seconds * 1000)])
    return hashlib.sha256(raw.encode()).hexdigest()[:10]


def state_path(vault: Vault, ack_types: tuple[str, ...], window_seconds: float) -> Path:
    return vault.state / "coord" / f"state-{params_key(ack_types, window_seconds)}.json"


def view_path(vault: Vault, agent: str, ack_types: tuple[str, ...], window_seconds: float) -> Path:
    return vault.state / "coord" / f"view-{params_key(ack_types, window_seconds)}-{agent}.json"


def months_at(vault: Vault, ack_types: tuple[str, ...], window_seconds: float) -> Callable[[str], Path]:
    """Where each month file of the pending entries is."""
    folder, key = vault.state / "coord", params_key(ack_types, window_seconds)
    return lambda month: folder / f"pending-{key}-{month}.json"


@dataclass
class Update:
    """What one ``refresh`` found: the state, and what is new since the previous refresh."""

    state: State
    new_entries: int = 0  # how many entries it absorbed (counted, not kept: a rebuild reads them all)
    new_races: list[RacePair] = field(default_factory=list)
    resolved: list[tuple[str, str, str]] = field(default_factory=list)  # (a, b, reconcile id)
    rebuilt: bool = False
    marks_moved: bool = False  # e.g. text after the last entry was read: save, or every look rereads it
    touched: set[str] = field(default_factory=set)  # pending entries added or acked (views follow them)
    before: dict[str, SegmentMark] | None = None  # the marks the state was loaded at (None: rebuilt)

    @property
    def changed(self) -> bool:
        return self.rebuilt or bool(self.new_entries) or self.marks_moved
