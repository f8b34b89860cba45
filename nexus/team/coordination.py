"""Derived coordination state: which entries still need acknowledgements, and which entries race.

Kept under ``.nexus/coord/`` and updated incrementally, like the log's cursors: for each segment the
state keeps a :class:`~nexus.ledger.marks.Mark` (where the last entry it absorbed ends, and the size it had
scanned to) and how many entries it absorbed there. ``refresh`` reads only the bytes after the mark;
a mark that no longer holds (an editor rewrote the file) makes it rebuild from the log. The watcher
refreshes after every change it sees; ``nexus brief`` refreshes when the watcher is not running.
Nothing here is canonical: delete the folder and it is rebuilt from the segments, and a file of
another shape or version is treated as missing.

Files (``P`` is a short hash of the parameters, so two settings never fight over one file):

* ``state-P.json`` – the head of a :class:`State`: per segment its :class:`SegmentMark`, the entries
  inside the race window of the newest one (:class:`Recent`), every race (:class:`RacePair`), and
  which month files hold the entries of an ack-needing type, at which generation;
* ``pending-P-YYYY-MM.json`` – the entries of an ack-needing type whose id falls in that month
  (:class:`Pending`: where it is, its type, who acked it), read and rewritten a month at a time
  (``pending.py``): a refresh after N new entries touches the months of those entries and of what
  they ack, not the history. :class:`Pending`, :class:`Recent`, :class:`RacePair` and :class:`Ref`
  are named tuples, written as JSON lists;
* ``view-P-AGENT.json`` – a :class:`View`: what one agent owes and its unresolved races, with the
  marks it was computed at: all ``nexus brief`` reads when nothing changed. A refresh updates each
  view from the one it replaces and what changed (the pending entries it touched), when that view
  was current; otherwise it computes it from every month.

The head is written last: a crash between the month files and the head leaves a month of a newer
generation than the head names, and the next refresh rebuilds (``pending.Damaged``).

A :class:`Ref` says where an entry is: enough to read it back with one seek (:func:`materialize`). The
records, their JSON and the files' names are ``coordination_state.py``'s; this module keeps them
current.
"""

from __future__ import annotations

import bisect
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import VaultError
from ..ledger.marks import START, Mark
from ..records import Located
from ..storage import durable, entries, segments
from ..storage.vault import Vault
from ..trust import Trust
from .coordination_state import (
    VERSION,
    Pending,
    RacePair,
    Recent,
    Ref,
    SegmentMark,
    State,
    Update,
    View,
    months_at,
    params_key,
    state_path,
    view_path,
)
from .pending import Book, Damaged, reader

if TYPE_CHECKING:
    from ..ledger.check import Checker

RECONCILE = "reconcile"
REFUSED = "state-conflict"  # a stale state edit, refused: nothing changed
CLAIMING = ("claim", "release")  # claims: checked against each other under the log lock, never a race

# ------------------------------------------------------------------ marks


def _segment_stats(vault: Vault) -> list[tuple[str, str, int]]:
    """(name, path, size) of every segment, oldest first (str paths: a view costs a few stats)."""
    from ..ledger.logfiles import is_segment_name

    folder = os.fspath(vault.log_dir) + os.sep
    try:
        names = sorted(n[:-3] for n in os.listdir(folder) if n.endswith(".md") and is_segment_name(n[:-3]))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        try:
            out.append((name, f"{folder}{name}.md", os.stat(f"{folder}{name}.md").st_size))
        except FileNotFoundError:
            continue
    return out


def marks_current(vault: Vault, marks: dict[str, SegmentMark]) -> bool:
    """True when the log holds exactly what ``marks`` says was absorbed (the fast path's check)."""
    stats = _segment_stats(vault)
    if {name for name, _, _ in stats} != set(marks):
        return False
    return all(
        marks[name].mark.unchanged(size) and marks[name].mark.holds(path) for name, path, size in stats
    )


# ------------------------------------------------------------------ state


def _empty(ack_types: tuple[str, ...], window_seconds: float) -> State:
    return State(tuple(sorted(ack_types)), int(window_seconds * 1000))


