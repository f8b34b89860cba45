"""The live-context log: durable signed appends, reading since a cursor, and the tail.

Write path (``append``): exclusive lock on ``.nexus/locks/log.lock``; check the tail of the newest
segment against the derived tail state (catching up on entries other processes wrote, quarantining a
torn tail left by a killed writer); sign; write; fsync; update the derived state; unlock. The call
returns only once the entry is durable.

Derived state under ``.nexus/`` (rebuilt from the segments whenever it is missing, stale or damaged):

* ``tail.json`` – newest segment, its size and line count, last id, and each agent's chain head;
* ``cursors/AGENT.json`` – per segment, the byte offset (and line) up to which AGENT has read.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import durable, entries, segments
from .errors import ForkError, IdentityError, InputError, IntegrityError
from .locks import FileLock, exclusive
from .records import AppendResult, Entry, Located
from .text import SECRET_HINT_RE, check_line, check_name, check_token, check_type, prepare_body
from .vault import Vault

if TYPE_CHECKING:
    from .identity import Signer
    from .trust import Keyring

TAIL_FILE = "tail.json"


# ------------------------------------------------------------------ segment files


def segment_files(vault: Vault) -> list[tuple[str, Path]]:
    """(segment name, path) of every segment, oldest first."""
    log_dir = vault.log_dir
    try:
        names = os.listdir(log_dir)
    except FileNotFoundError:
        return []
    return [(n[:-3], log_dir / n) for n in sorted(names) if n.endswith(".md") and is_segment_name(n[:-3])]


def is_segment_name(name: str) -> bool:
    """A segment file's name without .md: YYYY-MM."""
    return len(name) == 7 and name[4] == "-" and name[:4].isdigit() and name[5:].isdigit()


def scan_file(vault: Vault, path: Path) -> segments.Scan:
    return segments.scan(path.read_bytes(), vault.rel(path))


def iter_entries(vault: Vault) -> Iterator[Located]:
    """Every readable entry of every segment, in log order."""
    for _, path in segment_files(vault):
        yield from scan_file(vault, path).entries


# ------------------------------------------------------------------ tail state
#
# The tail state (``.nexus/tail.json``) is derived: each key can be rebuilt from the segments.
#   segment   newest segment name;  size, lines: bytes and newlines of it that have been checked
#   last_id   the newest id in the log;  seg_last: [offset, id] of the last entry in the newest segment
#   heads     agent -> [seq, hash] of its newest entry; an entry naming another key than the one its
#             author's identity note declares never becomes a head. Heads are high-water marks: a
#             rebuild keeps a recorded head that is ahead of the segments, so deleting an agent's last
#             entries stays visible to ``verify`` (and the agent's next entry leaves a gap it reports).


def _empty_state(heads: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "segment": None,
        "size": 0,
        "lines": 0,
        "last_id": None,
        "seg_last": None,
        "heads": dict(heads or {}),
    }


def _load_state(vault: Vault) -> dict[str, Any] | None:
    try:
        state = json.loads((vault.state / TAIL_FILE).read_bytes())
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(state, dict) or not isinstance(state.get("heads"), dict):
        return None
    for key, kind in (("size", int), ("lines", int)):
        if not isinstance(state.get(key), kind):
            return None
    if "seg_last" not in state:  # an older layout: rebuild it
        return None
    return state


def _save_state(vault: Vault, state: dict[str, Any], path: str | None = None) -> None:
    """Overwrite tail.json in place (callers hold the log lock, so no writer reads it half-written).

    Derived and rebuilt when unreadable, so no fsync and no temp file: it never delays an
    acknowledgement. A reader outside the lock (verify) that catches it mid-write skips it.
    """
    data = json.dumps(state).encode()
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


def _key_reader(vault: Vault) -> KeyOf:
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


def _absorb(
    state: dict[str, Any],
    located: Located,
    digest: str | None = None,
    key_of: KeyOf | None = None,
    signed: _SignatureCheck | None = None,
) -> None:
    """Take one entry into the tail state. With ``signed`` (a signature check, on catch-up and
    rebuild), an entry of an agent that does not continue the agent's chain (another entry with its
    seq, or a seq right after the head that does not name it) is a fork: the agent's chain freezes
    (``state["forks"]``) until a ``reconcile`` entry of that agent acks every entry of the fork."""
    e = located.entry
    heads = state["heads"]
    head = heads.get(e.agent)
    declared = key_of(e.agent) if key_of is not None else None
    if declared is not None and declared != e.key:
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
            e.seq > head[0] and not (signed is not None and e.seq == head[0] + 1 and e.prev != head[1])
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
    state["seg_last"] = [located.offset, e.id]


