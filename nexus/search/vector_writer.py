"""Keeping the vector store (``vectors``) up to date with the vault, never stale.

Every file is compared with the vault's listing as the text index's manifest is (size and mtime; a
log segment read on from its ``marks.Mark`` when it just grew). A file that changed otherwise is
taken again whole: its rows die and new ones are written, a vector copied from an old row only when
that row was made from the very same bytes, so an edited entry is embedded again. Rows are appended
past the meta's count and the meta rewritten whole after them (the commit point). One writer at a
time (``.nexus/locks/vectors.lock``); a full build embeds in as many processes as there are cores.
A store mostly of dead rows is compacted into a new folder, its live vectors copied.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..ledger.marks import START
from ..storage import segments
from ..storage.locks import exclusive
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust
from . import documents
from .embedding import DIMS, Vectors, embedder, model_id
from .engine import Doc, Terms
from .manifest import FileRecord, now
from .seals import Sealer, memo, sealer
from .vectors import (
    CODE,
    KEYS,
    META,
    ROWS,
    Damaged,
    Meta,
    Store,
    folder,
    key_hash,
    load_meta,
    save_meta,
)

if TYPE_CHECKING:
    from ..keys.checked import Memo

DEAD = 10_000  # dead rows (edited or removed documents) past which the store is compacted
DEAD_SHARE = 0.5  # ... when they are also more than this share of its rows
PARALLEL = 2_000  # texts from which a build embeds in several processes
BATCH = 256
Progress = Callable[[int, int], None]
LOCK = threading.RLock()


@dataclass
class _Pending:
    """Rows to append: their documents, texts, digests and file numbers; vectors copied or to make."""

    docs: list[Doc] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    digests: list[int] = field(default_factory=list)
    files: list[int] = field(default_factory=list)
    copied: dict[int, int] = field(default_factory=dict)  # pending index -> old row of the same bytes
    sealer: Sealer | None = None
    memo: Memo | None = None

    def add(self, doc: Doc, text: str, raw: bytes, file_no: int) -> None:
        self.docs.append(doc)
        self.texts.append(text)
        self.digests.append(
            int.from_bytes(hashlib.sha256(raw + b"\0" + text.encode()).digest()[:8], "little")
        )
        self.files.append(file_no)


def _quantised(vectors: Vectors) -> tuple[NDArray[np.int8], NDArray[np.float32]]:
    top = np.abs(vectors).max(axis=1, keepdims=True)
    top[top == 0] = 1.0
    q = np.rint(vectors / top * 127).astype(np.int8)
    return q, (top[:, 0] / 127).astype(np.float32)


def _embed_batch(texts: list[str]) -> Vectors:
    return embedder().embed(texts)


def _embed(texts: list[str], progress: Progress | None, top: Path) -> Vectors:
    """Every text's vector, in as many processes as there are cores when there are many (``top``:
    the store's folder, where the model's table is mapped from)."""
    import multiprocessing

    out = np.zeros((len(texts), DIMS), dtype=np.float32)
    batches = [texts[i : i + BATCH] for i in range(0, len(texts), BATCH)]
    procs = min(os.cpu_count() or 1, 8)
    done = 0
    if progress is not None:
        progress(0, len(texts))
    if len(texts) >= PARALLEL and procs > 1 and "fork" in multiprocessing.get_all_start_methods():
        embedder(top).embed(["."])  # loaded before the fork: the children share its pages
        with multiprocessing.get_context("fork").Pool(procs) as pool:
            for i, got in enumerate(pool.imap(_embed_batch, batches)):
                out[i * BATCH : i * BATCH + len(got)] = got
                done += len(got)
                if progress is not None:
                    progress(done, len(texts))
        return out
    for i, batch in enumerate(batches):
        out[i * BATCH : i * BATCH + len(batch)] = embedder(top).embed(batch)
        done += len(batch)
        if progress is not None:
            progress(done, len(texts))
    return out


def _append(path: Path, meta: Meta, pending: _Pending, old: Store | None, progress: Progress | None) -> None:
    """Write the pending rows after the meta's count (the caller saves the meta)."""
    n = len(pending.docs)
    if n == 0:
        return
    fresh = [i for i in range(n) if i not in pending.copied]
    made = _embed([pending.texts[i] for i in fresh], progress, path.parent)
    vecs = np.zeros((n, DIMS), dtype=np.int8)
    scales = np.zeros(n, dtype=np.float32)
    codes = np.zeros((n, CODE), dtype=np.uint8)
    if fresh:
        q, s = _quantised(made)
        vecs[fresh], scales[fresh], codes[fresh] = q, s, np.packbits(made > 0, axis=1)
    if pending.copied and old is not None:
        mine = np.fromiter(pending.copied.keys(), dtype=np.intp)
        theirs = np.fromiter(pending.copied.values(), dtype=np.intp)
        vecs[mine], scales[mine] = old.rows["vec"][theirs], old.rows["scale"][theirs]
        codes[mine] = old.codes[theirs]
    keys = np.zeros(n, dtype=KEYS)
    keys["key"] = [key_hash(d.key) for d in pending.docs]
    keys["file"] = pending.files
    keys["alive"] = 1
    rows = np.zeros(n, dtype=ROWS)
    rows["vec"], rows["scale"], rows["digest"] = vecs, scales, pending.digests
    fields_path = path / "rows.jsonl"
    at = fields_path.stat().st_size if fields_path.exists() else 0
    lines = []
    for i, d in enumerate(pending.docs):
        line = (
            json.dumps(
                [
                    d.key,
                    d.kind,
                    d.path,
                    d.agent,
                    d.channel,
                    d.type,
                    d.status,
                    d.ts,
                    d.heading,
                    list(d.loc),
                    d.seal.hex(),
                ],
                ensure_ascii=False,
            ).encode()
            + b"\n"
        )
        rows["at"][i], rows["size"][i] = at, len(line)
        at += len(line)
        lines.append(line)
    for name, data, stride in (
        ("codes.bin", codes.tobytes(), CODE),
        ("keys.bin", keys.tobytes(), KEYS.itemsize),
        ("rows.bin", rows.tobytes(), ROWS.itemsize),
    ):
        _write_at(path / name, meta.rows * stride, data)
    with open(fields_path, "ab") as f:
        f.write(b"".join(lines))
    meta.rows += n


