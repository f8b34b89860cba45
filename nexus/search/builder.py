"""A fresh index of the whole vault, built in a new folder, by several processes on a large vault.

Every file is read once, a block at a time, for its hash (flat memory however large the vault); the
work is dealt into one list of jobs per process, a large segment cut at entry boundaries into jobs of
at most ``MAX_JOB_BYTES``. This process and one child per further core (forked) each write their own
Whoosh segment (so parsing entries runs in parallel too, unlike Whoosh's own multiprocess writer,
which parses everything in the parent); the parent commits them together. A child that fails or dies
cancels the build with an ``IndexBuildError``, the index as it was.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import BinaryIO

from ..errors import IndexBuildError
from ..ledger.marks import START, Mark
from ..storage import segments
from ..storage.vault import Vault
from ..trust import Trust
from . import documents, engine
from .language import BUILD_MEMO_WORDS, Analysis
from .manifest import FileRecord, Manifest, index_dir, now
from .seals import Sealer, sealer

Progress = Callable[[int, int], None]

PARALLEL_BYTES = 4 * 1024 * 1024  # a vault larger than this is indexed by several processes
CHUNK_BYTES = 1 << 20  # a segment larger than this may be split between processes
MAX_JOB_BYTES = 2 << 20  # ... and one larger than this always is (memory stays flat as the log grows)
LIMIT_MB = 16  # postings a build process buffers before writing a sorted run to disk (Whoosh limitmb;
#                128 peaked at ~180 MB a process, 16 at ~100 MB, flat as the vault grows)


@dataclass(frozen=True)
class Job:
    """Bytes ``begin``..``stop`` of file ``rel``, starting at line ``line``."""

    rel: str
    begin: int
    stop: int
    line: int

    @property
    def size(self) -> int:
        return self.stop - self.begin


Ends = dict[tuple[str, int], Mark]  # (segment, job start) -> the mark after the job's last entry


def _cuts(f: BinaryIO, rel: str, size: int, parts: int) -> tuple[list[Job], str, int]:
    """Read file ``f`` block by block: its jobs (one, or a segment cut at entry boundaries), its
    SHA-256 and its size as read."""
    from ..storage.segments import next_cut

    chunk = min(MAX_JOB_BYTES, max(CHUNK_BYTES, size // (2 * parts) + 1))
    whole = not documents.is_segment(rel) or (parts == 1 and size <= MAX_JOB_BYTES)
    sha = hashlib.sha256()
    jobs: list[Job] = []
    begin, line, pos = 0, 1, 0  # the current job's start and line; bytes read so far
    pending = b""  # bytes from ``begin`` not yet dealt into a job
    while block := f.read(1 << 20):
        sha.update(block)
        pos += len(block)
        if whole:
            continue
        pending += block
        while len(pending) > chunk:
            cut = next_cut(pending, chunk - 1)
            if cut < 0:
                break  # (no entry boundary yet: read on)
            jobs.append(Job(rel, begin, begin + cut + 1, line))
            line += pending.count(b"\n", 0, cut + 1)
            begin += cut + 1
            pending = pending[cut + 1 :]
    jobs.append(Job(rel, begin, pos, line))
    return jobs, sha.hexdigest(), pos


def plan(root: Path, files: documents.Files, parts: int) -> tuple[list[list[Job]], dict[str, FileRecord]]:
    """The jobs dealt into ``parts`` lists of similar size, and each file's record for the manifest."""
    records: dict[str, FileRecord] = {}
    jobs: list[Job] = []
    for rel in sorted(files):
        try:
            f = open(root / rel, "rb")  # noqa: SIM115 (closed below)
        except FileNotFoundError:
            continue
        with f:
            st = os.fstat(f.fileno())
            cut, sha, size = _cuts(f, rel, st.st_size, parts)
        jobs.extend(cut)
        records[rel] = FileRecord(size, st.st_mtime_ns, sha)
    buckets: list[list[Job]] = [[] for _ in range(parts)]
    weights = [0] * parts
    for job in sorted(jobs, key=lambda j: j.size, reverse=True):
        k = weights.index(min(weights))
        buckets[k].append(job)
        weights[k] += job.size
    for bucket in buckets:  # each process reads its jobs in file order
        bucket.sort(key=lambda j: (j.rel, j.begin))
    return buckets, records


def read_range(root: Path, rel: str, begin: int, stop: int) -> bytes:
    """Bytes ``begin``..``stop`` of a file; none when it is gone (the next refresh drops it)."""
    try:
        with open(root / rel, "rb") as f:
            f.seek(begin)
            return f.read(stop - begin)
    except FileNotFoundError:
        return b""


@dataclass(frozen=True)
class Part:
    """What one process built: its segment (None when empty) and where each segment job ended."""

    segment: engine.Segment | None
    ends: Ends