class _SignatureCheck:
    """Whether an entry is signed by its author's trusted key (the keys loaded once, on first use),
    and the entries this catch-up has met (by hash), to check a head before calling a fork."""

    def __init__(self, vault: Vault, strict: bool = False) -> None:
        self.vault = vault
        self.strict = strict  # check every entry before it becomes a head (catch-up: a few entries)
        self.ring: Any = None
        self.last: dict[str, Located] = {}

    def __call__(self, located: Located) -> bool:
        from . import trust
        from .verify import check_entry

        if self.ring is None:
            self.ring = trust.load(self.vault)
        return check_entry(located, self.ring)[0] == "ok"

    def head_ok(self, agent: str, head: list[Any]) -> bool:
        """The head's entry verifies (a head this catch-up never met was checked when it was met)."""
        met = self.last.get(agent)
        if met is None or entries.entry_hash(met.entry) != head[1]:
            return True
        return self(met)


def _signature_check(vault: Vault, strict: bool = False) -> _SignatureCheck:
    return _SignatureCheck(vault, strict)


def _rebuild_state(vault: Vault, previous: dict[str, Any] | None) -> dict[str, Any]:
    """The tail state from the segments. The newest segment's size stops where its complete content
    stops, so the caller's catch-up finds (and quarantines) a torn tail after it."""
    state = _empty_state()
    key_of = _key_reader(vault)
    signed = _signature_check(vault)
    for name, path in segment_files(vault):
        result = scan_file(vault, path)
        state["seg_last"] = None
        for located in result.entries:
            _absorb(state, located, key_of=key_of, signed=signed)
        state.update(segment=name, size=result.end_offset, lines=result.end_line - 1)
    if previous:
        for agent, head in previous.get("heads", {}).items():
            mine = state["heads"].get(agent)
            if isinstance(head, list) and len(head) in (2, 3) and (not mine or head[0] > mine[0]):
                state["heads"][agent] = head
    return state


def _quarantine(vault: Vault, path: Path, torn: segments.Torn) -> str:
    """Move a torn tail's bytes to ``.nexus/quarantine/`` and cut it from the segment. Caller holds
    the log lock.

    Converges after a crash at any step: the copy is named by the segment, the offset and a hash of
    the bytes, so a crash between the copy and the cut finds the same copy next time and only cuts;
    a crash inside the copy leaves a temp file the next ``durable.replace`` there removes."""
    import hashlib

    with open(path, "rb") as f:
        f.seek(torn.offset)
        data = f.read()
    digest = hashlib.sha256(data).hexdigest()[:16]
    target = vault.state / "quarantine" / f"{path.stem}-{torn.offset}-{digest}.torn"
    durable.sweep_temp_files(target.parent, any_name=True)  # a copy a killed recovery left half-made
    try:
        same = target.read_bytes() == data
    except OSError:
        same = False
    if not same:
        durable.replace(target, data)
    durable.truncate(path, torn.offset)
    return vault.rel(target)


