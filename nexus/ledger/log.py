"""The live-context log, written: durable signed appends, and every other write to a log segment.

This is the ONLY module that writes segments. Appends (``append``) and everything else that changes a
segment's bytes (the watcher's notices, entries it puts back, a person's text it cuts once signed,
``nexus log recover --restore``, a conflict copy's entries imported, quarantining a torn tail) go
through here, under the log lock
(``.nexus/locks/log.lock``), written durably, with the tail state moved along.

Write path (``append``): exclusive lock; check the tail of the newest segment against the derived tail
state (catching up on entries other processes wrote, quarantining a torn tail left by a killed
writer); sign; write; fsync; update the derived state; unlock. The call returns only once the entry
is durable.

Reading lives beside it: ``logfiles.py`` (the segment files, every entry, the last ones, one by id),
``cursors.py`` (what an agent has not read) and ``tailstate.py`` (``tail.json``). Their public names
are imported here, so ``log.X`` stays the log's whole API for callers.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

# an append's answers (records.AppendResult, records.Notice) are named through the package: their
# family loads with the first write, not with every reader of the log
from .. import records
from ..errors import ForkError, InputError, IntegrityError
from ..records import Entry, Located
from ..storage import durable, entries, segments
from ..storage.locks import FileLock, exclusive
from ..storage.text import check_line, check_name, check_token, check_type, prepare_body, secret_hint
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust
from . import shadow, tailstate
from .cursors import (
    ARRIVALS_FILE,
    Cursor,
    advance_cursor,
    cursor_path,
    note_arrivals,
    read_cursor,
    scan_after,
    scan_unread,
    unread,
)
from .logfiles import find_entry, is_segment_name, iter_entries, missing_entry, scan_file, segment_files
from .marks import Mark
from .tailstate import TAIL_FILE, tail

if TYPE_CHECKING:
    from ..keys.identity import Signer

__all__ = [
    "ARRIVALS_FILE",
    "TAIL_FILE",
    "Cursor",
    "LogWriter",
    "advance_cursor",
    "append",
    "append_notice",
    "cut_text",
    "find_entry",
    "is_segment_name",
    "iter_entries",
    "locked",
    "note_arrivals",
    "read_cursor",
    "repair_tail",
    "replace_segment",
    "resolve_fork",
    "restore_entry",
    "scan_after",
    "scan_file",
    "scan_unread",
    "segment_files",
    "tail",
    "unread",
    "writer",
]


# ------------------------------------------------------------------ writes other than appends


@contextlib.contextmanager
def locked(vault: Vault) -> Iterator[None]:
    """Hold the log lock: no append, restore or cut changes a segment meanwhile."""
    with exclusive(vault.lock("log")):
        yield


def separator(last: bytes, size: int) -> bytes:
    """What to write first so that what follows starts after a blank line, in a file of ``size``
    bytes whose last (up to two) bytes are ``last``."""
    if size == 0 or last.endswith(b"\n\n") or (size == 1 and last == b"\n"):
        return b""
    return b"\n" if last.endswith(b"\n") else b"\n\n"


def _separator_needed(path: Path | str, size: int) -> bytes:
    if size == 0:
        return b""
    with open(path, "rb") as f:
        f.seek(max(0, size - 2))
        return separator(f.read(2), size)


def append_notice(vault: Vault, path: Path, text: str) -> None:
    """Write ``text`` (a notice, ``shadow.render_notice``) at the end of segment ``path``, after a
    blank line, durably and under the log lock. Entries' bytes stay as they are: the tail state
    catches up on it as on any text after the last entry."""
    with locked(vault):
        durable.append(path, _separator_needed(path, path.stat().st_size) + text.encode() + b"\n")


def replace_segment(vault: Vault, path: Path, old: bytes, new: bytes, added: Sequence[Located] = ()) -> None:
    """Replace segment ``path``, whose bytes are ``old``, with ``new`` (atomically, durably), and
    move the tail state to the new bytes when it can be shown to hold there (else the next append
    rebuilds it). ``added``: entries put back, located in ``new``. The caller holds :func:`locked`
    and read ``old`` under it."""
    durable.replace(path, new)
    tailstate.carry(vault, vault.rel(path), old, new, list(added))


def cut_text(vault: Vault, path: Path, data: bytes, spans: Sequence[tuple[int, int]]) -> bytes:
    """Take the byte ranges ``spans`` (text outside any entry, in order) out of segment ``path``,
    whose bytes are ``data``; return the new bytes. The caller holds :func:`locked`."""
    out = bytearray()
    prev = 0
    for start, stop in spans:
        out += data[prev:start]
        prev = stop
    out += data[prev:]
    new = bytes(out)
    replace_segment(vault, path, data, new)
    return new


def repair_tail(vault: Vault, trust: Trust) -> list[str]:
    """Quarantine a torn tail, if any (what the next append would do); return what was moved."""
    quarantined: list[str] = []
    with locked(vault):
        state = _checked_state(vault, quarantined, trust)
        tailstate.save(vault, state)
    return quarantined


# ------------------------------------------------------------------ the tail, checked under the lock


def quarantine(vault: Vault, path: Path, torn: segments.Torn) -> str:
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
    vault: Vault, quarantined: list[str], trust: Trust, known: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The tail state, brought up to date with the newest segment. Caller holds the log lock.

    ``known`` is a state this process holds in memory (fresher than tail.json when its last save failed).
    ``trust``: the keys an entry others wrote must verify with to become its author's head.
    """
    files = segment_files(vault)
    stored = tailstate.load(vault)
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
        return tailstate.empty(base["heads"] if base else None)
    name, path = files[-1]
    size = path.stat().st_size
    if (
        base is None
        or base["segment"] != name
        or base["size"] > size
        or not tailstate.boundary_ok(path, base)
    ):
        if (
            base is not stored
            and stored is not None
            and stored["segment"] == name
            and (stored["size"] <= size and tailstate.boundary_ok(path, stored))
        ):  # this process's state is stale but tail.json is exact (the watcher moved it after a rewrite)
            state = tailstate.copy(stored)
            for agent, head in (base or {}).get("heads", {}).items():  # heads are high-water marks
                mine = state["heads"].get(agent)
                if isinstance(head, list) and len(head) in (2, 3) and (not mine or head[0] > mine[0]):
                    state["heads"][agent] = head
        else:
            state = tailstate.rebuild(vault, base, trust)
    else:
        state = tailstate.copy(base)  # never mutate the caller's state
    if size > state["size"]:  # other writers (or a person) added bytes: catch up
        with open(path, "rb") as f:
            f.seek(state["size"])
            data = f.read(size - state["size"])
        result = segments.scan(data, vault.rel(path), offset=state["size"], line=state["lines"] + 1)
        key_of = tailstate.key_reader(vault)
        signed = tailstate.signature_check(
            vault, trust, strict=True
        )  # what others wrote since: a forged entry
        for located in result.entries:  # never becomes the head the next entry chains on
            tailstate.absorb(state, located, key_of=key_of, signed=signed)
        if result.torn is not None:
            quarantined.append(quarantine(vault, path, result.torn))
            state["size"], state["lines"] = result.end_offset, result.end_line - 1
        else:
            state["size"], state["lines"] = size, state["lines"] + data.count(b"\n")
    return state


