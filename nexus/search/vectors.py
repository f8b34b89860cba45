"""The vector store: one vector by meaning for every document of the text index, never stale.

Derived state under ``.nexus/vectors/`` (rebuilt when missing, damaged, truncated or made by another
model; nothing in it is ever the only copy of anything). ``meta.json`` names the current folder and
is the commit point (rewritten whole after every change; rows past its count are ignored, then cut)::

    {"version": 1, "dir": "v-XXXX", "model": "...", "rows": N, "dead": D, "paths": [REL, ...],
     "files": {REL: FileRecord}, "built": TIME, "updated": TIME}

The folder holds one row per document ever embedded, in four files of fixed-size records, each
read through a memory map without loading the whole:

* ``codes.bin`` — the vector's signs, 64 bytes: a query is compared with every row by Hamming
  distance first (a scan of 6.4 MB at 100,000 documents);
* ``keys.bin`` — (hash of the document key, file number, alive), 16 bytes;
* ``rows.bin`` — the vector quantised to int8 with its scale (the best candidates by sign are scored
  again with it), the SHA-256 prefix of the bytes it was made from, where its fields are in
* ``rows.jsonl`` — its stored fields (``engine.Stored``: key, path, byte and line range, ...).

Every file is compared with the vault's listing as the text index's manifest is (size and mtime; a
log segment read on from its ``marks.Mark`` when it just grew). A file that changed otherwise is
taken again whole: its rows die and new ones are written, a vector copied from an old row only when
that row was made from the very same bytes, so an edited entry is embedded again. One writer at a
time (``.nexus/locks/vectors.lock``); a full build embeds in as many processes as there are cores.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..ledger.marks import START
from ..storage import durable, segments
from ..storage.locks import exclusive
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust
from . import documents
from .embedding import DIMS, Embedder, Vectors, embedder, model_id
from .engine import Doc, Stored, Terms
from .manifest import FileRecord, now
from .seals import Sealer, memo, sealer

if TYPE_CHECKING:
    from ..keys.checked import Memo

VERSION = 2  # 2: entries' seals
FOLDER = "vectors"
META = "meta.json"
CODE = DIMS // 8
KEYS = np.dtype([("key", "<u8"), ("file", "<i4"), ("alive", "u1"), ("pad", "u1", 3)])
ROWS = np.dtype([("vec", "i1", DIMS), ("scale", "<f4"), ("digest", "<u8"), ("at", "<u8"), ("size", "<u4")])
CANDIDATES = 400  # rows scored exactly after the Hamming scan (all of them in a smaller store)
SCAN = 32_768  # rows a block of the Hamming scan (2 MB of codes)
DEAD = 10_000  # dead rows (edited or removed documents) past which the store is compacted
DEAD_SHARE = 0.5  # ... when they are also more than this share of its rows
PARALLEL = 2_000  # texts from which a build embeds in several processes
BATCH = 256
Progress = Callable[[int, int], None]
LOCK = threading.RLock()


class Damaged(Exception):
    """The store's files do not hold what its meta says (truncated, deleted, unreadable)."""


def folder(vault: Vault) -> Path:
    return vault.state / FOLDER


def key_hash(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")


@dataclass
class Meta:
    dir: str
    model: str
    rows: int = 0
    dead: int = 0
    paths: list[str] = field(default_factory=list)
    files: dict[str, FileRecord] = field(default_factory=dict)
    built: str = ""
    updated: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "version": VERSION,
            "dir": self.dir,
            "model": self.model,
            "rows": self.rows,
            "dead": self.dead,
            "paths": self.paths,
            "files": {rel: r.to_json() for rel, r in self.files.items()},
            "built": self.built,
            "updated": self.updated,
        }

    @classmethod
    def from_json(cls, data: object) -> Meta | None:
        if not isinstance(data, dict) or data.get("version") != VERSION:
            return None
        d, model, rows, dead = data.get("dir"), data.get("model"), data.get("rows"), data.get("dead")
        paths, files = data.get("paths"), data.get("files")
        if not (isinstance(d, str) and isinstance(model, str) and isinstance(rows, int)):
            return None
        if not (isinstance(dead, int) and isinstance(paths, list) and isinstance(files, dict)):
            return None
        records: dict[str, FileRecord] = {}
        for rel, value in files.items():
            record = FileRecord.from_json(value)
            if record is None:
                return None
            records[str(rel)] = record
        return cls(
            d,
            model,
            rows,
            dead,
            [str(p) for p in paths],
            records,
            str(data.get("built") or ""),
            str(data.get("updated") or ""),
        )


