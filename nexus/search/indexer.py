"""Keeping the index current: what changed since the last refresh is indexed, the rest rebuilt.

Before every search ``refresh`` compares the vault with the manifest (a stat of each file, a hash
only when size or mtime moved) and indexes just what changed; an appended segment is read on from
its ``marks.Mark`` while that holds. One writer at a time (``.nexus/locks/index.lock``). A missing,
corrupt or outdated index, or one in other languages than asked, is rebuilt (``builder``) into a
fresh folder and swapped in by rewriting the manifest. Calls are serialised within a process (MCP
calls, a watcher thread).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from ..ledger.marks import START
from ..records import RefreshStats
from ..storage import segments
from ..storage.locks import exclusive
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust
from . import builder, documents, engine
from .builder import Progress
from .language import DEFAULT_LANGUAGES, Analysis, analysis, check_languages
from .manifest import FileRecord, Manifest, index_dir, now
from .manifest import load as load_manifest
from .manifest import save as save_manifest
from .manifest import stamp as manifest_stamp
from .seals import Sealer, memo, sealer

if TYPE_CHECKING:
    from ..keys.checked import Memo

LOCK = threading.RLock()  # one search or refresh at a time per process
# vault root -> ((open index folder, the manifest file's stamp), the vault's files) last found fresh:
# while neither changed the index is still fresh (one comparison instead of a record per file)
FRESH: dict[str, tuple[tuple[str, tuple[int, int, int] | None], documents.Files]] = {}
P = ParamSpec("P")
R = TypeVar("R")


def serialised(fn: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with LOCK:
            return fn(*args, **kwargs)

    return wrapper


def languages_of(manifest: Manifest | None) -> tuple[str, ...]:
    return manifest.languages if manifest is not None else DEFAULT_LANGUAGES


def usable(vault: Vault, manifest: Manifest) -> bool:
    return engine.Index.exists(index_dir(vault) / manifest.dir)


def doc_count(vault: Vault) -> int:
    manifest = load_manifest(vault)
    if manifest is None:
        return 0
    try:
        return engine.Index.open(index_dir(vault) / manifest.dir).doc_count()
    except Exception:  # an unreadable index holds nothing
        return 0


def swap_in(vault: Vault, manifest: Manifest) -> None:
    """Make ``manifest``'s folder current; earlier folders go (readers that hold one keep their fds)."""
    save_manifest(vault, manifest)
    for child in index_dir(vault).iterdir():
        if child.is_dir() and child.name.startswith("ix-") and child.name != manifest.dir:
            shutil.rmtree(child, ignore_errors=True)


def build_and_swap(
    vault: Vault, progress: Progress | None, langs: tuple[str, ...], started: float, trust: Trust
) -> RefreshStats:
    """Rebuild from scratch (the caller holds the index lock)."""
    manifest = builder.build(vault, progress, langs, trust)
    swap_in(vault, manifest)
    n = len(manifest.files)
    return RefreshStats(n, n, 0, doc_count(vault), True, time.perf_counter() - started)


@serialised
def rebuild(
    vault: Vault,
    *,
    progress: Progress | None = None,
    languages: Sequence[str] | None = None,
    trust: Trust = NO_PINS,
) -> RefreshStats:
    """Build the index from scratch (``nexus index rebuild``), in ``languages`` (default: those the
    index had, else English). ``trust``: the machine's pins and seal secret (``NO_PINS``: nothing
    sealed)."""
    started = time.perf_counter()
    with exclusive(vault.lock("index")):
        langs = check_languages(languages) if languages else languages_of(load_manifest(vault))
        return build_and_swap(vault, progress, langs, started, trust)


@serialised
def refresh(
    vault: Vault,
    *,
    progress: Progress | None = None,
    languages: Sequence[str] | None = None,
    open_dir: str | None = None,
    trust: Trust = NO_PINS,
) -> RefreshStats:
    """Bring the index up to date with the vault: index what changed since the last refresh; rebuild
    a missing, corrupt or outdated index, or one in other ``languages`` than asked (None: keep the
    index's own, English for a new one). Cheap when nothing changed (a stat per file). ``open_dir``:
    the index folder the caller has open (known to exist). ``trust``: the machine's pins and seal
    secret (``NO_PINS``: nothing sealed)."""
    started = time.perf_counter()
    files = documents.vault_files(vault)
    seen = FRESH.get(str(vault.root)) if open_dir is not None and not languages else None
    same = seen is not None and (seen[1] is files or seen[1] == files)  # (a listing kept whole: itself)
    if seen is not None and same and seen[0] == (open_dir, manifest_stamp(vault)):
        if seen[1] is not files:  # (the listing the kernel now watches: compared by identity next time)
            FRESH[str(vault.root)] = (seen[0], files)
        return RefreshStats(len(files), 0, 0, 0, False, time.perf_counter() - started)
    manifest = load_manifest(vault)
    langs = check_languages(languages) if languages else None
    if manifest is not None and langs is not None and manifest.languages != langs:
        with exclusive(vault.lock("index")):  # asked for other languages: rebuild
            theirs = load_manifest(vault)
            if theirs is None or theirs.languages != langs:
                return build_and_swap(vault, progress, langs, started, trust)
        manifest = load_manifest(vault)
    stamp = manifest_stamp(vault)
    fresh = manifest is not None and not any(changes(manifest, files))
    if fresh and manifest is not None and (manifest.dir == open_dir or usable(vault, manifest)):
        if manifest.dir == open_dir and stamp is not None and stamp == manifest_stamp(vault):
            FRESH[str(vault.root)] = ((open_dir, stamp), files)
        return RefreshStats(len(files), 0, 0, 0, False, time.perf_counter() - started)
    with exclusive(vault.lock("index")):
        return _refresh_locked(vault, progress, langs, started, len(files), trust)


