"""Derived coordination state: which entries still need acknowledgements, and which entries race.

Kept under ``.nexus/coord/`` and updated incrementally, like the log's cursors: for each segment the
state remembers the byte offset (and line, and id) of the end of the last entry it absorbed, and the
size it had scanned to. ``refresh`` reads only the bytes after that offset; a segment whose saved
position no longer ends the entry it ended (an editor rewrote the file) makes it rebuild from the log.
The watcher refreshes after every change it sees; ``nexus brief`` refreshes when the watcher is not
running. Nothing here is canonical: delete the folder and it is rebuilt from the segments.

Files (``P`` is a short hash of the parameters, so two settings never fight over one file):

* ``state-P.json`` – ``marks`` (per segment ``[offset, line, last id, scanned size, entries
  absorbed]``), ``pending`` (every entry of an ack-needing type: author, type, where it is, who
  acked it), ``recent`` (the entries inside the race window of the newest one), ``races``
  (``[a ref, b ref, resolved_by]``);
* ``view-P-AGENT.json`` – what one agent owes and its unresolved races, with the marks it was computed
  at: all ``nexus brief`` reads when nothing changed.

A *ref* is ``[id, agent, file, offset, end offset, line]``: enough to read the entry back with one seek.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import durable, entries, segments
from .records import Located
from .vault import Vault

VERSION = 3  # 3: refused state edits (state-conflict) never race
RECONCILE = "reconcile"
REFUSED = "state-conflict"  # a stale state edit, refused: nothing changed

Ref = list[Any]  # [id, agent, file, offset, end, line]


def _params_key(ack_types: tuple[str, ...], window_seconds: float) -> str:
    raw = json.dumps([VERSION, sorted(ack_types), int(window_seconds * 1000)])
    return hashlib.sha256(raw.encode()).hexdigest()[:10]


def state_path(vault: Vault, ack_types: tuple[str, ...], window_seconds: float) -> Path:
    return vault.state / "coord" / f"state-{_params_key(ack_types, window_seconds)}.json"


def view_path(vault: Vault, agent: str, ack_types: tuple[str, ...], window_seconds: float) -> Path:
    return vault.state / "coord" / f"view-{_params_key(ack_types, window_seconds)}-{agent}.json"


@dataclass
class Update:
    """What one ``refresh`` found: the state, and what is new since the previous refresh."""

    state: dict[str, Any]
    new_entries: list[Located] = field(default_factory=list)
    new_races: list[tuple[Ref, Ref]] = field(default_factory=list)
    resolved: list[tuple[str, str, str]] = field(default_factory=list)  # (a, b, reconcile id)
    rebuilt: bool = False
    marks_moved: bool = False  # e.g. text after the last entry was read: save, or every look rereads it

    @property
    def changed(self) -> bool:
        return self.rebuilt or bool(self.new_entries) or self.marks_moved


# ------------------------------------------------------------------ marks


def _segment_stats(vault: Vault) -> list[tuple[str, Path, int]]:
    from .log import segment_files

    out = []
    for name, path in segment_files(vault):
        try:
            out.append((name, path, path.stat().st_size))
        except FileNotFoundError:
            continue
    return out


def _mark_status(path: Path, size: int, mark: Any) -> str:
    """``same`` (nothing new), ``grown`` (read from the mark on), or ``bad`` (rebuild)."""
    if not isinstance(mark, list) or len(mark) != 5:
        return "bad"
    offset, _line, last, scanned, _count = mark
    if not isinstance(offset, int) or offset > size:
        return "bad"
    if last is not None:
        with open(path, "rb") as f:
            f.seek(max(0, offset - 8192))
            window = f.read(min(offset, 8192))
        tail_line = window.rstrip(b"\n").rsplit(b"\n", 1)[-1]
        if not (
            window.endswith(b"\n")
            and tail_line.startswith(entries.END_PREFIX.encode())
            and f'"id":"{last}"'.encode() in tail_line
        ):
            return "bad"
    return "same" if size == scanned else "grown"


def marks_current(vault: Vault, marks: dict[str, Any]) -> bool:
    """True when the log holds exactly what ``marks`` says was absorbed (the fast path's check)."""
    stats = _segment_stats(vault)
    if {name for name, _, _ in stats} != set(marks):
        return False
    return all(_mark_status(path, size, marks[name]) == "same" for name, path, size in stats)


# ------------------------------------------------------------------ state


def _empty(ack_types: tuple[str, ...], window_seconds: float) -> dict[str, Any]:
    return {
        "v": VERSION,
        "ack_types": sorted(ack_types),
        "window_ms": int(window_seconds * 1000),
        "marks": {},
        "pending": {},
        "recent": [],
        "races": [],
    }


def load(vault: Vault, ack_types: tuple[str, ...], window_seconds: float) -> dict[str, Any] | None:
    try:
        state = json.loads(state_path(vault, ack_types, window_seconds).read_bytes())
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("v") != VERSION:
        return None
    if state.get("ack_types") != sorted(ack_types) or state.get("window_ms") != int(window_seconds * 1000):
        return None
    return state


def _ref(located: Located) -> Ref:
    e = located.entry
    return [e.id, e.agent, located.file, located.offset, located.end_offset, located.line_start]


def absorb(state: dict[str, Any], located: Located, update: Update) -> None:
    """Fold one entry (in log order) into the state."""
    e = located.entry
    ack_types = state["ack_types"]
    pending: dict[str, Any] = state["pending"]
    for acked in e.ack:
        item = pending.get(acked)
        if item is not None and item[0] != e.agent and e.agent not in item[6]:
            item[6].append(e.agent)
    if e.type in ack_types:
        pending[e.id] = [
            e.agent,
            e.type,
            located.file,
            located.offset,
            located.end_offset,
            located.line_start,
            [],
        ]
    if e.type == RECONCILE and e.ack:
        acked_ids = set(e.ack)
        for race in state["races"]:
            if race[2] is None and race[0][0] in acked_ids and race[1][0] in acked_ids:
                race[2] = e.id
                update.resolved.append((race[0][0], race[1][0], e.id))
    _race_check(state, located, update)


def _race_check(state: dict[str, Any], located: Located, update: Update) -> None:
    e = located.entry
    window = state["window_ms"]
    ms = entries.decode_id_ms(e.id)
    recent: list[list[Any]] = state["recent"]
    # A reconcile settles races, a person's note signed by a helper is no agent's action, and a refused
    # stale state edit changed nothing: none of them races.
    skip = e.type in (RECONCILE, REFUSED) or e.via is not None
    if not skip:
        acked = set(e.ack)
        for x in reversed(recent):
            x_id, x_agent, x_ms, x_skip = x[0], x[1], x[2], x[3]
            if ms - x_ms > window:
                break
            if x_id >= e.id:
                continue
            if e.seen is not None and e.seen >= x_id:
                break  # recent is sorted by id: the author had seen this one and every older one
            if x_skip or x_agent == e.agent or x_id in acked:
                continue
            race: list[Any] = [x[4], _ref(located), None]
            state["races"].append(race)
            update.new_races.append((race[0], race[1]))
    item = [e.id, e.agent, ms, skip, _ref(located)]
    bisect.insort(recent, item, key=lambda r: r[0])
    newest = recent[-1][2]
    cut = 0
    while cut < len(recent) and newest - recent[cut][2] > window:
        cut += 1
    if cut:
        del recent[:cut]


def _scan_from(vault: Vault, path: Path, mark: Any) -> tuple[segments.Scan, int]:
    offset, line = (mark[0], mark[1]) if mark else (0, 1)
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read()
    return segments.scan(data, vault.rel(path), offset=offset, line=line), offset + len(data)


def _catch_up(vault: Vault, state: dict[str, Any], update: Update) -> bool:
    """Absorb whatever the segments hold past the marks; False when a mark is bad (rebuild)."""
    stats = _segment_stats(vault)
    names = {name for name, _, _ in stats}
    if any(name not in names for name in state["marks"]):
        return False
    for name, path, size in stats:
        mark = state["marks"].get(name)
        if mark is not None:
            status = _mark_status(path, size, mark)
            if status == "bad":
                return False
            if status == "same":
                continue
        result, scanned = _scan_from(vault, path, mark)
        offset, line, last, count = (mark[0], mark[1], mark[2], mark[4]) if mark else (0, 1, None, 0)
        for located in result.entries:
            absorb(state, located, update)
            update.new_entries.append(located)
            offset, line, last = located.end_offset, located.line_end + 1, located.entry.id
            count += 1
        new_mark = [offset, line, last, scanned, count]
        if new_mark != mark:
            state["marks"][name] = new_mark
            update.marks_moved = True
    return True


def refresh(vault: Vault, ack_types: tuple[str, ...], window_seconds: float) -> Update:
    """Bring the derived state up to date with the log (under the ``coord`` lock) and save it, with a
    view for every agent, when anything changed."""
    from .locks import exclusive

    with exclusive(vault.lock("coord")):
        state = load(vault, ack_types, window_seconds)
        update = Update(state or _empty(ack_types, window_seconds))
        if state is None or not _catch_up(vault, update.state, update):
            update = Update(_empty(ack_types, window_seconds), rebuilt=True)
            _catch_up(vault, update.state, update)
        if update.changed or not state_path(vault, ack_types, window_seconds).exists():
            save(vault, update.state, ack_types, window_seconds)
    return update


def relocate(
    vault: Vault,
    ack_types: tuple[str, ...],
    window_seconds: float,
    file: str,
    found: list[Located],
    size: int,
) -> bool:
    """After the watcher rewrote segment ``file`` without changing which entries come up to the last
    one absorbed (it put entries back that the state had absorbed before an editor's save dropped
    them, or it removed a person's text), move the state's offsets to the new file instead of
    rebuilding from the whole log. ``found`` is a scan of the new file. False (nothing changed) when
    that cannot be shown: same last entry, same number of entries up to it, ids in order; the next
    refresh then rebuilds."""
    from .locks import exclusive

    with exclusive(vault.lock("coord")):
        state = load(vault, ack_types, window_seconds)
        if state is None or file not in state["marks"]:
            return False
        _offset, _line, last, _scanned, count = state["marks"][file]
        ids = [loc.entry.id for loc in found]
        if last is None or ids != sorted(ids) or last not in ids or ids.index(last) + 1 != count:
            return False
        where = {loc.entry.id: loc for loc in found}

        def move(ref: list[Any]) -> bool:
            if ref[2] != file:
                return True
            loc = where.get(ref[0])
            if loc is None:
                return False
            ref[3], ref[4], ref[5] = loc.offset, loc.end_offset, loc.line_start
            return True

        for entry_id, item in state["pending"].items():
            if item[2] == file:
                loc = where.get(entry_id)
                if loc is None:
                    return False
                item[3], item[4], item[5] = loc.offset, loc.end_offset, loc.line_start
        refs = [r[4] for r in state["recent"]] + [x for race in state["races"] for x in race[:2]]
        if not all(move(ref) for ref in refs):
            return False
        anchor = where[last]
        end = min(anchor.end_offset, size)
        state["marks"][file] = [anchor.end_offset, anchor.line_end + 1, last, end, count]
        save(vault, state, ack_types, window_seconds)
    return True


def save(vault: Vault, state: dict[str, Any], ack_types: tuple[str, ...], window_seconds: float) -> None:
    from .roster import agents

    durable.replace(state_path(vault, ack_types, window_seconds), json.dumps(state).encode(), durable=False)
    folder = vault.state / "coord"
    prefix = f"view-{_params_key(ack_types, window_seconds)}-"
    for name in agents(vault):
        durable.replace(
            folder / f"{prefix}{name}.json", json.dumps(make_view(state, name)).encode(), durable=False
        )
    for stale in folder.glob(f"{prefix}*.json"):  # views of identities that are gone
        if stale.name[len(prefix) : -5] not in set(agents(vault)):
            stale.unlink(missing_ok=True)


def make_view(state: dict[str, Any], agent: str) -> dict[str, Any]:
    owed = [
        [entry_id, item[0], item[2], item[3], item[4], item[5]]
        for entry_id, item in state["pending"].items()
        if item[0] != agent and agent not in item[6]
    ]
    owed.sort(key=lambda ref: ref[0])
    races = [[r[0], r[1]] for r in state["races"] if r[2] is None and agent in (r[0][1], r[1][1])]
    return {"v": VERSION, "agent": agent, "marks": state["marks"], "owed": owed, "races": races}


def view(vault: Vault, agent: str, ack_types: tuple[str, ...], window_seconds: float) -> dict[str, Any]:
    """What ``agent`` owes and its unresolved races: the saved view when the log has not changed since
    it was computed (a few stats and one small read), else a refresh first."""
    path = view_path(vault, agent, ack_types, window_seconds)
    try:
        cached = json.loads(path.read_bytes())
        if isinstance(cached, dict) and cached.get("v") == VERSION and marks_current(vault, cached["marks"]):
            return cached
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        pass
    update = refresh(vault, ack_types, window_seconds)
    data = make_view(update.state, agent)
    if not path.exists():  # an agent added since the last save: next time, the fast path
        durable.replace(path, json.dumps(data).encode(), durable=False)
    return data


# ------------------------------------------------------------------ reading entries back


def materialize(vault: Vault, ref: Ref) -> Located:
    """The entry a ref points to, read with one seek (or found by id if the file moved under it), with
    its verdict (``Located.verdict``)."""
    entry_id, _agent, file, offset, end, line = ref
    try:
        with open(vault.root / file, "rb") as f:
            f.seek(offset)
            data = f.read(end - offset)
        found = segments.scan(data, file, offset=offset, line=line).entries
        if found and found[0].entry.id == entry_id:
            return _checked(vault, found[0])
    except OSError:
        pass
    from .log import find_entry

    return _checked(vault, find_entry(vault, entry_id))


def _checked(vault: Vault, located: Located) -> Located:
    """The entry with its verdict (readers show only verified entries as their author's words)."""
    from .verify import mark

    return mark([located], None, vault)[0]