def _write_at(path: Path, offset: int, data: bytes) -> None:
    """Write ``data`` at ``offset`` (rows past the meta's count, left by a crash, are cut first)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.ftruncate(fd, offset)
        os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


def _kill(path: Path, meta: Meta, file_no: int) -> dict[int, int]:
    """Mark the rows of file ``file_no`` dead; returns their digests' rows (for copying vectors)."""
    if meta.rows == 0:
        return {}
    keys = np.memmap(path / "keys.bin", dtype=KEYS, mode="r+", shape=(meta.rows,))
    rows = np.flatnonzero((keys["file"] == file_no) & (keys["alive"] == 1))
    if len(rows) == 0:
        return {}
    digests = np.memmap(path / "rows.bin", dtype=ROWS, mode="r", shape=(meta.rows,))["digest"][rows]
    keys["alive"][rows] = 0
    keys.flush()
    meta.dead += len(rows)
    return {int(d): int(r) for d, r in zip(digests, rows, strict=True)}


def _file_no(meta: Meta, rel: str) -> int:
    try:
        return meta.paths.index(rel)
    except ValueError:
        meta.paths.append(rel)
        return len(meta.paths) - 1


def _whole(vault: Vault, rel: str, pending: _Pending, file_no: int) -> FileRecord | None:
    """Queue every document of file ``rel``; its record, or None when it is gone."""
    path = vault.root / rel
    try:
        data = path.read_bytes()
        st = path.stat()
    except FileNotFoundError:
        return None
    record = FileRecord(len(data), st.st_mtime_ns, None)
    if documents.is_segment(rel):
        scan = segments.scan(data, rel, offset=0, line=1)
        _queue_entries(scan, data, 0, pending, file_no)
        return FileRecord(len(data), st.st_mtime_ns, None, START.after(scan, len(data)))
    for doc, text in documents.note_texts(rel, data, st.st_mtime_ns / 1e9):
        pending.add(doc, text, data[doc.loc[0] : doc.loc[1]], file_no)
    return record


def _queue_entries(scan: segments.Scan, data: bytes, base: int, pending: _Pending, file_no: int) -> None:
    """Queue a scan's entries, each with its seal as the text index keeps it (``seals``: a hit
    proven by two hashes instead of Ed25519)."""
    empty = Terms({}, 0)
    found = pending.sealer.seals(scan.entries, data, base, range(0), pending.memo) if pending.sealer else None
    for i, located in enumerate(scan.entries):
        e = located.entry
        loc = (located.offset, located.end_offset, located.line_start, located.line_end)
        seal = found[i] if found else b""
        doc = Doc(
            f"e:{e.id}", "entry", located.file, e.agent, e.channel, e.type, "", e.ts, "", empty, loc, seal
        )
        raw = data[located.offset - base : located.end_offset - base]
        pending.add(doc, documents.entry_text(located), raw, file_no)


def _appended(vault: Vault, rel: str, old: FileRecord, pending: _Pending, file_no: int) -> FileRecord | None:
    """Queue what was appended to segment ``rel`` since ``old``; None when it did not just grow."""
    mark, path = old.mark, vault.root / rel
    try:
        st = os.stat(path)
        if mark is None or st.st_size <= old.size or not mark.holds(path):
            return None
        data, scan = mark.read(path, rel)
    except FileNotFoundError:
        return None
    _queue_entries(scan, data, mark.offset, pending, file_no)
    size = mark.offset + len(data)
    return FileRecord(size, st.st_mtime_ns, None, mark.after(scan, size))