# ------------------------------------------------------------------ append


@dataclass(frozen=True)
class _Input:
    """An append's checked arguments."""

    agent: str
    channel: str
    type: str
    summary: str
    body: str | None
    body_changed: tuple[str, ...]
    ack: tuple[str, ...]
    via: str | None


def _checked_input(
    vault: Vault,
    agent: str,
    channel: str,
    type: str,
    summary: str,
    body: str | None,
    ack: tuple[str, ...],
    via: str | None,
) -> _Input:
    """The append's arguments checked (one clear InputError for bad input; nothing written)."""
    agent = check_name(agent)
    channel = check_token(channel, "channel")
    type = check_type(type)
    summary = check_line(summary, "summary")
    body, body_changed = prepare_body(body)
    for ack_id in ack:
        if not entries.ID_RE.fullmatch(ack_id):
            raise InputError(f"--ack {ack_id!r} is not an entry id (26 characters, as printed by append)")
    for what, part in (("the summary", summary), ("the body", body)):
        if part and secret_hint().search(part):  # every agent's brief shows an entry: no secrets
            from ..memory.scan import check_secrets

            check_secrets(part, f"{what} of the entry", vault.root)
    missing = missing_entry(vault, ack)
    if missing is not None:
        raise InputError(f"--ack {missing}: no entry with this id in the log")
    return _Input(agent, channel, type, summary, body, tuple(body_changed), tuple(dict.fromkeys(ack)), via)