def load(vault: Vault, ack_types: tuple[str, ...], window_seconds: float) -> State | None:
    """The saved state (its head; months are read as they are needed), or None: missing, of another
    shape or for other parameters."""
    try:
        raw = json.loads(state_path(vault, ack_types, window_seconds).read_bytes())
    except (FileNotFoundError, ValueError):
        return None
    state = State.from_json(raw, reader(months_at(vault, ack_types, window_seconds), VERSION))
    if state is None or state.ack_types != tuple(sorted(ack_types)):
        return None
    return state if state.window_ms == int(window_seconds * 1000) else None


def absorb(state: State, located: Located, update: Update) -> None:
    """Fold one entry (in log order) into the state."""
    e = located.entry
    for acked in e.ack:
        item = state.pending.get(acked)
        if item is not None and item.owed_by(e.agent):
            state.pending[acked] = item._replace(acked=(*item.acked, e.agent))
            update.touched.add(acked)
    if e.type in state.ack_types:
        state.pending[e.id] = Pending(Ref.of(located), e.type)
        update.touched.add(e.id)
    if e.type == RECONCILE and e.ack:
        acked_ids = set(e.ack)
        for i, race in enumerate(state.races):
            if race.resolved_by is None and race.a.id in acked_ids and race.b.id in acked_ids:
                state.races[i] = race._replace(resolved_by=e.id)
                update.resolved.append((race.a.id, race.b.id, e.id))
    _race_check(state, located, update)


def _race_check(state: State, located: Located, update: Update) -> None:
    e = located.entry
    window = state.window_ms
    ms = entries.decode_id_ms(e.id)
    recent = state.recent
    ref = Ref.of(located)
    # A reconcile settles races, a person's note signed by a helper is no agent's action, a refused
    # stale state edit changed nothing, and claims have their own rule (team/claims.py): none races.
    skip = e.type in (RECONCILE, REFUSED, *CLAIMING) or e.via is not None
    if not skip:
        acked = set(e.ack)
        for x in reversed(recent):
            if ms - x.ms > window:
                break
            if x.ref.id >= e.id:
                continue
            if e.seen is not None and e.seen >= x.ref.id:
                break  # recent is sorted by id: the author had seen this one and every older one
            if x.skip or x.ref.agent == e.agent or x.ref.id in acked:
                continue
            race = RacePair(x.ref, ref)
            state.races.append(race)
            update.new_races.append(race)
    bisect.insort(recent, Recent(ref, ms, skip), key=lambda r: r.ref.id)
    newest = recent[-1].ms
    cut = 0
    while cut < len(recent) and newest - recent[cut].ms > window:
        cut += 1
    if cut:
        del recent[:cut]


def _catch_up(vault: Vault, state: State, update: Update) -> bool:
    """Absorb whatever the segments hold past the marks; False when a mark is bad (rebuild)."""
    stats = _segment_stats(vault)
    names = {name for name, _, _ in stats}
    if any(name not in names for name in state.marks):
        return False
    for name, path, size in stats:
        known = state.marks.get(name)
        mark, count = (known.mark, known.count) if known is not None else (START, 0)
        if known is not None:
            if not mark.holds(path):
                return False
            if mark.unchanged(size):
                continue
        last, absorbed = None, 0
        for result in mark.read_chunks(path, f"{vault.rel(vault.log_dir)}/{name}.md", size):
            for located in result.entries:  # (a piece at a time: memory stays flat on a rebuild)
                absorb(state, located, update)
            if result.entries:
                last, absorbed = result.entries[-1], absorbed + len(result.entries)
        update.new_entries += absorbed
        after = mark if last is None else Mark.past(last)
        moved = SegmentMark(replace(after, scanned=size), count + absorbed)
        if moved != known:
            state.marks[name] = moved
            update.marks_moved = True
    return True


def refresh(vault: Vault, ack_types: tuple[str, ...], window_seconds: float) -> Update:
    """Bring the derived state up to date with the log (under the ``coord`` lock) and save it, with a
    view for every agent, when anything changed."""
    from ..storage.locks import exclusive

    with exclusive(vault.lock("coord")):
        update = _refresh(vault, ack_types, window_seconds)
    update.state.pending.repair = lambda: _repair(vault, ack_types, window_seconds)
    return update