_METAS: dict[Path, tuple[tuple[int, int, int], Meta]] = {}  # meta file -> (its stamp, parsed)


def load_meta(vault: Vault, *, shared: bool = False) -> Meta | None:
    """The meta (None: missing or unreadable); ``shared``: the one this process parsed while the
    file's (inode, mtime, size) stays the same, which the caller must not change."""
    path = folder(vault) / META
    try:
        st = os.stat(path)
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        got = _METAS.get(path)
        if shared and got is not None and got[0] == stamp:
            return got[1]
        meta = Meta.from_json(json.loads(path.read_bytes()))
    except (FileNotFoundError, ValueError):
        return None
    if meta is not None and shared:
        _METAS[path] = (stamp, meta)
    return meta


def _save_meta(vault: Vault, meta: Meta) -> None:
    meta.updated = now()
    durable.replace(folder(vault) / META, json.dumps(meta.to_json()).encode(), durable=False)


# ------------------------------------------------------------------ reading


class Store:
    """One folder's rows up to the meta's count, read through memory maps."""

    def __init__(self, path: Path, meta: Meta) -> None:
        self.path, self.meta, self.n = path, meta, meta.rows
        self._fd = -1
        try:
            self.codes = _map(path / "codes.bin", np.dtype("u1"), self.n, (CODE,))
            self.keys = _map(path / "keys.bin", KEYS, self.n)
            self.rows = _map(path / "rows.bin", ROWS, self.n)
            self._fd = os.open(path / "rows.jsonl", os.O_RDONLY)
        except (OSError, ValueError) as err:
            raise Damaged(str(err)) from err
        if self.n and os.fstat(self._fd).st_size < int(self.rows["at"][-1]) + int(self.rows["size"][-1]):
            self.close()
            raise Damaged("rows.jsonl is shorter than its rows say")

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def top(
        self, query: NDArray[np.float32], k: int, files: set[int] | None = None
    ) -> list[tuple[float, int]]:
        """(cosine, row) of the best ``k`` live rows for a unit vector (in files ``files``)."""
        if self.n == 0:
            return []
        live = self.keys["alive"] == 1
        if files is not None:
            live &= np.isin(self.keys["file"], np.fromiter(files, dtype=np.int32))
        want = max(CANDIDATES, k * 4)
        if int(np.count_nonzero(live)) <= want:
            candidates = np.flatnonzero(live)
        else:  # Hamming distance of the signs first, a block of rows at a time (bounded temporaries)
            code = np.packbits(query > 0)
            far = np.empty(self.n, dtype=np.int32)
            for start in range(0, self.n, SCAN):
                block = np.bitwise_xor(self.codes[start : start + SCAN], code)
                far[start : start + SCAN] = np.bitwise_count(block).sum(axis=1, dtype=np.int32)
            far[~live] = DIMS + 1
            candidates = np.argpartition(far, want)[:want]
        scores = self.cosines(candidates, query)
        best = np.argsort(-scores)[:k]
        return [(float(scores[i]), int(candidates[i])) for i in best]

    def cosines(self, rows: NDArray[np.intp], query: NDArray[np.float32]) -> NDArray[np.float32]:
        got = self.rows[np.sort(rows)] if len(rows) else self.rows[:0]
        order = np.argsort(np.argsort(rows))
        got = got[order]
        return np.asarray((got["vec"].astype(np.float32) @ query) * got["scale"], dtype=np.float32)

    def find(self, keys: Iterable[str]) -> dict[str, int]:
        """The live row of each key that has one."""
        wanted = {key_hash(k): k for k in keys}
        if not wanted or self.n == 0:
            return {}
        hashes = self.keys["key"]
        rows = np.flatnonzero(
            np.isin(hashes, np.fromiter(wanted, dtype=np.uint64)) & (self.keys["alive"] == 1)
        )
        return {wanted[int(hashes[r])]: int(r) for r in rows}

    def stored(self, rows: Sequence[int]) -> list[Stored]:
        """The stored fields of each row."""
        got = self.rows[np.asarray(rows, dtype=np.intp)] if len(rows) else self.rows[:0]
        out = []
        for row, at, size in zip(rows, got["at"].tolist(), got["size"].tolist(), strict=True):
            try:
                key, kind, path, agent, channel, type_, status, ts, heading, loc, seal = json.loads(
                    os.pread(self._fd, size, at)
                )
                out.append(
                    Stored(
                        key,
                        kind,
                        path,
                        agent,
                        channel,
                        type_,
                        status,
                        ts,
                        heading,
                        tuple(loc),
                        bytes.fromhex(seal),
                    )
                )
            except (OSError, ValueError, TypeError) as err:
                raise Damaged(f"row {row}: {err}") from err
        return out


