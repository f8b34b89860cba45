"""The log's tail state (``.nexus/tail.json``): where the newest segment ends, and each agent's head.

Derived: each key can be rebuilt from the segments, and is, whenever it is missing, stale or damaged.
Only ``log.py`` (the one module that writes segments) changes it, under the log lock.

* ``segment`` – the newest segment's name; ``size``, ``lines`` – its bytes and newlines checked;
* ``last_id`` – the newest id in the log; ``seg_last`` – the :class:`~nexus.ledger.marks.Mark` after the last
  entry of the newest segment (valid while its bytes up to ``size`` are as they were);
* ``heads`` – agent -> [seq, hash, id] of its newest entry; an entry naming another key than the one
  its author's identity note declares never becomes a head. Heads are high-water marks: a rebuild
  keeps a recorded head that is ahead of the segments, so deleting an agent's last entries stays
  visible to ``verify`` (and the agent's next entry leaves a gap it reports);
* ``recent``, ``forks`` – per agent, its last entries (to tell a fork from a copy) and a fork of its
  chain waiting to be resolved.

A ``tail.json`` of an older layout keeps its heads; everything else in it is rebuilt.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..records import Located
from ..storage import entries, segments
from ..storage.vault import Vault
from ..trust import Trust
from .logfiles import marked, scan_file, segment_files
from .marks import WINDOW, Mark, ends_with_entry

if TYPE_CHECKING:
    from .check import Checker

TAIL_FILE = "tail.json"


def empty(heads: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "segment": None,
        "size": 0,
        "lines": 0,
        "last_id": None,
        "seg_last": None,
        "heads": dict(heads or {}),
    }


def load(vault: Vault) -> dict[str, Any] | None:
    """tail.json as saved, or None when it is missing or unreadable. A state of an older layout (its
    ``seg_last`` is not a mark) keeps its heads but is marked ``stale``: it is rebuilt before use."""
    try:
        state = json.loads((vault.state / TAIL_FILE).read_bytes())
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(state, dict) or not isinstance(state.get("heads"), dict):
        return None
    for key, kind in (("size", int), ("lines", int)):
        if not isinstance(state.get(key), kind):
            return None
    older = "seg_last" not in state
    raw = state.get("seg_last")
    state["seg_last"] = None if raw is None else Mark.from_json(raw)
    if older or (raw is not None and state["seg_last"] is None):
        state["stale"] = True  # an older layout: only its heads are used (high-water marks)
    return state


def copy(state: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a tail state (never mutate a state another holder keeps)."""
    out: dict[str, Any] = json.loads(_dumps(state))
    if out.get("seg_last") is not None:
        out["seg_last"] = Mark.from_json(out["seg_last"])
    return out


def _dumps(state: dict[str, Any]) -> str:
    return json.dumps(state, default=Mark.to_json)


def save(vault: Vault, state: dict[str, Any], path: str | None = None) -> None:
    """Overwrite tail.json in place (callers hold the log lock, so no writer reads it half-written).

    Derived and rebuilt when unreadable, so no fsync and no temp file: it never delays an
    acknowledgement. A reader outside the lock (verify) that catches it mid-write skips it.
    """
    data = _dumps(state).encode()
    path = path or os.fspath(vault.state / TAIL_FILE)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)  # (from offset 0: freshly opened; os.pwrite does not exist on Windows)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


KeyOf = Callable[[str], "str | None"]


_KEYS: dict[str, tuple[tuple[int, int], str | None]] = {}  # identity note -> (mtime, size), key id


def key_reader(vault: Vault) -> KeyOf:
    """agent -> the key id its identity note declares (without YAML; cached while the note's mtime
    and size stay the same, so a catch-up costs one ``stat`` per entry)."""
    local: dict[str, str | None] = {}

    def key_of(agent: str) -> str | None:
        if agent in local:
            return local[agent]
        path = os.fspath(vault.identity_path(agent))
        try:
            st = os.stat(path)
        except OSError:
            local[agent] = None
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        cached = _KEYS.get(path)
        if cached is None or cached[0] != stamp:
            cached = _KEYS[path] = (stamp, vault.key_id_of(agent))
        local[agent] = cached[1]
        return cached[1]

    return key_of


RECENT = 16  # per agent, the last entries the tail state remembers (to tell a fork from a copy)