def _refresh(vault: Vault, ack_types: tuple[str, ...], window_seconds: float) -> Update:
    """``refresh`` under the lock: a month file of another generation than the head names, or one
    that cannot be read, and the state is rebuilt."""
    state = load(vault, ack_types, window_seconds)
    update = Update(state or _empty(ack_types, window_seconds))
    ok = False
    if state is not None:
        update.before = dict(state.marks)
        state.pending.strict = True
        try:
            ok = _catch_up(vault, state, update)
        except Damaged:
            ok = False
        state.pending.strict = False
    if not ok:
        update = Update(_empty(ack_types, window_seconds), rebuilt=True)
        _catch_up(vault, update.state, update)
    if update.changed or not state_path(vault, ack_types, window_seconds).exists():
        save(vault, update.state, ack_types, window_seconds, update)
    return update


def _repair(vault: Vault, ack_types: tuple[str, ...], window_seconds: float) -> Book[Pending]:
    """The pending entries rebuilt from the log (a month file went bad after a refresh read the head)."""
    from ..storage.locks import exclusive

    with exclusive(vault.lock("coord")):
        update = Update(_empty(ack_types, window_seconds), rebuilt=True)
        _catch_up(vault, update.state, update)
        save(vault, update.state, ack_types, window_seconds, update)
    return update.state.pending


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
    from ..storage.locks import exclusive

    with exclusive(vault.lock("coord")):
        state = load(vault, ack_types, window_seconds)
        if state is None or file not in state.marks:
            return False
        state.pending.strict = True
        known = state.marks[file]
        last, count = known.mark.last, known.count
        ids = [loc.entry.id for loc in found]
        if last is None or ids != sorted(ids) or last not in ids or ids.index(last) + 1 != count:
            return False
        where = {loc.entry.id: loc for loc in found}
        try:
            if not _move_refs(state, file, where):
                return False
        except Damaged:
            return False
        anchor = where[last]
        state.marks[file] = SegmentMark(Mark.past(anchor, min(anchor.end_offset, size)), count)
        save(vault, state, ack_types, window_seconds)
    return True


def _move_refs(state: State, file: str, where: dict[str, Located]) -> bool:
    """Point every ref into ``file`` at where its entry is now; False when one is gone."""

    def moved(ref: Ref) -> Ref | None:
        if ref.file != file:
            return ref
        loc = where.get(ref.id)
        return None if loc is None else Ref.of(loc)

    pending = {}
    for entry_id, item in state.pending.items():
        ref = moved(item.ref)
        if ref is None:
            return False
        if ref != item.ref:
            pending[entry_id] = item._replace(ref=ref)
    recent = []
    for r in state.recent:
        ref = moved(r.ref)
        if ref is None:
            return False
        recent.append(r._replace(ref=ref))
    races = []
    for race in state.races:
        a, b = moved(race.a), moved(race.b)
        if a is None or b is None:
            return False
        races.append(race._replace(a=a, b=b))
    state.pending.update(pending)
    state.recent[:] = recent
    state.races[:] = races
    return True


def save(
    vault: Vault,
    state: State,
    ack_types: tuple[str, ...],
    window_seconds: float,
    update: Update | None = None,
) -> None:
    """Write the months that changed, then the head, then a view for every agent (each from the one
    it replaces when ``update`` says what changed since that one was current)."""
    from ..keys.roster import agents

    state.pending.save(months_at(vault, ack_types, window_seconds), VERSION)
    folder = vault.state / "coord"
    key = params_key(ack_types, window_seconds)
    if update is not None and update.rebuilt:  # month files no head names any more
        for stale in folder.glob(f"pending-{key}-*.json"):
            if stale.name[len(f"pending-{key}-") : -5] not in state.pending.months:
                stale.unlink(missing_ok=True)
    durable.replace(
        state_path(vault, ack_types, window_seconds), json.dumps(state.to_json()).encode(), durable=False
    )
    prefix = f"view-{key}-"
    names = agents(vault)
    for name in names:
        path = folder / f"{prefix}{name}.json"
        data = _next_view(path, state, name, update)
        durable.replace(path, json.dumps(data.to_json()).encode(), durable=False)
    for stale in folder.glob(f"{prefix}*.json"):  # views of identities that are gone
        if stale.name[len(prefix) : -5] not in set(names):
            stale.unlink(missing_ok=True)


