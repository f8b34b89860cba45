"""The coordination state's ack-needing entries, kept a month a file (derived, like all of ``coord/``).

Every entry of an ack-needing type stays in the coordination state for good (who acked it changes),
so this is the part of the state that grows with history: 20,000 decisions in a year of three busy
agents. It is split by the month of the entry's id (``pending-P-YYYY-MM.json``, ``P`` the state's
parameters) and a :class:`Book` reads a month only when an entry of that month is looked up or
changed: a refresh after N new entries reads and rewrites the months those entries and the entries
they ack belong to (usually one), never the whole history. Going through every entry (a full view,
``nexus acks``) reads every month.

Consistency: the state's head file (``state-P.json``, written last) names each month file with the
generation it was written at, and each month file carries its own. A month file whose generation is
not the one the head names (a crash between the month files and the head, a lost write, a copy from
elsewhere), or that cannot be read, is :class:`Damaged`: the refresh that meets it rebuilds the whole
state from the log. Between refreshes a reader may meet a month newer than its head (another process
refreshed since): newer is taken, it only knows of more acknowledgements.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

from ..storage import durable, entries

V = TypeVar("V")


class Damaged(Exception):
    """A month file is missing, unreadable or of another generation than the head names."""


def month_of(entry_id: str) -> str:
    """``YYYY-MM`` (UTC) of the time an id encodes; ``-`` for a string that is no id."""
    try:
        t = time.gmtime(entries.decode_id_ms(entry_id) // 1000)
    except (ValueError, OverflowError, OSError):
        return "-"
    return f"{t.tm_year:04d}-{t.tm_mon:02d}"


class Book(Generic[V]):
    """``id -> value`` for every ack-needing entry, read a month at a time (see the module's doc).

    ``months``: each month that has a file, and the generation the head says it was written at;
    ``read(month)``: that file's (generation, raw entries), or None when it cannot be read; ``decode``
    turns a raw entry into a value. A new or rebuilt book has no months: everything is in memory."""

    def __init__(
        self,
        months: dict[str, int] | None = None,
        read: Callable[[str], tuple[int, dict[str, Any]] | None] | None = None,
        decode: Callable[[Any], V] | None = None,
        gen: int = 0,
    ) -> None:
        self.months: dict[str, int] = dict(months or {})
        self.gen = gen  # the head's generation (the next save writes gen + 1)
        self.strict = False  # (set during a refresh: only the exact generation is taken)
        self.loaded: dict[str, dict[str, V]] = {}
        self.dirty: set[str] = set()
        self._read = read
        self._decode = decode
        self.repair: Callable[[], Book[V]] | None = (
            None  # a rebuilt book, when a month is damaged outside a refresh
        )

    # ---- months
    def month(self, month: str) -> dict[str, V]:
        """The entries of ``month`` (read now if it was not read yet; empty when it has no file)."""
        found = self.loaded.get(month)
        if found is not None:
            return found
        want = self.months.get(month)
        if want is None:
            found = {}
        else:
            try:
                found = self._load(month, want)
            except Damaged:
                if self.strict or self.repair is None:
                    raise
                self._take(self.repair())
                return self.month(month)
        self.loaded[month] = found
        return found

    def _load(self, month: str, want: int) -> dict[str, V]:
        got = self._read(month) if self._read is not None else None
        if got is None:
            raise Damaged(month)
        gen, raw = got
        if gen != want and (self.strict or gen < want):
            raise Damaged(month)
        decode = self._decode
        try:
            return {str(k): decode(v) for k, v in raw.items()} if decode else dict(raw)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as err:
            raise Damaged(month) from err

    def _take(self, other: Book[V]) -> None:
        """Become ``other`` (a rebuilt book: every month in memory)."""
        self.months, self.gen, self.loaded, self.dirty = other.months, other.gen, other.loaded, other.dirty
        self._read, self._decode, self.repair = other._read, other._decode, None

    def load_all(self) -> None:
        for month in list(self.months):
            self.month(month)

    # ---- the mapping
    def get(self, entry_id: str, default: V | None = None) -> V | None:
        return self.month(month_of(entry_id)).get(entry_id, default)

    def __getitem__(self, entry_id: str) -> V:
        return self.month(month_of(entry_id))[entry_id]

    def __setitem__(self, entry_id: str, value: V) -> None:
        month = month_of(entry_id)
        self.month(month)[entry_id] = value
        self.dirty.add(month)

    def __contains__(self, entry_id: object) -> bool:
        return isinstance(entry_id, str) and entry_id in self.month(month_of(entry_id))

    def __iter__(self) -> Iterator[str]:
        self.load_all()
        for month in sorted(self.loaded):
            yield from list(self.loaded[month])

    def __len__(self) -> int:
        self.load_all()
        return sum(len(m) for m in self.loaded.values())

    def items(self) -> Iterator[tuple[str, V]]:
        for key in self:
            yield key, self.loaded[month_of(key)][key]

    def values(self) -> Iterator[V]:
        for _key, value in self.items():
            yield value

    def __eq__(self, other: object) -> bool:  # (the same entries: every month is read)
        if not isinstance(other, Book):
            return NotImplemented
        return dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]  # (mutable)

    def update(self, other: dict[str, V]) -> None:
        for key, value in other.items():
            self[key] = value

    # ---- files
    def save(self, path_of: Callable[[str], Path], version: int) -> None:
        """Write the months changed since they were read, at the next generation (before the head)."""
        gen = self.gen + 1
        for month in sorted(self.dirty):
            body = {"v": version, "gen": gen, "month": month, "pending": self.loaded[month]}
            durable.replace(path_of(month), json.dumps(body).encode(), durable=False)
            self.months[month] = gen
        self.dirty.clear()
        self.gen = gen


def reader(
    path_of: Callable[[str], Path], version: int
) -> Callable[[str], tuple[int, dict[str, Any]] | None]:
    """What a :class:`Book` reads a month file with: (generation, raw entries), None if unreadable."""

    def read(month: str) -> tuple[int, dict[str, Any]] | None:
        try:
            raw = json.loads(path_of(month).read_bytes())
            if raw["v"] != version or raw["month"] != month or not isinstance(raw["pending"], dict):
                return None
            return int(raw["gen"]), raw["pending"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    return read