def absorb(
    state: dict[str, Any],
    located: Located,
    digest: str | None = None,
    key_of: KeyOf | None = None,
    signed: SignatureCheck | None = None,
) -> None:
    """Take one entry into the tail state. With ``signed`` (a signature check, on catch-up and
    rebuild), an entry of an agent that does not continue the agent's chain (another entry with its
    seq, or a seq right after the head that does not name it) is a fork: the agent's chain freezes
    (``state["forks"]``) until a ``reconcile`` entry of that agent acks every entry of the fork."""
    e = located.entry
    heads = state["heads"]
    head = heads.get(e.agent)
    declared = key_of(e.agent) if key_of is not None else None
    if declared is not None and e.v == entries.FORMAT_VERSION and declared != e.key:
        pass  # signed with another key than the author's: forged, never the head of its chain
    else:
        d = digest or entries.entry_hash(e)
        forks = state.setdefault("forks", {})
        recent = state.setdefault("recent", {}).setdefault(e.agent, [])
        fork = forks.get(e.agent)
        ok_head = isinstance(head, list) and len(head) >= 2 and isinstance(head[0], int)
        if fork is not None and e.type == "reconcile" and set(fork["ids"]) <= set(e.ack):
            del forks[e.agent]  # the agent chose a branch: its chain goes on from this entry
            heads[e.agent] = [e.seq, d, e.id]
        elif not ok_head or (
            e.seq > head[0]
            and not (
                signed is not None
                and e.seq == head[0] + 1
                and e.v == entries.FORMAT_VERSION  # (format 2 stores no prev)
                and e.prev != head[1]
            )
        ):
            if signed is None or not signed.strict or signed(located):
                heads[e.agent] = [e.seq, d, e.id]  # (on catch-up, only a validly signed entry)
        elif signed is not None and e.seq <= head[0] + 1:
            other = next((r for r in recent if r[0] == e.seq), None) if e.seq <= head[0] else None
            if e.seq == head[0] + 1 or (other is not None and other[1] != e.id and other[2] != d):
                if not signed(located):
                    pass  # forged or damaged: never part of the chain
                elif not signed.head_ok(e.agent, head):
                    heads[e.agent] = [e.seq, d, e.id]  # the head was damaged or forged: not a fork
                else:
                    ids = sorted(
                        {*(fork["ids"] if fork else []), e.id, *([other[1]] if other is not None else [])}
                    )
                    forks[e.agent] = {"seq": min(e.seq, fork["seq"]) if fork else e.seq, "ids": ids}
            elif e.seq > head[0]:
                heads[e.agent] = [e.seq, d, e.id]
        if signed is not None and heads.get(e.agent, [None, None])[1] == d:
            signed.last[e.agent] = located  # (only each agent's head is kept: memory stays flat)
        recent.append([e.seq, e.id, d])
        del recent[:-RECENT]
    if state["last_id"] is None or e.id > state["last_id"]:
        state["last_id"] = e.id
    state["seg_last"] = Mark.past(located)


class SignatureCheck:
    """Whether an entry is signed by its author's trusted key (the keys loaded once, on first use),
    and the entries this catch-up has met (by hash), to check a head before calling a fork."""

    def __init__(self, vault: Vault, trust: Trust, strict: bool = False) -> None:
        self.vault = vault
        self.trust = trust  # (whose pins decide)
        self.strict = strict  # check every entry before it becomes a head (catch-up: a few entries)
        self.ring: Any = None
        self.last: dict[str, Located] = {}

    def __call__(self, located: Located) -> bool:
        from ..keys import trust
        from .check import check_entry

        if self.ring is None:
            self.ring = trust.load(self.vault, self.trust.home)
        return check_entry(located, self.ring)[0] == "ok"

    def head_ok(self, agent: str, head: list[Any]) -> bool:
        """The head's entry verifies (a head this catch-up never met was checked when it was met)."""
        met = self.last.get(agent)
        if met is None or entries.entry_hash(met.entry) != head[1]:
            return True
        return self(met)


def signature_check(vault: Vault, trust: Trust, strict: bool = False) -> SignatureCheck:
    return SignatureCheck(vault, trust, strict)


def rebuild(vault: Vault, previous: dict[str, Any] | None, trust: Trust) -> dict[str, Any]:
    """The tail state from the segments. The newest segment's size stops where its complete content
    stops, so the caller's catch-up finds (and quarantines) a torn tail after it. ``trust``: whose
    pins decide which entries may be heads."""
    state = empty()
    key_of = key_reader(vault)
    signed = signature_check(vault, trust)
    for name, path in segment_files(vault):
        result = scan_file(vault, path)
        state["seg_last"] = None
        for located in result.entries:
            absorb(state, located, key_of=key_of, signed=signed)
        state.update(segment=name, size=result.end_offset, lines=result.end_line - 1)
    if previous:
        for agent, head in previous.get("heads", {}).items():
            mine = state["heads"].get(agent)
            if isinstance(head, list) and len(head) in (2, 3) and (not mine or head[0] > mine[0]):
                state["heads"][agent] = head
    return state