def build_part(
    folder: Path,
    jobs: list[Job],
    root: Path,
    mtimes: dict[str, int],
    langs: tuple[str, ...],
    progress: Progress | None = None,
    seals: Sealer | None = None,
) -> Part:
    """Index ``jobs`` into one new segment of ``folder``, each entry sealed when ``seals`` is given.
    ``progress`` sees this part's share (the parts are dealt to be of similar size)."""
    writer = engine.PartWriter(folder, LIMIT_MB)
    words = Analysis(langs, BUILD_MEMO_WORDS)  # (its own: a process's search memo stays as it was)
    ends: Ends = {}
    total = sum(j.size for j in jobs) or 1
    done = 0
    try:
        for job in jobs:
            # (the bytes the parent hashed: files only grow or are replaced; a refresh catches either)
            data = read_range(root, job.rel, job.begin, job.stop)
            if documents.is_segment(job.rel):
                scan = segments.scan(data, job.rel, offset=job.begin, line=job.line)
                docs = documents.segment_docs(scan, words, _seals(seals, root, job, data, scan))
                ends[(job.rel, job.begin)] = Mark(job.begin, job.line, None, job.begin).after(scan, job.stop)
            else:
                docs = list(documents.note_docs(job.rel, data, mtimes[job.rel] / 1e9, words))
            for doc in docs:
                writer.add(doc)
            done += job.size
            if progress is not None:
                progress(done, total)
        return Part(writer.finish(), ends)
    except BaseException:
        writer.cancel()
        raise


def _seals(
    seals: Sealer | None, root: Path, job: Job, data: bytes, scan: segments.Scan
) -> list[bytes] | None:
    """The seals of a job's entries (None without a sealer)."""
    if seals is None or not scan.entries:
        return None
    covered = seals.proof.covered(root / job.rel, job.rel, job.begin, data) if seals.proof else range(0)
    return seals.seals(scan.entries, data, job.begin, covered)


def _child(
    folder: Path,
    jobs: list[Job],
    root: Path,
    mtimes: dict[str, int],
    langs: tuple[str, ...],
    seals: Sealer | None,
    out: Connection,
) -> None:
    try:
        out.send(("ok", build_part(folder, jobs, root, mtimes, langs, None, seals)))
    except BaseException as err:  # reported to the parent, which cancels the build
        out.send(("error", f"{type(err).__name__}: {err}"))
    finally:
        out.close()


def _processes(total_bytes: int) -> int:
    import multiprocessing

    if total_bytes <= PARALLEL_BYTES or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return min(os.cpu_count() or 1, 4)


def _parts(
    folder: Path,
    buckets: list[list[Job]],
    root: Path,
    mtimes: dict[str, int],
    langs: tuple[str, ...],
    progress: Progress | None,
    seals: Sealer | None,
) -> list[Part]:
    """Build the buckets' parts: the first here, each other one in a forked child."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    children: list[tuple[BaseProcess, Connection]] = []
    try:
        for jobs in buckets[1:]:
            receive, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(
                target=_child, args=(folder, jobs, root, mtimes, langs, seals, send), daemon=True
            )
            proc.start()
            send.close()
            children.append((proc, receive))
        results = [build_part(folder, buckets[0], root, mtimes, langs, progress, seals)]
        results.extend(_collect(child, receive) for child, receive in children)
        return results
    except BaseException:
        for child, _ in children:
            child.kill()
            child.join()
        raise


def _collect(proc: BaseProcess, receive: Connection) -> Part:
    """A child's part, or an ``IndexBuildError`` saying why it has none."""
    try:
        message: tuple[str, Part | str] = receive.recv()
    except EOFError:  # the child died without a word (killed, out of memory)
        proc.join()
        message = ("error", f"it exited with code {proc.exitcode}")
    proc.join()
    status, value = message
    if status != "ok" or not isinstance(value, Part):
        raise IndexBuildError(
            f"building the search index failed in a helper process ({value}); the index is as it was"
        )
    return value


def _last_mark(ends: Ends, rel: str, size: int) -> Mark:
    """A segment's mark after a build: after its last entry (the last job that had one), having
    looked at all of its ``size`` bytes; at the start when it has no entry."""
    found = [mark for (r, _), mark in sorted(ends.items()) if r == rel and mark.last is not None]
    return replace(found[-1] if found else START, scanned=size)


def build(vault: Vault, progress: Progress | None, langs: tuple[str, ...], trust: Trust) -> Manifest:
    """A fresh index of the whole vault in a new folder; returns its manifest (not yet saved).
    The caller holds the index lock. ``trust``: the machine's pins and seal secret (what it seals)."""
    files = documents.vault_files(vault)
    name = f"ix-{secrets.token_hex(4)}"
    folder = index_dir(vault) / name
    folder.mkdir(parents=True, exist_ok=True)
    total_bytes = sum(size for size, _ in files.values())
    parts = _processes(total_bytes)
    buckets, records = plan(vault.root, files, parts)
    mtimes = {rel: r.mtime for rel, r in records.items()}
    seals = sealer(vault, trust, with_proof=True)  # (each entry checked once here, not at every search)
    writer = engine.Index.create(folder).writer()  # holds Whoosh's own lock; commits the parts' segments
    try:
        if parts > 1:
            results = _parts(folder, buckets, vault.root, mtimes, langs, progress, seals)
        else:
            results = [build_part(folder, buckets[0], vault.root, mtimes, langs, progress, seals)]
        writer.commit_segments([r.segment for r in results if r.segment is not None])
    except BaseException:
        writer.cancel()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    ends: Ends = {}
    for result in results:
        ends.update(result.ends)
    for rel, record in records.items():
        if documents.is_segment(rel):
            records[rel] = replace(record, mark=_last_mark(ends, rel, record.size))
    if progress is not None:
        progress(total_bytes, total_bytes)
    stamp = now()
    return Manifest(name, langs, records, stamp, stamp)