def _refresh_locked(
    vault: Vault,
    progress: Progress | None,
    langs: tuple[str, ...] | None,
    started: float,
    checked: int,
    trust: Trust,
) -> RefreshStats:
    manifest = load_manifest(vault)  # another process may have done the work meanwhile
    if manifest is None or not usable(vault, manifest):
        return build_and_swap(vault, progress, langs or languages_of(manifest), started, trust)
    changed, removed = changes(manifest, documents.vault_files(vault))
    if not changed and not removed:
        return RefreshStats(checked, 0, 0, 0, False, time.perf_counter() - started)
    try:
        touched, added = _apply(vault, manifest, changed, removed, trust)
    except Exception:  # a damaged index: rebuild from the vault
        return build_and_swap(vault, progress, manifest.languages, started, trust)
    save_manifest(vault, manifest)
    return RefreshStats(checked, touched, len(removed), added, False, time.perf_counter() - started)


def changes(manifest: Manifest, files: documents.Files) -> tuple[list[str], list[str]]:
    """(changed or new files, removed files) according to size and mtime."""
    known = manifest.files
    changed = [
        rel
        for rel, (size, mtime) in files.items()
        if (old := known.get(rel)) is None or old.size != size or old.mtime != mtime
    ]
    removed = [rel for rel in known if rel not in files]
    return sorted(changed), sorted(removed)


def _apply(
    vault: Vault, manifest: Manifest, changed: list[str], removed: list[str], trust: Trust
) -> tuple[int, int]:
    """Index the changes into the current index (the caller holds the index lock). Returns (files
    reindexed, documents added)."""
    known = manifest.files
    writer = engine.Index.open(index_dir(vault) / manifest.dir).writer()
    seals = _Seals(sealer(vault, trust), memo(trust))
    words = analysis(manifest.languages)
    added = touched = 0
    try:
        for rel in removed:
            writer.delete_path(rel)
            del known[rel]
        for rel in changed:
            n = _reindex(vault, rel, known, writer, words, seals)
            if n is not None:
                touched += 1
                added += n
        writer.commit()
    except BaseException:
        writer.cancel()
        raise
    if seals.memo is not None:
        seals.memo.save()
    manifest.updated = now()
    return touched, added


class _Seals:
    """Sealing for an update of the index: the sealer (None: nothing sealed) and the machine's memo."""

    def __init__(self, sealer: Sealer | None, memo: Memo | None) -> None:
        self.sealer = sealer
        self.memo = memo if sealer is not None else None

    def of(self, scan: segments.Scan, data: bytes, base: int) -> list[bytes] | None:
        if self.sealer is None or not scan.entries:
            return None
        return self.sealer.seals(scan.entries, data, base, range(0), self.memo)


def _reindex(
    vault: Vault,
    rel: str,
    known: dict[str, FileRecord],
    writer: engine.Writer,
    words: Analysis,
    seals: _Seals,
) -> int | None:
    """Index file ``rel`` again (only its appended bytes when it just grew); the documents added, or
    None when it is gone or only touched (same content)."""
    path = vault.root / rel
    old = known.get(rel)
    if old is not None and old.mark is not None and documents.is_segment(rel):
        appended = _appended(rel, path, old, writer, words, seals)
        if appended is not None:
            known[rel] = appended[0]
            return appended[1]
    try:
        data = path.read_bytes()
        st = path.stat()
    except FileNotFoundError:
        if rel in known:
            writer.delete_path(rel)
            del known[rel]
        return None
    digest = hashlib.sha256(data).hexdigest()
    if old is not None and old.sha == digest:
        known[rel] = old.touched(len(data), st.st_mtime_ns)
        return None
    writer.delete_path(rel)
    record = FileRecord(len(data), st.st_mtime_ns, digest)
    if documents.is_segment(rel):
        scan = segments.scan(data, rel, offset=0, line=1)
        docs = documents.segment_docs(scan, words, seals.of(scan, data, 0))
        record = replace(record, mark=START.after(scan, len(data)))
    else:
        docs = list(documents.note_docs(rel, data, st.st_mtime_ns / 1e9, words))
    for doc in docs:
        writer.add(doc)
    known[rel] = record
    return len(docs)


def _appended(
    rel: str, path: Path, old: FileRecord, writer: engine.Writer, words: Analysis, seals: _Seals
) -> tuple[FileRecord, int] | None:
    """Index what was appended to a segment since ``old`` (its record), reading on from its mark;
    None when the segment did not just grow or its mark no longer holds (reindex it whole).
    Duplicates (a crash between the commit and the manifest) are dropped when searching."""
    mark = old.mark
    try:
        st = os.stat(path)
        if mark is None or st.st_size == old.size or not mark.holds(path):
            return None
        data, scan = mark.read(path, rel)
    except FileNotFoundError:
        return None
    docs = documents.segment_docs(scan, words, seals.of(scan, data, mark.offset))
    for doc in docs:
        writer.add(doc)
    size = mark.offset + len(data)
    return FileRecord(size, st.st_mtime_ns, None, mark.after(scan, size)), len(docs)