def carry(vault: Vault, rel: str, old: bytes, new: bytes, added: list[Located]) -> None:
    """After segment ``rel`` was rewritten from ``old`` to ``new`` (under the log lock, having only put
    entries back (``added``, located in ``new``) or cut a person's text), move the tail state to the
    new bytes, so the next append in every agent process need not rebuild it from the whole log. Done
    only when tail.json was exact for ``old`` (its mark holds there, up to its recorded size) and the
    bytes of the mark's entry up to that size are found once, unchanged, in ``new``; otherwise
    tail.json is left as it is and the next append rebuilds it (the safe default)."""
    state = load(vault)
    if state is None or state.get("stale") or state.get("segment") != Path(rel).stem:
        return
    mark, size = state["seg_last"], state["size"]
    if mark is None or mark.last is None or not 0 < mark.offset <= size <= len(old):
        return
    if old[mark.offset : size].strip(b"\r\n") or not ends_with_entry(
        old[max(0, mark.offset - WINDOW) : mark.offset], mark.last
    ):
        return
    before = [s for s in segments.entry_starts(old, mark.last) if s < mark.offset]
    start = before[-1] if before else -1
    chunk = old[start:size]
    found = segments.entry_starts(new, mark.last)
    at = found[0] if len(found) == 1 else -1
    if start < 0 or at < 0 or new[at : at + len(chunk)] != chunk:
        return
    key_of = key_reader(vault)
    for located in added:  # high-water heads: an entry put back may be one this state never saw
        absorb(state, located, key_of=key_of)
    end = at + mark.offset - start
    state["seg_last"] = Mark(end, new.count(b"\n", 0, end) + 1, mark.last, end)
    state["size"] = at + len(chunk)
    state["lines"] = new.count(b"\n", 0, at + len(chunk))
    save(vault, state)


def boundary_ok(path: Path, state: dict[str, Any]) -> bool:
    """The recorded size still ends the recorded last entry (nobody rewrote the file under us): its
    mark holds, with only line breaks after it up to the size."""
    if state.get("stale"):
        return False
    size, mark = state["size"], state.get("seg_last")
    if mark is not None:
        return bool(mark.holds(path, upto=size))
    if size == 0:  # no entry in this segment yet: the size must still end a line
        return True
    with open(path, "rb") as f:
        f.seek(size - 1)
        return f.read(1) == b"\n"


# ------------------------------------------------------------------ the last entries


def tail(vault: Vault, n: int = 10, *, checker: Checker | None = None) -> list[Located]:
    """The last ``n`` entries, oldest first, reading backwards from the end of the newest segments,
    each with its verdict (as :func:`scan_unread`)."""
    if n <= 0:
        return []
    out: list[Located] = []
    for _name, path in reversed(segment_files(vault)):
        found = _tail_of(vault, path, n - len(out))
        out[:0] = found
        if len(out) >= n:
            break
    return marked(vault, out[-n:], checker)


def _tail_of(vault: Vault, path: Path, n: int) -> list[Located]:
    size = path.stat().st_size
    chunk = max(4096, n * 1024)  # about n entries; doubled until n complete entries are in it
    start = size
    with open(path, "rb") as f:
        while True:
            start = max(0, start - chunk)
            f.seek(start)
            data = f.read(size - start)
            if start == 0:
                aligned = 0
            else:
                idx = segments.next_cut(data)  # (just after an end line: the next entry starts there)
                aligned = -1 if idx < 0 else idx + 1
            if aligned >= 0:
                count = segments.count_ends(data, aligned)
                if count > n or start == 0:
                    break
            chunk *= 2
        line = _line_at(vault, path, f, start + aligned, data, start)
    result = segments.scan(data[aligned:], vault.rel(path), offset=start + aligned, line=line)
    return result.entries[-n:]


def _line_at(vault: Vault, path: Path, f: Any, offset: int, data: bytes, data_start: int) -> int:
    """The 1-based line number of the line starting at ``offset``, without reading the whole prefix
    when the tail state knows the line count at a size inside ``data``."""
    state = load(vault)
    if state is not None and not state.get("stale") and state["segment"] == path.stem:
        known, lines = state["size"], state["lines"]
        if data_start <= known <= data_start + len(data):
            if known >= offset:
                return int(lines) - data.count(b"\n", offset - data_start, known - data_start) + 1
            return int(lines) + data.count(b"\n", known - data_start, offset - data_start) + 1
    f.seek(0)
    count, left = 0, offset
    while left > 0:
        block = f.read(min(left, 1 << 20))
        if not block:
            break
        count += block.count(b"\n")
        left -= len(block)
    return count + 1