def _checked_state(
    vault: Vault, quarantined: list[str], known: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The tail state, brought up to date with the newest segment. Caller holds the log lock.

    ``known`` is a state this process holds in memory (fresher than tail.json when it saves lazily).
    """
    files = segment_files(vault)
    stored = _load_state(vault)
    if (
        known is not None
        and known["segment"]
        and (known["segment"], vault.log_dir / (known["segment"] + ".md")) not in files
    ):
        known = None  # its segment is gone (the vault was replaced): nothing of it can be trusted
    base = known if known is not None else stored
    if (
        known is not None
        and stored is not None
        and stored["segment"] == known["segment"]
        and (stored["size"] > known["size"])
    ):
        base = stored  # another process got further than this one
    if not files:
        return _empty_state(base["heads"] if base else None)
    name, path = files[-1]
    size = path.stat().st_size
    if base is None or base["segment"] != name or base["size"] > size or not _boundary_ok(path, base):
        if (
            base is not stored
            and stored is not None
            and stored["segment"] == name
            and (stored["size"] <= size and _boundary_ok(path, stored))
        ):  # this process's state is stale but tail.json is exact (the watcher moved it after a rewrite)
            state: dict[str, Any] = json.loads(json.dumps(stored))
            for agent, head in (base or {}).get("heads", {}).items():  # heads are high-water marks
                mine = state["heads"].get(agent)
                if isinstance(head, list) and len(head) in (2, 3) and (not mine or head[0] > mine[0]):
                    state["heads"][agent] = head
        else:
            state = _rebuild_state(vault, base)
    else:
        state = json.loads(json.dumps(base))  # a deep copy: never mutate the caller's state
    if size > state["size"]:  # other writers (or a person) added bytes: catch up
        with open(path, "rb") as f:
            f.seek(state["size"])
            data = f.read(size - state["size"])
        result = segments.scan(data, vault.rel(path), offset=state["size"], line=state["lines"] + 1)
        key_of = _key_reader(vault)
        signed = _signature_check(vault, strict=True)  # what others wrote since: a forged entry
        for located in result.entries:  # never becomes the head the next entry chains on
            _absorb(state, located, key_of=key_of, signed=signed)
        if result.torn is not None:
            quarantined.append(_quarantine(vault, path, result.torn))
            state["size"], state["lines"] = result.end_offset, result.end_line - 1
        else:
            state["size"], state["lines"] = size, state["lines"] + data.count(b"\n")
    return state


def carry_tail_state(vault: Vault, rel: str, old: bytes, new: bytes, added: list[Located]) -> None:
    """After the watcher rewrote segment ``rel`` from ``old`` to ``new`` (under the log lock, having
    only put entries back (``added``, located in ``new``) or cut a person's text), move the log's tail
    state (``tail.json``) to the new bytes, so the next append in every agent process need not rebuild
    it from the whole log. Done only when tail.json was exact for ``old`` (its recorded size ends its
    recorded last entry there) and that entry's bytes are found once, unchanged, in ``new``; otherwise
    tail.json is left as it is and the next append rebuilds it (the safe default)."""
    state = _load_state(vault)
    if state is None or state.get("segment") != Path(rel).stem or not state.get("seg_last"):
        return
    start, last = state["seg_last"]
    size = state["size"]
    if not isinstance(start, int) or not isinstance(last, str) or not 0 <= start < size <= len(old):
        return
    chunk = old[start:size]
    begin = f"{entries.BEGIN_PREFIX}{last} %%".encode()
    end_line = chunk.rstrip(b"\r\n").rsplit(b"\n", 1)[-1]
    if not (
        chunk.startswith(begin)
        and chunk.endswith(b"\n")
        and end_line.startswith(entries.END_PREFIX.encode())
        and f'"id":"{last}"'.encode() in end_line
    ):
        return
    at = new.find(begin)
    if at < 0 or new.find(begin, at + 1) >= 0 or new[at : at + len(chunk)] != chunk:
        return
    key_of = _key_reader(vault)
    for located in added:  # high-water heads: an entry put back may be one this state never saw
        _absorb(state, located, key_of=key_of)
    state["seg_last"] = [at, last]
    state["size"] = at + len(chunk)
    state["lines"] = new.count(b"\n", 0, at + len(chunk))
    _save_state(vault, state)


def _boundary_ok(path: Path, state: dict[str, Any]) -> bool:
    """The recorded size still ends the recorded last entry (nobody rewrote the file under us)."""
    size = state["size"]
    seg_last = state.get("seg_last")
    with open(path, "rb") as f:
        if not seg_last:  # no entry in this segment yet: the size must still end a line
            if size == 0:
                return True
            f.seek(size - 1)
            return f.read(1) == b"\n"
        start, last = seg_last
        if not isinstance(start, int) or not isinstance(last, str) or not 0 <= start < size:
            return False
        f.seek(start)
        chunk = f.read(size - start)
    if not chunk.startswith(f"{entries.BEGIN_PREFIX}{last} %%".encode()) or not chunk.endswith(b"\n"):
        return False
    end_line = chunk.rstrip(b"\r\n").rsplit(b"\n", 1)[-1]
    return end_line.startswith(entries.END_PREFIX.encode()) and f'"id":"{last}"'.encode() in end_line


# ------------------------------------------------------------------ append

SAVE_EVERY = 1  # a long-lived writer saves tail.json at least this often (and on flush/close/exit)


class LogWriter:
    """Appends to one vault's log; keeps the tail state in memory between appends.

    Under the log lock each append checks that nothing changed since its own last append (the log
    folder's mtime, and the newest segment's inode and size): then it writes at once; otherwise it
    catches up from the segments as a fresh process would. Durability is the same either way: every
    entry is fsynced before ``append`` returns. Only the derived ``tail.json`` is saved lazily.
    """

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self._lock = FileLock(vault.lock("log"))
        self._state: dict[str, Any] | None = None
        self._stamp: tuple[int, int, int] | None = None  # (log dir mtime, segment inode, size)
        self._unsaved = 0
        self._cursors: dict[str, tuple[tuple[int, int, int], str | None]] = {}
        self._log_dir = vault.log_dir
        self._paths: dict[str, tuple[Path, str]] = {}  # segment name -> (path, vault-relative path)
        self._cursor_files: dict[str, Path] = {}
        self._tail_path = os.fspath(vault.state / TAIL_FILE)
        self._fd = -1  # the newest segment, open for appending, kept between appends (inode in _stamp)

    def _segment(self, name: str) -> tuple[Path, str]:
        found = self._paths.get(name)
        if found is None:
            path = self._log_dir / f"{name}.md"
            found = self._paths[name] = (path, f"{self.vault.rel(self._log_dir)}/{name}.md")
        return found

    def append(  # noqa: C901
        self,
        signer: Signer,
        *,
        channel: str,
        type: str,
        summary: str,
        body: str | None = None,
        ack: tuple[str, ...] = (),
        via: str | None = None,
        agent: str | None = None,
        chain: tuple[int, str] | None = None,
    ) -> AppendResult:
        """Append one signed entry and return once it is durable (see :func:`append`). ``chain``:
        (seq, prev) to continue from instead of the agent's head (only :func:`resolve_fork`)."""
        agent = check_name(agent or signer.name)
        channel = check_token(channel, "channel")
        type = check_type(type)
        summary = check_line(summary, "summary")
        body, body_changed = prepare_body(body)
        for ack_id in ack:
            if not entries.ID_RE.fullmatch(ack_id):
                raise InputError(f"--ack {ack_id!r} is not an entry id (26 characters, as printed by append)")
        for what, part in (("the summary", summary), ("the body", body)):
            if part and SECRET_HINT_RE.search(part):  # every agent's brief shows an entry: no secrets
                from .scan import check_secrets

                check_secrets(part, f"{what} of the entry", self.vault.root)
        missing = _missing_entry(self.vault, ack)
        if missing is not None:
            raise InputError(f"--ack {missing}: no entry with this id in the log")
        seen = self._seen(agent)
        quarantined: list[str] = []
        log_dir = self._log_dir
        with self._lock:
            fd, self._fd = self._fd, -1  # (kept again only once this append succeeds)
            dir_mtime: int | None = None
            ino = size = -1
            try:
                fast = False
                if self._state is not None and self._stamp is not None and fd >= 0:
                    path, rel = self._segment(self._state["segment"])
                    try:
                        dir_mtime = os.stat(log_dir).st_mtime_ns
                        st = os.stat(path)
                    except FileNotFoundError:
                        pass
                    else:  # (the stamp's inode is the open fd's: the path still names that file)
                        fast = (dir_mtime, st.st_ino, st.st_size) == self._stamp
                        ino, size = st.st_ino, st.st_size
                if fast:
                    state = self._state
                    assert state is not None
                else:
                    adopted = None
                    if fd >= 0 and self._stamp is not None and (dir_mtime, ino) == self._stamp[:2]:
                        adopted = self._adopt(path, size)  # another process appended to this file
                    if adopted is not None:
                        state = adopted
                    else:
                        if fd >= 0:
                            os.close(fd)
                            fd = -1
                        log_dir.mkdir(exist_ok=True)
                        state = _checked_state(self.vault, quarantined, self._state)
                entry_id, ms = entries.new_id_ms(after=state["last_id"])
                ts = entries.utc_ts(ms)
                name = entries.segment_name(ts)
                if state["segment"] is None or name > state["segment"]:  # a new month: a new segment
                    if fd >= 0:
                        os.close(fd)
                        fd = -1
                    fast = False
                    path, rel = self._segment(name)
                    if not path.exists():
                        durable.create_exclusive(path, segments.preamble(name).encode())
                    text = path.read_bytes()
                    state.update(segment=name, size=len(text), lines=text.count(b"\n"), seg_last=None)
                else:  # (if the clock went back across a month: stay in the newest segment)
                    name = state["segment"]
                    path, rel = self._segment(name)
                fork = state.get("forks", {}).get(agent)
                if fork is not None and chain is None:
                    raise ForkError(
                        f"{agent}'s chain forked at seq {fork['seq']}: entries {', '.join(fork['ids'])} "
                        f"continue the same entry ({agent} ran from two copies of the vault); nothing "
                        f"was appended. Choose the branch to go on from: `nexus log resolve-fork "
                        f"--agent {agent} --keep ID` (both branches stay in the log)"
                    )
                head: Any = state["heads"].get(agent) if chain is None else [chain[0] - 1, chain[1]]
                fields: dict[str, Any] = dict(
                    id=entry_id,
                    ts=ts,
                    agent=agent,
                    channel=channel,
                    type=type,
                    summary=summary,
                    body=body,
                    ack=tuple(dict.fromkeys(ack)),
                    seen=seen,
                    seq=(head[0] + 1) if head else 1,
                    prev=head[1] if head else None,
                    key=signer.key_id,
                    via=via,
                )
                canonical = entries.canonical_fields(**fields)
                entry = Entry(**fields, sig=signer.sign(entries.SIGN_CONTEXT + canonical))
                digest = entries.hash_canonical(canonical, entry.sig)
                text_bytes = entries.render(entry).encode("utf-8")
                lead = b"" if fast else _separator_needed(path, state["size"])
                if fd < 0:
                    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                    ino = os.fstat(fd).st_ino
                # Invalidate the in-memory state first: if the write fails, the next append must
                # look at the file again instead of trusting a size that may be wrong.
                self._stamp = None
                before = os.fstat(fd).st_size
                try:
                    durable.append_fd(fd, lead + text_bytes)
                except BaseException as err:
                    _undo_append(fd, before, err)
                    raise
            except BaseException:
                if fd >= 0:
                    os.close(fd)
                raise
            self._fd = fd
            # The entry is durable: from here on nothing may turn the append into a failure (a retry
            # would write it twice). Derived state that cannot be written is rebuilt by the next append.
            start = state["size"] + len(lead)
            first_line = state["lines"] + lead.count(b"\n") + 1
            n_lines = text_bytes.count(b"\n")
            located = Located(
                entry, rel, first_line, first_line + n_lines - 2, start, start + len(text_bytes), "ok"
            )
            state["size"] = start + len(text_bytes)
            state["lines"] = first_line - 1 + n_lines
            _absorb(state, located, digest)
            self._state = state
            try:
                if not fast or dir_mtime is None:  # (a new segment changes the folder's mtime)
                    dir_mtime = os.stat(log_dir).st_mtime_ns
                self._stamp = (dir_mtime, ino, state["size"])
                self._unsaved += 1
                if not fast or self._unsaved >= SAVE_EVERY:
                    self._save()
            except OSError:  # (tail.json is derived: the next append looks at the files again)
                self._stamp = None
            with contextlib.suppress(OSError):  # a head that lags is normal (heads.py)
                from . import heads

                heads.write(self.vault, signer, agent, entry.seq, entry.id, digest)
        return AppendResult(located, tuple(quarantined), tuple(body_changed))

    def _adopt(self, path: Path, size: int) -> dict[str, Any] | None:
        """tail.json as another writer left it, when it describes the newest segment exactly as it is
        now (the usual case with several writer processes: each saves it under the lock after its
        append). Spares listing the segments and copying the state; None: take the full check."""
        stored = _load_state(self.vault)
        if (
            stored is None
            or self._state is None
            or stored["segment"] != self._state["segment"]
            or (stored["size"] != size)
            or not _boundary_ok(path, stored)
        ):
            return None
        return stored

    def _save(self) -> None:
        if self._state is not None and self._unsaved:
            _save_state(self.vault, self._state, self._tail_path)
            self._unsaved = 0

    def flush(self) -> None:
        """Save the derived tail state now (appends are durable without it)."""
        if self._state is not None and self._unsaved:
            with self._lock:
                stored = _load_state(self.vault)
                if (
                    stored is None
                    or stored.get("segment") != self._state["segment"]
                    or (stored["size"] <= self._state["size"])
                ):
                    self._save()

    def close(self) -> None:
        self.flush()
        self._lock.close()
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def _seen(self, agent: str) -> str | None:
        """The last id ``agent`` has read (its cursor), cached by the cursor file's identity."""
        path = self._cursor_files.get(agent)
        if path is None:
            path = self._cursor_files[agent] = _cursor_path(self.vault, agent)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        cached = self._cursors.get(agent)
        if cached and cached[0] == key:
            return cached[1]
        seen = read_cursor(self.vault, agent).get("seen")
        seen = seen if isinstance(seen, str) else None
        self._cursors[agent] = (key, seen)
        return seen


_WRITERS: dict[tuple[int, Path], LogWriter] = {}


def writer(vault: Vault) -> LogWriter:
    """This process's writer for ``vault`` (one per vault; a forked child gets its own)."""
    key = (os.getpid(), vault.root)
    found = _WRITERS.get(key)
    if found is None:
        if not _WRITERS:
            import atexit

            atexit.register(_flush_all)
        found = _WRITERS[key] = LogWriter(vault)
    return found


def _flush_all() -> None:
    for (pid, _root), w in list(_WRITERS.items()):
        if pid == os.getpid():
            with contextlib.suppress(OSError):  # derived state only; the next writer rebuilds it
                w.flush()


def append(
    vault: Vault,
    signer: Signer,
    *,
    channel: str,
    type: str,
    summary: str,
    body: str | None = None,
    ack: tuple[str, ...] = (),
    via: str | None = None,
    agent: str | None = None,
) -> AppendResult:
    """Append one signed entry and return once it is durable.

    ``agent`` defaults to the signer; it differs only when the watcher signs a person's text
    (``via="watcher"``) with that person's key.
    """
    return writer(vault).append(
        signer, channel=channel, type=type, summary=summary, body=body, ack=ack, via=via, agent=agent
    )


def _separator_needed(path: Path, size: int) -> bytes:
    """Bytes to write first so the entry starts after a blank line."""
    if size == 0:
        return b""
    with open(path, "rb") as f:
        f.seek(max(0, size - 2))
        last = f.read(2)
    if last.endswith(b"\n\n") or (size == 1 and last == b"\n"):
        return b""
    return b"\n" if last.endswith(b"\n") else b"\n\n"


def resolve_fork(vault: Vault, signer: Signer, keep: str) -> AppendResult:
    """End a fork of ``signer``'s chain: a signed ``reconcile`` entry that continues the branch holding
    entry ``keep`` (from its newest entry) and acks every entry of the agent from the fork on, so
    every machine sees the same choice. Both branches stay in the log."""
    from . import trust
    from .verify import check_entry

    agent = signer.name
    ring = trust.load(vault)
    mine = [
        loc for loc in iter_entries(vault) if loc.entry.agent == agent and check_entry(loc, ring)[0] == "ok"
    ]
    by_id = {loc.entry.id: loc for loc in mine}
    if keep not in by_id:
        raise InputError(f"{keep!r} is not an entry of {agent} that verifies")
    digests = {loc.entry.id: entries.entry_hash(loc.entry) for loc in mine}
    children: dict[str, list[Located]] = {}
    for loc in mine:
        if loc.entry.prev is not None:
            children.setdefault(loc.entry.prev, []).append(loc)
    tip = by_id[keep]
    while children.get(digests[tip.entry.id]):  # the newest entry on the branch from ``keep``
        tip = max(children[digests[tip.entry.id]], key=lambda loc: (loc.entry.seq, loc.entry.id))
    seqs: dict[int, int] = {}
    for loc in mine:
        seqs[loc.entry.seq] = seqs.get(loc.entry.seq, 0) + 1
    forked = min((seq for seq, n in seqs.items() if n > 1), default=None)
    if forked is None:
        raise InputError(f"{agent}'s chain has no fork to resolve")
    ack = tuple(loc.entry.id for loc in mine if loc.entry.seq >= forked and loc.entry.id != tip.entry.id)
    return writer(vault).append(
        signer,
        channel="log",
        type="reconcile",
        summary=f"resolve the fork of {agent}'s chain at seq {forked}: go on from {tip.entry.id}",
        body=f"Kept the branch of {keep} (newest {tip.entry.id}); the other entries from seq {forked} "
        "on stay in the log, acknowledged here.",
        ack=(*ack, tip.entry.id),
        chain=(tip.entry.seq + 1, digests[tip.entry.id]),
    )


def _undo_append(fd: int, before: int, err: BaseException) -> None:
    """A write or fsync of an entry failed: cut the segment back to where the append began, so a
    failed append leaves no entry behind (its retry is then the only copy). Called under the lock."""
    try:
        os.ftruncate(fd, before)
    except OSError as cut:
        raise IntegrityError(
            f"appending failed ({err}) and the partial entry could not be removed ({cut}): it may be "
            "in the log; check with `nexus log tail` before retrying"
        ) from err
    with contextlib.suppress(OSError):  # the cut is visible to every reader even if this fails
        os.fsync(fd)


def repair_tail(vault: Vault) -> list[str]:
    """Quarantine a torn tail, if any (what the next append would do); return what was moved."""
    quarantined: list[str] = []
    with exclusive(vault.lock("log")):
        state = _checked_state(vault, quarantined)
        _save_state(vault, state)
    return quarantined


# ------------------------------------------------------------------ cursors and reading


def _cursor_path(vault: Vault, agent: str) -> Path:
    return vault.state / "cursors" / f"{check_name(agent)}.json"


def read_cursor(vault: Vault, agent: str) -> dict[str, Any]:
    try:
        data = json.loads(_cursor_path(vault, agent).read_bytes())
    except (FileNotFoundError, ValueError):
        return {"seen": None, "segments": {}}
    if not isinstance(data, dict) or not isinstance(data.get("segments"), dict):
        return {"seen": None, "segments": {}}
    return data


def _cursor_start(path: Path, size: int, mark: Any) -> tuple[int, int, str | None]:
    """Where to resume in a segment: (offset, line, last id read there), or (0, 1, None) when the
    saved position no longer ends the entry it ended when saved (the file was edited before it)."""
    if not isinstance(mark, list) or len(mark) not in (3, 4):
        return 0, 1, None
    offset, line, last = mark[:3]
    if not isinstance(offset, int) or not isinstance(line, int) or not isinstance(last, str):
        return 0, 1, None
    if offset > size or offset <= 0:
        return 0, 1, None
    with open(path, "rb") as f:
        f.seek(max(0, offset - 8192))
        window = f.read(min(offset, 8192))
    tail_line = window.rstrip(b"\r\n").rsplit(b"\n", 1)[-1]
    if (
        window.endswith(b"\n")
        and tail_line.startswith(entries.END_PREFIX.encode())
        and (f'"id":"{last}"'.encode() in tail_line)
    ):
        return offset, line, last
    return 0, 1, None


def unread(vault: Vault, agent: str, *, advance: bool = True, ring: Keyring | None = None) -> list[Located]:
    """Entries by others that ``agent`` has not read, oldest first, each with its verdict (see
    :func:`scan_unread`); advances the cursor unless told not."""
    items, cursor = scan_unread(vault, agent, ring=ring)
    if advance and cursor is not None:
        advance_cursor(vault, agent, cursor)
    return items


def scan_unread(
    vault: Vault, agent: str, *, ring: Keyring | None = None
) -> tuple[list[Located], dict[str, Any] | None]:
    """Entries by others that ``agent`` has not read, oldest first, and the cursor that marks them
    read (``None`` when it would not change); nothing is written. See :func:`advance_cursor`.

    Each entry carries its verdict (``Located.verdict``: "ok" only when it is canonical and signed by
    its author's trusted key, ``ring``, default this machine's pins): readers show the others apart.

    The cursor keeps, per segment, the byte offset just after the last entry read there and the
    segment's size when read, so a read opens only segments that changed and scans only what was
    added. If the file changed before that offset the segment is scanned again from the start, and
    entries up to the last id read (``seen``) are skipped.
    """
    if not vault.identity_path(check_name(agent)).is_file():
        raise IdentityError(f"unknown agent {agent!r}: run `nexus agent add {agent}` first")
    cursor = read_cursor(vault, agent)
    seen = cursor.get("seen") if isinstance(cursor.get("seen"), str) else None
    arrived_at = cursor.get("arrived", 0) if isinstance(cursor.get("arrived"), int) else 0
    arrived, arrived_end = _arrivals_since(vault, arrived_at)
    out, marks, newest_seen = scan_after(
        vault,
        cursor["segments"],
        seen,
        keep=lambda e: e.agent != agent,
        arrived=arrived if seen is not None else frozenset(),
    )
    out = _marked(vault, out, ring)
    if newest_seen != seen or marks != cursor["segments"] or arrived_end != arrived_at:
        saved: dict[str, Any] = {"seen": newest_seen, "segments": marks}
        if arrived_end:
            saved["arrived"] = arrived_end
        return out, saved
    return out, None


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


def scan_after(  # noqa: C901
    vault: Vault,
    segment_marks: dict[str, Any],
    seen: str | None,
    keep: Callable[[Entry], bool] | None = None,
    arrived: set[str] | frozenset[str] = frozenset(),
) -> tuple[list[Located], dict[str, Any], str | None]:
    """Entries newer than ``seen`` (or in ``arrived``: merged in older than it) after the per-segment
    ``segment_marks`` (a cursor's ``segments``), oldest first and only those ``keep`` accepts; the
    marks after them; and the newest id met.

    Opens only segments whose size changed since their mark and reads only what follows it; a
    segment changed before its mark is scanned again from its start, skipping ids up to ``seen``.
    """
    marks: dict[str, Any] = dict(segment_marks)
    out: list[Located] = []
    newest_seen = seen
    log_dir = vault.log_dir
    prefix = os.fspath(log_dir) + os.sep
    try:
        names = sorted(n[:-3] for n in os.listdir(log_dir) if n.endswith(".md") and is_segment_name(n[:-3]))
    except FileNotFoundError:
        names = []
    for name in names:
        try:
            size = os.stat(f"{prefix}{name}.md").st_size  # (a str path: Path objects cost ~10 µs each)
        except FileNotFoundError:
            continue
        mark = marks.get(name)
        if isinstance(mark, list) and len(mark) == 4 and mark[3] == size:
            continue  # unchanged since the last read: not even opened, so old segments cost nothing
        path = log_dir / f"{name}.md"
        offset, line, _last = _cursor_start(path, size, mark)
        if offset == size:
            if offset and isinstance(mark, list):
                marks[name] = [*mark[:3], size]
            continue
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(size - offset)
        result = segments.scan(data, vault.rel(path), offset=offset, line=line)
        for located in result.entries:
            e = located.entry
            if seen is not None and e.id <= seen and e.id not in arrived:
                continue
            if newest_seen is None or e.id > newest_seen:
                newest_seen = e.id
            if keep is None or keep(e):
                out.append(located)
        if result.entries:
            last = result.entries[-1]
            marks[name] = [last.end_offset, last.line_end + 1, last.entry.id, size]
        elif offset and isinstance(mark, list):
            marks[name] = [*mark[:3], size]  # (only text outside entries was added)
    return out, marks, newest_seen


def _marked(vault: Vault, items: list[Located], ring: Keyring | None) -> list[Located]:
    if not items:
        return items
    from .verify import mark  # (imports the signature check only when there is something to check)

    return mark(items, ring, vault)


def advance_cursor(vault: Vault, agent: str, cursor: dict[str, Any]) -> None:
    """Save ``agent``'s cursor (as returned by :func:`scan_unread`) durably."""
    durable.replace(_cursor_path(vault, agent), json.dumps(cursor).encode())


def tail(vault: Vault, n: int = 10, *, ring: Keyring | None = None) -> list[Located]:
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
    return _marked(vault, out[-n:], ring)


def _tail_of(vault: Vault, path: Path, n: int) -> list[Located]:
    size = path.stat().st_size
    chunk = max(4096, n * 1024)  # about n entries; doubled until n complete entries are in it
    start = size
    marker = b"\n" + entries.BEGIN_PREFIX.encode()
    with open(path, "rb") as f:
        while True:
            start = max(0, start - chunk)
            f.seek(start)
            data = f.read(size - start)
            if start == 0:
                aligned = 0
            else:
                idx = data.find(marker)
                aligned = -1 if idx < 0 else idx + 1
            if aligned >= 0:
                count = data.count(entries.BEGIN_PREFIX.encode(), aligned)
                if count > n or start == 0:
                    break
            chunk *= 2
        line = _line_at(vault, path, f, start + aligned, data, start)
    result = segments.scan(data[aligned:], vault.rel(path), offset=start + aligned, line=line)
    return result.entries[-n:]


def _line_at(vault: Vault, path: Path, f: Any, offset: int, data: bytes, data_start: int) -> int:
    """The 1-based line number of the line starting at ``offset``, without reading the whole prefix
    when the tail state knows the line count at a size inside ``data``."""
    state = _load_state(vault)
    if state is not None and state["segment"] == path.stem:
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


def _missing_entry(vault: Vault, ids: tuple[str, ...]) -> str | None:
    """The first of ``ids`` no segment holds (a byte search from the end, its month first), or None."""
    if not ids:
        return None
    import mmap

    files = segment_files(vault)
    for entry_id in ids:
        needle = f"\n{entries.BEGIN_PREFIX}{entry_id} %%\n".encode()
        month = entries.segment_name(entries.utc_ts(entries.decode_id_ms(entry_id)))
        found = False
        for _name, path in sorted(files, key=lambda item: item[0] != month):
            try:
                with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    found = mm.rfind(needle) >= 0
            except (OSError, ValueError):  # (an empty file cannot be mapped)
                continue
            if found:
                break
        if not found:
            return entry_id
    return None


def find_entry(vault: Vault, entry_id: str) -> Located:
    """The entry with this id (a full scan, newest segment first)."""
    from .errors import NotFoundError

    ms = entries.decode_id_ms(entry_id) if entries.ID_RE.fullmatch(entry_id) else None
    files = segment_files(vault)
    if ms is not None:
        month = entries.segment_name(entries.utc_ts(ms))
        files.sort(key=lambda item: item[0] != month)
    for _name, path in files:
        for located in scan_file(vault, path).entries:
            if located.entry.id == entry_id:
                return located
    raise NotFoundError(f"no entry {entry_id} in the log")


def raise_integrity(message: str) -> None:
    raise IntegrityError(message)
