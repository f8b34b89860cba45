"""Verification that costs what changed: incremental, parallel and streaming.

``verify.py`` says what is wrong with an entry or a chain; this module decides which bytes need
checking and where:

* **Incremental.** ``<NEXUS_HOME>/verified/<vault_id>-<folder>.json`` (outside the vault, beside the pins:
  :func:`state_path`) remembers, per segment, the verified prefix (up to the
  end of its last entry) as SHA-256 hashes of byte ranges, what verification found in it, and what the
  chain check needs to go on from it (each agent's highest link, the newest id). The next run hashes
  each prefix again (about 1 GB/s, against ~10,000 signatures a second on one core) and checks only
  the bytes after it. A prefix that changed, a segment that disappeared or appeared before the last
  one, other identities or other checking code: the run starts from scratch. The state is derived:
  deleting it costs one full verification, never a verdict.
* **Streaming.** Entries are checked as they are read, a chunk at a time, and forgotten; memory stays
  flat as the log grows. This holds while every id is newer than the one before it and every agent's
  seq above its earlier ones (always, unless entries were duplicated, reordered or forked): when one
  is not, the run starts again in ``verify.verify_exact``, which holds every entry and names precisely
  what happened.
* **Parallel.** A large amount of new bytes is cut at entry boundaries into chunks that a pool of
  processes (one per core) scans and checks; results are folded in log order, so every finding is
  reported exactly as the serial path reports it, for about the CPU of the serial path (at 100k
  entries: 7.95 CPU s in the workers and 0.50 in the parent, against 8.47 in one process).

Where a full verify's CPU goes, per entry at 100k entries: ~57 µs the signature (libsodium's check;
OpenSSL's costs ~110), ~10 µs reading the entry (``segments.scan``), ~2 µs its canonical bytes, ~1 µs
its hash, ~4 µs the rest of the per-entry check, ~1 µs the fold, and ~0.5 s for the whole run in the
parent (cutting the segments, the report). The signature alone bounds it at ~17,500 entries a
CPU-second. ``benchmarks/bench_budgets.py`` measures it beside another checkout.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..keys.trust import Keyring
from ..keys.trust import load as load_keyring
from ..ledger import log
from ..ledger.check import Renamed, check_entry
from ..records import Identity, Problem
from ..storage import entries, segments
from ..storage.progress import Progress
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust
from .verify import (
    Head,
    Report,
    check_copies,
    check_heads,
    next_link_problem,
    scan_problems,
    vault_problems,
)

STATE_VERSION = 1
CHUNK_BYTES = 2 << 20  # a job: about 4,000 entries of format 1, 8,000 of format 2
PARALLEL_BYTES = 3 << 20  # less new bytes than this (~12,000 entries) is checked in this process
MAX_RANGES = 64  # hashed ranges a segment keeps before they are merged into one

# A checking process's keys and renames: its pool's, given to the pool's initializer (``_start_worker``)
# by the run that made the pool. Only the pool's own processes read it; the run's own process never
# does (a run passes its keys down), so two runs in threads of one process never share them.
_WORKER: list[tuple[Keyring, Renamed]] = []


class _Anomaly(Exception):
    """An id or a seq went backwards: the streaming fold cannot answer exactly."""


def state_path(vault: Vault, home: Path | None = None) -> Path:
    """Where this machine keeps what it proved of ``vault``: beside its pins (``home``, the folder a
    ``nexus.trust.Trust`` names, trust.py), in ``<NEXUS_HOME>/verified/<vault_id>-<folder>.json``, outside
    the vault: whoever can edit the vault could otherwise rewrite the proof along with the history it
    covers. ``<folder>`` (a hash of the vault's path) keeps two copies of one vault on this machine
    (two clones) from sharing one proof. ``home`` None (a library caller, ``nexus.trust.NO_PINS``): in
    ``.nexus/verify/state.json``."""
    if home is None:
        return vault.state / "verify" / "state.json"
    folder = hashlib.sha256(os.fsencode(vault.root.resolve())).hexdigest()[:12]
    return home / "verified" / f"{vault.vault_id}-{folder}.json"


# ------------------------------------------------------------------ checking a chunk (any process)

Rec = tuple[str, str, int, "str | None", str, int, str, "Problem | None", str]
# (id, agent, seq, prev, type, line, verdict, problem, digest)


@dataclass
class Chunk:
    """One worker's piece of new log bytes, checked: where it ends, its hash, what it found."""

    rel: str
    start: int
    end: int  # bytes [start, end) are verified and hashed: where the next run starts
    end_line: int
    sha: str
    broken: list[tuple[int, Problem]]
    stray: list[tuple[int, Problem]]
    torn: tuple[int, Problem] | None
    recs: list[Rec]
    size: int  # bytes read


Job = tuple[str, str, int, int, "int | None"]  # (rel, path, start, line, stop; None: to the end)


def check_chunk(job: Job, ring: Keyring, renamed: Renamed) -> Chunk:
    """Scan and check one chunk of a segment: from a resume point (the start, an entry's end or a
    begin line) to ``stop`` (a begin line) or the end of the file, with the keys this machine trusts
    (``ring``) and the run's renames (``renamed``: links a rename in Obsidian moved)."""
    rel, path, start, line, stop = job
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read() if stop is None else f.read(stop - start)
    result = segments.scan(data, rel, offset=start, line=line, tail=stop is None)
    broken, stray, torn = scan_problems(rel, result)
    if stop is not None:
        if result.torn is not None:
            # An entry still open where the chunk was cut: the next line begins an entry, so a scan of
            # the whole segment calls it an entry without an end line there.
            t = result.torn
            first = data[t.offset - start :].split(b"\n", 1)[0].decode("utf-8", errors="replace")
            broken.append(
                (
                    t.offset,
                    Problem(
                        "framing",
                        rel,
                        t.line,
                        "entry has no end line",
                        segments.entry_id_of(first.removesuffix("\r")),
                    ),
                )
            )
            torn = None
        end, end_line = start + len(data), line + data.count(b"\n")
    elif result.entries:
        last = result.entries[-1]
        end, end_line = last.end_offset, last.line_end + 1
    else:
        end, end_line = start, line
    recs: list[Rec] = []
    for loc in result.entries:
        e = loc.entry
        canonical = entries.canonical(e)  # (once: signed bytes and chain hash both use it)
        verdict, problem = check_entry(loc, ring, renamed, canonical, bulk=True)
        signed = renamed.signed.get(e.id)  # as signed, when only links moved
        recs.append(
            (
                e.id,
                e.agent,
                e.seq,
                e.prev,
                e.type,
                loc.line_start,
                verdict,
                problem,
                ""
                if verdict == "foreign"
                else entries.entry_hash(signed)
                if signed is not None
                else entries.hash_canonical(canonical, e.sig),
            )
        )
    sha = hashlib.sha256(memoryview(data)[: end - start]).hexdigest()
    return Chunk(rel, start, end, end_line, sha, broken, stray, torn, recs, len(data))


# ------------------------------------------------------------------ the fold (this process)


def _link_problem(
    agent: str,
    head: Head | None,
    seq: int,
    prev: str | None,
    rel: str,
    line: int,
    eid: str,
    found: list[Problem],
) -> None:
    """The chain problem of an agent's next link, if any, into ``found`` (an anomaly: the exact path)."""
    if head is not None and seq <= head.seq:
        raise _Anomaly(f"{agent}'s seq {seq} is not above {head.seq}")
    p = next_link_problem(agent, head, seq, prev, rel, line, eid)
    if p is not None:
        found.append(p)


@dataclass
class _Segment:
    """What is remembered of one segment: its verified ranges with their hashes, and its findings."""

    ranges: list[list[Any]] = field(default_factory=list)  # [start, end, sha256 hex], from 0
    end: int = 0
    line: int = 1
    broken: list[tuple[int, Problem]] = field(default_factory=list)
    stray: list[tuple[int, Problem]] = field(default_factory=list)
    torn: tuple[int, Problem] | None = None
    problems: list[Problem] = field(default_factory=list)  # the entries' own (signatures)
    frozen: bool = False  # an older segment than the newest verified: it may gain no entries


class _Fold:
    def __init__(self) -> None:
        self.segs: dict[str, _Segment] = {}
        self.entries = 0
        self.checked = 0
        self.last_id: str | None = None
        self.chains: dict[str, tuple[Head | None, list[Problem]]] = {}
        self.decisions: set[str] = set()
        self.merged = False  # a segment's hashed ranges were merged into one (worth saving)

    def add(self, chunk: Chunk) -> None:
        seg = self.segs[chunk.rel]
        if chunk.recs and seg.frozen:
            raise _Anomaly(f"{chunk.rel} gained entries after a later segment was verified")
        if chunk.end > chunk.start:
            seg.ranges.append([chunk.start, chunk.end, chunk.sha])
        seg.end, seg.line = chunk.end, chunk.end_line
        seg.broken += chunk.broken
        seg.stray += chunk.stray
        seg.torn = chunk.torn
        chains, rel, last_id = self.chains, chunk.rel, self.last_id
        self.entries += len(chunk.recs)
        self.checked += len(chunk.recs)
        for eid, agent, seq, prev, etype, line, verdict, problem, digest in chunk.recs:
            if last_id is not None and eid <= last_id:
                raise _Anomaly(f"id {eid} is not newer than {last_id}")
            last_id = self.last_id = eid
            if problem is not None:
                seg.problems.append(problem)
            if etype == "decision":
                self.decisions.add(eid)
            if verdict == "foreign":  # not part of its claimed author's chain
                continue
            head, found = chains.get(agent) or (None, [])
            if head is None or not (seq == head.seq + 1 and head.signed_ok and prev == head.digest):
                _link_problem(agent, head, seq, prev, rel, line, eid, found)  # (else: none, the usual)
            chains[agent] = (Head(seq, digest, verdict == "ok", rel, line, eid), found)

    # ---- the remembered form
    def to_json(self, context: str, order: list[str]) -> dict[str, Any]:
        segs: dict[str, Any] = {}
        for name in order:
            seg = self.segs[f"log/{name}.md"]
            segs[name] = {
                "ranges": seg.ranges,
                "line": seg.line,
                # text after the last entry is read again next time: only what is before it is kept
                "broken": [[o, p.to_json()] for o, p in seg.broken if o < seg.end],
                "stray": [[o, p.to_json()] for o, p in seg.stray if o < seg.end],
                "problems": [p.to_json() for p in seg.problems],
            }
        return {
            "v": STATE_VERSION,
            "context": context,
            "order": order,
            "segments": segs,
            "entries": self.entries,
            "last_id": self.last_id,
            "chains": {
                a: [
                    None if h is None else [h.seq, h.digest, h.signed_ok, h.file, h.line, h.entry_id],
                    [p.to_json() for p in ps],
                ]
                for a, (h, ps) in self.chains.items()
            },
            "decisions": sorted(self.decisions),
        }

    @classmethod
    def from_json(cls, state: dict[str, Any]) -> _Fold:
        fold = cls()
        fold.entries = int(state["entries"])
        fold.last_id = state["last_id"]
        for name in state["order"]:
            s = state["segments"][name]
            fold.segs[f"log/{name}.md"] = _Segment(
                ranges=[list(r) for r in s["ranges"]],
                end=s["ranges"][-1][1] if s["ranges"] else 0,
                line=int(s["line"]),
                broken=[(o, Problem(**p)) for o, p in s["broken"]],
                stray=[(o, Problem(**p)) for o, p in s["stray"]],
                problems=[Problem(**p) for p in s["problems"]],
            )
        for agent, (h, ps) in state["chains"].items():
            fold.chains[agent] = (None if h is None else Head(*h), [Problem(**p) for p in ps])
        fold.decisions = set(state["decisions"])
        return fold


# ------------------------------------------------------------------ running


CONTEXT_MODULES = (  # the code every remembered verdict depends on
    "ledger/check.py",
    "audit/verify.py",
    "audit/verify_state.py",
    "storage/segments.py",
    "storage/entries.py",
    "keys/identity.py",
    "ledger/renames.py",
    "keys/trust.py",
    "keys/signatures.py",
)


def context_of(vault: Vault, identities: dict[str, Identity], ring: Keyring | None = None) -> str:
    """What every remembered verdict depends on besides the bytes: the identities, the renames the
    watcher recorded and the code that checks. Any change to these and the state is not used. (An
    ``edited`` verdict may also turn ``renamed`` when a decision note is renamed: a state holding one
    is not used either; see ``_load``.)"""
    h = hashlib.sha256(f"nexus-verify-state/{STATE_VERSION}\n".encode())
    for name, ident in sorted(identities.items()):
        h.update(json.dumps([name, ident.kind, ident.public_key, ident.key_id]).encode() + b"\n")
    if ring is not None:  # the keys trusted on this machine decide every verdict too
        h.update(json.dumps([ring.keys, ring.changed, ring.pinned], sort_keys=True).encode() + b"\n")
    try:
        h.update((vault.state / "renames.jsonl").read_bytes())
    except OSError:
        h.update(b"-")
    here = Path(__file__).parent.parent  # the nexus package
    for module in CONTEXT_MODULES:
        try:
            h.update((here / module).read_bytes())
        except OSError:
            h.update(b"?")
    return h.hexdigest()


def verify(
    vault: Vault,
    *,
    trust: Trust = NO_PINS,
    full: bool = False,
    progress: Progress | None = None,
    parallel: bool = True,
) -> Report:
    """Verify the log: only what changed since the last verification, after proving that the bytes
    verified before are unchanged (``full``: everything from scratch). See the module's docstring.
    ``trust``: the keys this machine pinned, and where its proof is kept (``NO_PINS``: the identity
    notes' keys, the proof in ``.nexus/``)."""
    return run(vault, trust=trust, full=full, progress=progress, parallel=parallel)


def run(
    vault: Vault,
    *,
    trust: Trust = NO_PINS,
    full: bool = False,
    progress: Progress | None = None,
    parallel: bool = True,
) -> Report:
    """Verify the log (see the module's docstring); save what was verified for the next run."""
    from ..project.decisions import renamed_notes
    from .verify import note_identities, verify_exact

    renamed = Renamed(vault, renamed_notes)
    home = trust.home
    ring = load_keyring(vault, home)  # (every key verdicts depend on: the identities' keys, pinned or not)
    identities = note_identities(vault)
    context = context_of(vault, identities, ring)
    files = log.segment_files(vault)
    state = None if full else _load(vault, context, home)
    try:
        fold, fresh = None, True
        if state is not None:
            fold = _resume(vault, state, files, progress)
            fresh = fold is None
        try:
            fold = _check(vault, fold or _Fold(), files, progress, parallel, (ring, renamed))
        except _Anomaly:
            if fresh:
                raise
            fold, fresh = _check(vault, _Fold(), files, progress, parallel, (ring, renamed)), True
    except _Anomaly:
        _forget(vault, home)
        return verify_exact(vault, ring)
    report = _report(vault, fold, files, identities, ring, full=fresh)
    order = [name for name, _ in files]
    if fresh or fold.checked or fold.merged:
        _save(vault, fold.to_json(context, order), home)
    return report


def _load(vault: Vault, context: str, home: Path | None) -> dict[str, Any] | None:
    try:
        state = json.loads(state_path(vault, home).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("v") != STATE_VERSION or state.get("context") != context:
        return None
    try:  # an edited entry is checked again each time: a rename may explain it later
        if any(p.get("kind") == "edited" for seg in state["segments"].values() for p in seg["problems"]):
            return None
    except (AttributeError, KeyError, TypeError):
        return None
    try:
        _Fold.from_json(state)  # (the shape is checked here; it is built again in _resume)
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return state


def _save(vault: Vault, state: dict[str, Any], home: Path | None) -> None:
    from ..storage import durable

    path = state_path(vault, home)
    with contextlib.suppress(OSError):  # derived state: losing it costs one full verification
        durable.replace(path, json.dumps(state, separators=(",", ":")).encode(), durable=False)
    inside = vault.state / "verify" / "state.json"
    if path != inside:  # (where older versions kept it: nothing reads it any more)
        with contextlib.suppress(OSError):
            inside.unlink()


def _forget(vault: Vault, home: Path | None) -> None:
    with contextlib.suppress(OSError):
        state_path(vault, home).unlink()


def _resume(
    vault: Vault, state: dict[str, Any], files: list[tuple[str, Path]], progress: Progress | None
) -> _Fold | None:
    """The fold as the last run left it, once every remembered prefix is proven unchanged; None when
    a segment it verified is gone or changed, or a new one sorts before the last it verified."""
    order: list[str] = state["order"]
    if [name for name, _ in files[: len(order)]] != order:
        return None
    fold = _Fold.from_json(state)
    paths = dict(files)
    todo = [(paths[name], fold.segs[f"log/{name}.md"]) for name in order]
    total = sum(seg.end for _, seg in todo) or 1
    done = [0]
    lock = threading.Lock()

    def check(item: tuple[Path, _Segment]) -> bool:
        path, seg = item
        ok = _prefix_intact(path, seg)
        with lock:
            done[0] += seg.end
            if progress is not None:
                progress(done[0], total)
        return ok

    if len(todo) > 1 and total > 32 << 20:
        from concurrent.futures import ThreadPoolExecutor  # (hashlib and reads release the GIL)

        with ThreadPoolExecutor(max_workers=min(os.cpu_count() or 1, 4)) as pool:
            intact = all(pool.map(check, todo))
    else:
        intact = all(check(item) for item in todo)
    if not intact:
        return None
    for name in order[:-1]:
        fold.segs[f"log/{name}.md"].frozen = True
    fold.merged = any(len(seg.ranges) == 1 for _, seg in todo) and any(
        len(s["ranges"]) > MAX_RANGES for s in state["segments"].values()
    )
    return fold


def _prefix_intact(path: Path, seg: _Segment) -> bool:
    """The segment's bytes still hash as remembered, range by range (merged into one range when they
    became many). The file is mapped a window at a time, not read: hashing the page cache's pages
    where they are saves copying every byte of history once more (0.49 against 0.60 CPU s for the
    494 MB of a 1M-entry log), and a small window keeps the mapped pages out of the peak memory."""
    merge = len(seg.ranges) > MAX_RANGES
    whole = hashlib.sha256() if merge else None
    if not seg.ranges:
        return True
    try:
        with open(path, "rb") as f:
            fd = f.fileno()
            if os.fstat(fd).st_size < seg.ranges[-1][1]:
                return False  # (cut short)
            for start, end, sha in seg.ranges:
                h = hashlib.sha256()
                for part in _mapped(fd, start, end):
                    h.update(part)
                    if whole is not None:
                        whole.update(part)
                if h.hexdigest() != sha:
                    return False
    except (OSError, ValueError):
        return False
    if whole is not None:
        seg.ranges = [[0, seg.end, whole.hexdigest()]]
    return True


_WINDOW = 8 << 20


def _mapped(fd: int, start: int, end: int) -> Iterator[memoryview]:
    """Bytes ``[start, end)`` of the file ``fd``, as views of mapped windows of at most ``_WINDOW``."""
    import mmap

    grain = mmap.ALLOCATIONGRANULARITY
    pos = start
    while pos < end:
        base = pos - pos % grain
        stop = min(end, base + _WINDOW)
        with (
            mmap.mmap(fd, stop - base, offset=base, access=mmap.ACCESS_READ) as window,
            memoryview(window) as view,
            view[pos - base : stop - base] as part,
        ):
            yield part
        pos = stop


def _jobs(path: Path, rel: str, start: int, line: int) -> Iterator[Job]:
    """Cut a segment from ``start`` into chunks of about CHUNK_BYTES at begin lines (the last chunk
    reads to the end of the file, whatever it is by then), reading it a block at a time."""
    p = os.fspath(path)
    try:
        size = os.stat(p).st_size
    except FileNotFoundError:
        return
    if size - start <= CHUNK_BYTES + CHUNK_BYTES // 2:
        yield (rel, p, start, line, None)
        return
    with open(p, "rb") as f:
        f.seek(start)
        begin, pending = start, b""
        while size - begin > CHUNK_BYTES + CHUNK_BYTES // 2:
            if len(pending) < CHUNK_BYTES:
                pending += f.read(CHUNK_BYTES - len(pending))
            idx = segments.next_cut(pending, CHUNK_BYTES - 1)
            while idx < 0:
                more = f.read(1 << 16)
                if not more:
                    break
                pending += more
                idx = segments.next_cut(pending, CHUNK_BYTES - 1)
            if idx < 0:
                break
            stop = begin + idx + 1
            yield (rel, p, begin, line, stop)
            line += pending.count(b"\n", 0, idx + 1)
            pending = pending[idx + 1 :]
            begin = stop
    yield (rel, p, begin, line, None)


def _check(
    vault: Vault,
    fold: _Fold,
    files: list[tuple[str, Path]],
    progress: Progress | None,
    parallel: bool,
    keys: tuple[Keyring, Renamed],
) -> _Fold:
    """Check every segment's bytes after where the fold stands, folding the results in log order, with
    ``keys``: the keys this machine trusts and the run's renames."""
    jobs: list[Job] = []
    for _name, path in files:
        rel = vault.rel(path)
        seg = fold.segs.setdefault(rel, _Segment())
        jobs.extend(_jobs(path, rel, seg.end, seg.line))
    sizes = []
    for job in jobs:
        stop = job[4]
        if stop is None:
            try:
                stop = os.stat(job[1]).st_size
            except OSError:
                stop = job[2]
        sizes.append(max(0, stop - job[2]))
    total = sum(sizes) or 1
    done = 0
    for chunk in _results(jobs, parallel and sum(sizes) > PARALLEL_BYTES, keys):
        fold.add(chunk)
        done += chunk.size
        if progress is not None:
            progress(min(done, total), total)
    return fold


def _start_worker(ring: Keyring, renamed: Renamed) -> None:
    """A pool process's start: the keys and renames of the run that made the pool."""
    _WORKER[:] = [(ring, renamed)]


def _check_in_worker(job: Job) -> Chunk:
    return check_chunk(job, *_WORKER[0])


def _results(jobs: list[Job], parallel: bool, keys: tuple[Keyring, Renamed]) -> Iterator[Chunk]:
    """Each job's chunk, in order: from a pool of processes (one per core) when it pays, else here;
    checked with ``keys`` (the pool's processes get them from its initializer)."""
    import multiprocessing

    cores = os.cpu_count() or 1
    if (
        parallel
        and cores > 1
        and len(jobs) > 1
        and threading.active_count() == 1
        and ("fork" in multiprocessing.get_all_start_methods())
    ):
        # fork (the initializer's arguments are inherited, never pickled); never from a process
        # running threads (the watcher, the MCP server), where a fork can deadlock: those check in
        # their own process.
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(processes=min(cores, 8), initializer=_start_worker, initargs=keys) as pool:
            yield from pool.imap(_check_in_worker, jobs)
        return
    for job in jobs:
        yield check_chunk(job, *keys)


def _report(
    vault: Vault,
    fold: _Fold,
    files: list[tuple[str, Path]],
    identities: dict[str, Identity],
    ring: Keyring,
    *,
    full: bool,
) -> Report:
    report = Report(entries=fold.entries, segments=len(files), checked=fold.checked, full=full)
    for _name, path in files:
        seg = fold.segs[vault.rel(path)]
        report.problems.extend(p for _, p in seg.broken)
        report.problems.extend(p for _, p in seg.stray)
        if seg.torn is not None:
            report.problems.append(seg.torn[1])
        report.problems.extend(seg.problems)
    for _agent, (_head, found) in fold.chains.items():
        report.problems.extend(found)
    check_heads(
        report,
        vault,
        {a: (h.seq, h.digest, h.file, h.line) for a, (h, _) in fold.chains.items() if h is not None},
    )
    report.problems.extend(
        vault_problems(
            vault,
            ring,
            {
                a: (h.seq, h.digest, h.file, h.line, h.entry_id)
                for a, (h, _) in fold.chains.items()
                if h is not None
            },
        )
    )
    from ..project.decision_check import check_notes  # decision notes: hand edits, unsigned status changes

    report.problems.extend(check_notes(vault, identities, _EntryIds(vault, fold.decisions), ring))
    check_copies(report, vault, None, ring)  # file-sync conflict copies, merge conflict notes
    return report


class _EntryIds:
    """``id in ids``: is there an entry with this id in the log. Decision entries' ids are known from
    the fold; any other id a decision note names is looked for in the segments (rare: a note that
    names something other than its decision entry)."""

    def __init__(self, vault: Vault, known: set[str]) -> None:
        self.vault = vault
        self.known = known
        self.looked: dict[str, bool] = {}

    def __contains__(self, entry_id: object) -> bool:
        if not isinstance(entry_id, str):
            return False
        if entry_id in self.known:
            return True
        if entry_id not in self.looked:
            self.looked[entry_id] = self._find(entry_id)
        return self.looked[entry_id]

    def _find(self, entry_id: str) -> bool:
        for _name, path in log.segment_files(self.vault):
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if segments.entry_starts(data, entry_id) and any(
                loc.entry.id == entry_id for loc in segments.scan(data, self.vault.rel(path)).entries
            ):
                return True
        return False