def _next_view(path: Path, state: State, agent: str, update: Update | None) -> View:
    """``agent``'s view of ``state``: the view at ``path`` moved on by what ``update`` touched when
    that view was current when the state was loaded, else computed from every month."""
    if update is None or update.before is None:
        return make_view(state, agent)
    try:
        old = View.from_json(json.loads(path.read_bytes()))
    except (OSError, ValueError):
        old = None
    if old is None or old.agent != agent or old.marks != update.before:
        return make_view(state, agent)
    owed = {ref.id: ref for ref in old.owed}
    for entry_id in update.touched:
        item = state.pending.get(entry_id)
        if item is not None and item.owed_by(agent):
            owed[entry_id] = item.ref
        else:
            owed.pop(entry_id, None)
    return View(agent, dict(state.marks), tuple(owed[k] for k in sorted(owed)), _agent_races(state, agent))


def _agent_races(state: State, agent: str) -> tuple[RacePair, ...]:
    return tuple(r for r in state.races if r.resolved_by is None and agent in (r.a.agent, r.b.agent))


def make_view(state: State, agent: str) -> View:
    """``agent``'s view computed from the whole state (every month is read)."""
    owed = sorted((p.ref for p in state.pending.values() if p.owed_by(agent)), key=lambda ref: ref.id)
    return View(agent, dict(state.marks), tuple(owed), _agent_races(state, agent))


def view(vault: Vault, agent: str, ack_types: tuple[str, ...], window_seconds: float) -> View:
    """What ``agent`` owes and its unresolved races: the saved view when the log has not changed since
    it was computed (a few stats and one small read), else a refresh first."""
    path = view_path(vault, agent, ack_types, window_seconds)
    try:
        cached = View.from_json(json.loads(path.read_bytes()))
        if cached is not None and cached.agent == agent and marks_current(vault, cached.marks):
            return cached
    except (FileNotFoundError, ValueError):
        pass
    update = refresh(vault, ack_types, window_seconds)
    try:  # (the refresh wrote every agent's view when anything changed)
        saved = View.from_json(json.loads(path.read_bytes()))
        if saved is not None and saved.agent == agent and saved.marks == update.state.marks:
            return saved
    except (FileNotFoundError, ValueError):
        pass
    data = make_view(update.state, agent)
    durable.replace(path, json.dumps(data.to_json()).encode(), durable=False)  # next time, the fast path
    return data


# ------------------------------------------------------------------ reading entries back


def materialize(vault: Vault, ref: Ref, checker: Checker) -> Located:
    """The entry a ref points to, read with one seek (or found by id if the file moved under it), with
    its verdict (``Located.verdict``). A caller reading many passes one ``checker``
    (:func:`entry_checker`), so the keys are loaded once. The ref's file comes from derived state:
    one that is not in the vault's ``log/`` (a link out, ``..``) is never opened; the entry is then
    found by id in the log."""
    entry_id, file, offset, end, line = ref.id, ref.file, ref.offset, ref.end, ref.line
    try:
        path = vault.inside(vault.root / file)
        if path.parent != vault.log_dir:
            raise VaultError(f"{file} is not a log segment")
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(end - offset)
        found = segments.scan(data, file, offset=offset, line=line).entries
        if found and found[0].entry.id == entry_id:
            return checker.mark([found[0]])[0]
    except (OSError, VaultError):
        pass
    from ..ledger.logfiles import find_entry

    return checker.mark([find_entry(vault, entry_id)])[0]


def entry_checker(vault: Vault, trust: Trust) -> Checker:
    """What gives every entry a reader shows its verdict, for one operation (the decision notes'
    renames passed in, as the audit does: one verdict everywhere; ``trust``: the machine's pins)."""
    from ..ledger.check import Checker
    from ..project.decisions import renamed_notes

    return Checker(vault, decision_renames=renamed_notes, trust=trust)