def _fork_error(agent: str, fork: dict[str, Any]) -> ForkError:
    return ForkError(
        f"{agent}'s chain forked at seq {fork['seq']}: entries {', '.join(fork['ids'])} "
        f"continue the same entry ({agent} ran from two copies of the vault); nothing "
        f"was appended. Choose the branch to go on from: `nexus log resolve-fork "
        f"--agent {agent} --keep ID` (both branches stay in the log)"
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


@dataclass
class _Target:
    """Where this append writes: the tail state it goes on from and the newest segment (open in
    ``fd`` when kept from the last append). ``fast``: nothing changed since this writer's last append."""

    state: dict[str, Any]
    fd: int
    fast: bool
    dir_mtime: int | None
    ino: int
    path: Path | None = None
    rel: str = ""


class LogWriter:
    """Appends to one vault's log; keeps the tail state in memory between appends.

    Under the log lock each append checks that nothing changed since its own last append (the log
    folder's mtime, and the newest segment's inode and size): then it writes at once; otherwise it
    catches up from the segments as a fresh process would. Durability is the same either way: every
    entry is fsynced before ``append`` returns, and the derived ``tail.json`` saved after it under the
    lock (:meth:`flush`, at close or exit, saves it again only when that save failed).
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

    def append(
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
        precondition: Callable[[], None] | None = None,
        trust: Trust = NO_PINS,
    ) -> records.AppendResult:
        """Append one signed entry and return once it is durable (see :func:`append`). ``chain``:
        (seq, prev) to continue from instead of the agent's head (only :func:`resolve_fork`).
        ``precondition``: called under the log lock once the segments are caught up, before the entry
        is made; whatever it raises refuses the append with nothing written (a claim's conflict
        check: the check and the append are one step). ``trust``: the keys an entry others wrote
        since must verify with to become the head an entry chains on."""
        inp = _checked_input(self.vault, agent or signer.name, channel, type, summary, body, ack, via)
        seen = self._seen(inp.agent)
        quarantined: list[str] = []
        with self._lock:
            target = self._open_target(quarantined, trust)
            try:
                if precondition is not None:
                    precondition()
                entry, digest, data = self._sign(target, inp, signer, seen, chain)
                lead = self._write(target, data)
            except BaseException:
                if target.fd >= 0:
                    os.close(target.fd)
                raise
            # The entry is durable: from here on nothing may turn the append into a failure (a retry
            # would write it twice). Derived state that cannot be written is rebuilt by the next append.
            located = self._record(target, entry, digest, lead, data)
            with contextlib.suppress(OSError):  # a head that lags is normal (heads.py)
                from ..keys import heads

                heads.write(self.vault, signer, inp.agent, entry.seq, entry.id, digest)
        return records.AppendResult(located, tuple(quarantined), inp.body_changed)

    def _open_target(self, quarantined: list[str], trust: Trust) -> _Target:
        """The tail state to go on from: this writer's own when nothing changed since its last append
        (``fast``), tail.json as another writer left it, or the segments checked (catching up,
        quarantining a torn tail). Under the lock."""
        fd, self._fd = self._fd, -1  # (kept again only once this append succeeds)
        target = _Target({}, fd, False, None, -1)
        size = -1
        if self._state is not None and self._stamp is not None and fd >= 0:
            target.path, target.rel = self._segment(self._state["segment"])
            try:
                target.dir_mtime = os.stat(self._log_dir).st_mtime_ns
                st = os.stat(target.path)
            except FileNotFoundError:
                pass
            else:  # (the stamp's inode is the open fd's: the path still names that file)
                target.fast = (target.dir_mtime, st.st_ino, st.st_size) == self._stamp
                target.ino, size = st.st_ino, st.st_size
        if target.fast:
            assert self._state is not None
            target.state = self._state
            return target
        try:
            adopted = None
            if fd >= 0 and self._stamp is not None and (target.dir_mtime, target.ino) == self._stamp[:2]:
                assert target.path is not None
                adopted = self._adopt(target.path, size)  # another process appended to this file
            if adopted is not None:
                target.state = adopted
                return target
            if fd >= 0:
                os.close(fd)
                target.fd = -1
            self._log_dir.mkdir(exist_ok=True)
            target.state = _checked_state(self.vault, quarantined, trust, self._state)
        except BaseException:
            if target.fd >= 0:
                os.close(target.fd)
            raise
        return target

    def _to_segment(self, target: _Target, ts: str) -> None:
        """Point ``target`` at the segment an entry stamped ``ts`` goes to (a new month: a new
        segment; if the clock went back across a month: stay in the newest)."""
        state = target.state
        name = entries.segment_name(ts)
        if state["segment"] is not None and name <= state["segment"]:
            target.path, target.rel = self._segment(state["segment"])
            return
        if target.fd >= 0:
            os.close(target.fd)
            target.fd = -1
        target.fast = False
        target.path, target.rel = self._segment(name)
        if not target.path.exists():
            durable.create_exclusive(target.path, segments.preamble(name).encode())
        text = target.path.read_bytes()
        state.update(segment=name, size=len(text), lines=text.count(b"\n"), seg_last=None)

    def _sign(
        self, target: _Target, inp: _Input, signer: Signer, seen: str | None, chain: tuple[int, str] | None
    ) -> tuple[Entry, str, bytes]:
        """The new entry (its id after the newest in the log, chained on the agent's head), its
        hash and its rendered bytes."""
        state = target.state
        entry_id, ms = entries.new_id_ms(after=state["last_id"])
        ts = entries.utc_ts(ms)
        self._to_segment(target, ts)
        fork = state.get("forks", {}).get(inp.agent)
        if fork is not None and chain is None:
            raise _fork_error(inp.agent, fork)
        head: Any = state["heads"].get(inp.agent) if chain is None else [chain[0] - 1, chain[1]]
        # Format 2: the key id and the previous entry's hash are not stored (NEXUS-FORMAT.md).
        fields: dict[str, Any] = dict(
            id=entry_id,
            ts=ts,
            agent=inp.agent,
            channel=inp.channel,
            type=inp.type,
            summary=inp.summary,
            body=inp.body,
            ack=inp.ack,
            seen=seen,
            seq=(head[0] + 1) if head else 1,
            via=inp.via,
        )
        canonical = entries.canonical_v2(**fields)
        sig = signer.sign(entries.SIGN_CONTEXT_V2 + canonical)
        entry = Entry(**fields, prev=None, key="", sig=sig, v=entries.WRITTEN_VERSION)
        return entry, entries.hash_canonical(canonical, entry.sig), entries.render(entry).encode("utf-8")

    def _write(self, target: _Target, data: bytes) -> bytes:
        """Write the entry after a blank line, fsynced (undone if that fails); return the lead."""
        assert target.path is not None
        lead = b"" if target.fast else _separator_needed(target.path, target.state["size"])
        if target.fd < 0:
            target.fd = os.open(target.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            target.ino = os.fstat(target.fd).st_ino
        # Invalidate the in-memory state first: if the write fails, the next append must look at the
        # file again instead of trusting a size that may be wrong.
        self._stamp = None
        before = os.fstat(target.fd).st_size
        try:
            durable.append_fd(target.fd, lead + data)
        except BaseException as err:
            _undo_append(target.fd, before, err)
            raise
        return lead

    def _record(self, target: _Target, entry: Entry, digest: str, lead: bytes, data: bytes) -> Located:
        """Take the durable entry into the tail state (and save it) and keep the segment open."""
        self._fd = target.fd
        state = target.state
        start = state["size"] + len(lead)
        first_line = state["lines"] + lead.count(b"\n") + 1
        n_lines = data.count(b"\n")
        located = Located(
            entry, target.rel, first_line, first_line + n_lines - 2, start, start + len(data), "ok"
        )
        state["size"] = start + len(data)
        state["lines"] = first_line - 1 + n_lines
        tailstate.absorb(state, located, digest)
        state["seg_last"] = Mark(
            state["size"], state["lines"] + 1, entry.id, state["size"]
        )  # (after the blank line)
        self._state = state
        try:
            dir_mtime = target.dir_mtime
            if not target.fast or dir_mtime is None:  # (a new segment changes the folder's mtime)
                dir_mtime = os.stat(self._log_dir).st_mtime_ns
            self._stamp = (dir_mtime, target.ino, state["size"])
            self._unsaved += 1
            self._save()
        except OSError:  # (tail.json is derived: the next append looks at the files again)
            self._stamp = None
        return located

    def _adopt(self, path: Path, size: int) -> dict[str, Any] | None:
        """tail.json as another writer left it, when it describes the newest segment exactly as it is
        now (the usual case with several writer processes: each saves it under the lock after its
        append). Spares listing the segments and copying the state; None: take the full check."""
        stored = tailstate.load(self.vault)
        if (
            stored is None
            or self._state is None
            or stored["segment"] != self._state["segment"]
            or (stored["size"] != size)
            or not tailstate.boundary_ok(path, stored)
        ):
            return None
        return stored

    def _save(self) -> None:
        if self._state is not None and self._unsaved:
            tailstate.save(self.vault, self._state, self._tail_path)
            self._unsaved = 0

    def flush(self) -> None:
        """Save the derived tail state now (appends are durable without it)."""
        if self._state is not None and self._unsaved:
            with self._lock:
                stored = tailstate.load(self.vault)
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
            path = self._cursor_files[agent] = cursor_path(self.vault, agent)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        cached = self._cursors.get(agent)
        if cached and cached[0] == key:
            return cached[1]
        seen = read_cursor(self.vault, agent).seen
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
    precondition: Callable[[], None] | None = None,
    trust: Trust = NO_PINS,
) -> records.AppendResult:
    """Append one signed entry and return once it is durable.

    ``agent`` defaults to the signer; it differs only when the watcher signs a person's text
    (``via="watcher"``) with that person's key. ``precondition`` runs under the log lock with the
    segments caught up, before the entry is made; what it raises refuses the append, nothing written.
    ``trust``: the machine's pins (``nexus.trust.Trust``), which decide whether an entry another writer
    added since is its author's (only such an entry becomes the head the next one chains on);
    ``NO_PINS``, a library caller's: the identity notes' keys as they are.
    """
    return writer(vault).append(
        signer,
        channel=channel,
        type=type,
        summary=summary,
        body=body,
        ack=ack,
        via=via,
        agent=agent,
        precondition=precondition,
        trust=trust,
    )


def resolve_fork(vault: Vault, signer: Signer, keep: str, trust: Trust) -> records.AppendResult:
    """End a fork of ``signer``'s chain: a signed ``reconcile`` entry that continues the branch holding
    entry ``keep`` (from its newest entry) and acks every entry of the agent from the fork on, so
    every machine sees the same choice. Both branches stay in the log."""
    from ..keys.trust import load
    from .check import check_entry

    agent = signer.name
    ring = load(vault, trust.home)
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
    while True:  # the newest entry on the branch from ``keep``
        kids = children.get(digests[tip.entry.id])
        if not kids:  # (format 2 stores no prev: the one entry with the next seq, if only one)
            kids = [
                loc
                for loc in mine
                if loc.entry.v != entries.FORMAT_VERSION and loc.entry.seq == tip.entry.seq + 1
            ]
            if len(kids) != 1:
                break
        tip = max(kids, key=lambda loc: (loc.entry.seq, loc.entry.id))
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
        # (format 2: after the agent's highest seq, so no seq is taken twice)
        chain=(
            max(seqs) + 1 if tip.entry.v != entries.FORMAT_VERSION else tip.entry.seq + 1,
            digests[tip.entry.id],
        ),
        trust=trust,
    )


def restore_entry(vault: Vault, entry_id: str) -> records.Notice:
    """Put an entry's original text back in its segment (replacing an edited version, or re-inserting
    it when it is gone) under the log lock, with a notice saying so."""
    copy = shadow.original(vault, entry_id)
    path = vault.root / copy.file
    notice_id = shadow.new_notice_id()
    ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    note = copy.file[:-3] if copy.file.endswith(".md") else copy.file
    message = f"entry {entry_id} put back from the shadow by `nexus log recover --restore`"
    notice_text = shadow.render_notice(
        notice_id,
        f"nexus restored the original of {entry_id}",
        [f"{message}: [[{note}#^{entry_id}]] ({ts})."],
    )
    with locked(vault):
        exists = path.exists()
        data = path.read_bytes() if exists else segments.preamble(Path(copy.file).stem).encode()
        scan = segments.scan(data, copy.file)
        spans = [(loc.offset, loc.end_offset) for loc in scan.entries if loc.entry.id == entry_id]
        spans += [(b.offset, b.end_offset) for b in scan.broken if b.entry_id == entry_id]
        if spans:
            start, end = spans[0]
            new = data[:start] + copy.text.encode("utf-8") + b"\n" + notice_text.encode() + data[end:]
        else:
            new = shadow.insert_entries(data, scan, [copy], notice_text)
        added = [loc for loc in segments.scan(new, copy.file).entries if loc.entry.id == entry_id]
        replace_segment(vault, path, data if exists else b"", new, added)
    notice = records.Notice(notice_id, "recovered", copy.file, (entry_id,), ts, message)
    shadow.record_notice(vault, notice)
    return notice