def _map(path: Path, dtype: np.dtype[Any], n: int, shape: tuple[int, ...] = ()) -> Any:
    size = path.stat().st_size
    need = n * dtype.itemsize * (int(np.prod(shape)) if shape else 1)
    if size < need:
        raise Damaged(f"{path.name} is {size} bytes; {need} expected")
    if n == 0:
        return np.zeros((0, *shape), dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", shape=(n, *shape))


# ------------------------------------------------------------------ writing


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


def _embed(texts: list[str], progress: Progress | None) -> Vectors:
    """Every text's vector, in as many processes as there are cores when there are many."""
    import multiprocessing

    out = np.zeros((len(texts), DIMS), dtype=np.float32)
    batches = [texts[i : i + BATCH] for i in range(0, len(texts), BATCH)]
    procs = min(os.cpu_count() or 1, 8)
    done = 0
    if progress is not None:
        progress(0, len(texts))
    if len(texts) >= PARALLEL and procs > 1 and "fork" in multiprocessing.get_all_start_methods():
        embedder().embed(["."])  # loaded before the fork: the children share its pages
        with multiprocessing.get_context("fork").Pool(procs) as pool:
            for i, got in enumerate(pool.imap(_embed_batch, batches)):
                out[i * BATCH : i * BATCH + len(got)] = got
                done += len(got)
                if progress is not None:
                    progress(done, len(texts))
        return out
    for i, batch in enumerate(batches):
        out[i * BATCH : i * BATCH + len(batch)] = embedder().embed(batch)
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
    made = _embed([pending.texts[i] for i in fresh], progress)
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
    _save_meta(vault, meta)
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
                _save_meta(vault, meta)
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


class Opened:
    """A process's open store, reopened when the meta changes (``Damaged``: rebuilt once)."""

    def __init__(self) -> None:
        self.stores: dict[Path, tuple[tuple[str, int, int], Store]] = {}

    def open(self, vault: Vault, meta: Meta) -> Store:
        stamp = (meta.dir, meta.rows, meta.dead)
        got = self.stores.get(vault.root)
        if got is not None and got[0] == stamp:
            return got[1]
        if got is not None:
            got[1].close()
        store = Store(folder(vault) / meta.dir, meta)
        self.stores[vault.root] = (stamp, store)
        return store

    def forget(self, vault: Vault) -> None:
        got = self.stores.pop(vault.root, None)
        if got is not None:
            got[1].close()


OPENED = Opened()


def files_matching(meta: Meta, accept: Callable[[str], bool]) -> set[int]:
    return {i for i, rel in enumerate(meta.paths) if accept(rel)}


def embed_query(text: str) -> NDArray[np.float32] | None:
    """The query's unit vector, or None when the model knows none of its words."""
    model: Embedder = embedder()
    if not model.knows(text):
        return None
    vector: NDArray[np.float32] = model.embed([text])[0]
    return vector