def changes(meta: Meta, files: documents.Files) -> tuple[list[str], list[str]]:
    known = meta.files
    changed = [
        rel
        for rel, (size, mtime) in files.items()
        if (old := known.get(rel)) is None or old.size != size or old.mtime != mtime
    ]
    return sorted(changed), sorted(rel for rel in known if rel not in files)


def _update(
    vault: Vault,
    meta: Meta,
    files: documents.Files,
    progress: Progress | None,
    trust: Trust,
    seed: Store | None = None,
) -> None:
    """Bring ``meta``'s folder up to date with ``files`` (the caller holds the lock and saves);
    ``seed``: an older store whose live vectors are copied where made from the same bytes."""
    path = folder(vault) / meta.dir
    changed, removed = changes(meta, files)
    pending = _Pending(sealer=sealer(vault, trust))
    if pending.sealer is not None:
        pending.memo = memo(trust)
    for rel in removed:
        _kill(path, meta, _file_no(meta, rel))
        del meta.files[rel]
    old_rows: dict[int, int] = {}
    if seed is not None:
        live = np.flatnonzero(seed.keys["alive"] == 1)
        old_rows = dict(zip(seed.rows["digest"][live].tolist(), live.tolist(), strict=True))
    for rel in changed:
        no = _file_no(meta, rel)
        old = meta.files.get(rel)
        record = _appended(vault, rel, old, pending, no) if old is not None and old.mark is not None else None
        if record is None:
            old_rows.update(_kill(path, meta, no))
            start = len(pending.docs)
            record = _whole(vault, rel, pending, no)
            for i in range(start, len(pending.docs)):
                same = old_rows.get(pending.digests[i])
                if same is not None:
                    pending.copied[i] = same
        if record is None:
            meta.files.pop(rel, None)
        else:
            meta.files[rel] = record
    if pending.memo is not None:
        pending.memo.save()
    if not pending.docs:
        return
    old_store = seed or (Store(path, Meta(meta.dir, meta.model, meta.rows)) if pending.copied else None)
    try:
        _append(path, meta, pending, old_store, progress)
    finally:
        if old_store is not None and old_store is not seed:
            old_store.close()


def _build(vault: Vault, progress: Progress | None, trust: Trust, seed: Store | None = None) -> Meta:
    """A new folder with every document of the vault, made current (``seed``: an older store of
    this model, compacted: its vectors copied where the bytes are the same)."""
    top = folder(vault)
    top.mkdir(parents=True, exist_ok=True)
    meta = Meta(f"v-{secrets.token_hex(4)}", model_id(), built=now())
    (top / meta.dir).mkdir()
    _update(vault, meta, documents.vault_files(vault), progress, trust, seed)
    save_meta(vault, meta)
    for child in top.iterdir():
        if child.is_dir() and child.name.startswith("v-") and child.name != meta.dir:
            shutil.rmtree(child, ignore_errors=True)
    return meta


def usable(vault: Vault, meta: Meta | None) -> bool:
    """Made by this model, its files as long as its rows need (a stat each)."""
    if meta is None or meta.model != model_id():
        return False
    path = folder(vault) / meta.dir
    try:
        sizes = [os.stat(path / name).st_size for name in ("codes.bin", "keys.bin", "rows.bin", "rows.jsonl")]
    except OSError:
        return False
    need = (meta.rows * CODE, meta.rows * KEYS.itemsize, meta.rows * ROWS.itemsize)
    return all(size >= n for size, n in zip(sizes, need, strict=False))


def refresh(
    vault: Vault, *, progress: Progress | None = None, force: bool = False, trust: Trust = NO_PINS
) -> Meta:
    """Bring the store up to date with the vault (cheap when nothing changed: a stat per file);
    build it anew when missing, damaged, made by another model, mostly dead rows, or ``force``.
    ``trust``: the machine's pins and seal secret (rows of entries that verify are sealed)."""
    with LOCK:
        meta = load_meta(vault, shared=True)
        files = documents.vault_files(vault)
        if not force and usable(vault, meta) and meta is not None and not any(changes(meta, files)):
            return meta
        with exclusive(vault.lock("vectors")):
            meta = load_meta(vault)
            if force or not usable(vault, meta) or meta is None:
                return _build(vault, progress, trust)
            if any(changes(meta, documents.vault_files(vault))):
                try:
                    _update(vault, meta, documents.vault_files(vault), progress, trust)
                except Damaged:
                    return _build(vault, progress, trust)
                save_meta(vault, meta)
            if meta.dead > max(DEAD, meta.rows * DEAD_SHARE):  # mostly dead rows: compacted
                old = Store(folder(vault) / meta.dir, meta)
                try:
                    return _build(vault, progress, trust, old)
                finally:
                    old.close()
            return meta


def refresh_vectors(vault: Vault, trust: Trust) -> bool:
    """``refresh`` a store that exists (the watcher's: the first search by meaning builds it);
    whether there was one."""
    if not (folder(vault) / META).exists():
        return False
    refresh(vault, trust=trust)
    return True
