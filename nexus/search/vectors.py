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

This module reads the store (``Store``: the best rows for a query vector, their stored fields);
``vector_writer`` keeps it up to date with the vault. The folder ``.nexus/vectors/`` also holds the
model's unpacked embedding table (``embedding``), which every process maps instead of unpacking it.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..storage import durable
from ..storage.vault import Vault
from .embedding import DIMS, Embedder, embedder
from .engine import Stored
from .manifest import FileRecord, now

VERSION = 2  # 2: entries' seals
FOLDER = "vectors"
META = "meta.json"
CODE = DIMS // 8
KEYS = np.dtype([("key", "<u8"), ("file", "<i4"), ("alive", "u1"), ("pad", "u1", 3)])
ROWS = np.dtype([("vec", "i1", DIMS), ("scale", "<f4"), ("digest", "<u8"), ("at", "<u8"), ("size", "<u4")])
CANDIDATES = 400  # rows scored exactly after the Hamming scan (all of them in a smaller store)
SCAN = 32_768  # rows a block of the Hamming scan (2 MB of codes)


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


def save_meta(vault: Vault, meta: Meta) -> None:
    meta.updated = now()
    durable.replace(folder(vault) / META, json.dumps(meta.to_json()).encode(), durable=False)


class Store:
    """One folder's rows up to the meta's count: the codes and keys (scanned whole by a query)
    through memory maps; the few int8 rows a query scores, and their fields, read one by one
    (``record``: a map would have the kernel map the pages around each as well, ~64 KB a row)."""

    def __init__(self, path: Path, meta: Meta) -> None:
        self.path, self.meta, self.n = path, meta, meta.rows
        self._fd = self._rows_fd = -1
        self._by_hash: NDArray[np.int32] | None = None  # rows in the order of their keys' hashes
        try:
            self.codes = _map(path / "codes.bin", np.dtype("u1"), self.n, (CODE,))
            self.keys = _map(path / "keys.bin", KEYS, self.n)
            self.rows = _map(path / "rows.bin", ROWS, self.n)
            self._rows_fd = os.open(path / "rows.bin", os.O_RDONLY)
            self._fd = os.open(path / "rows.jsonl", os.O_RDONLY)
        except (OSError, ValueError) as err:
            self.close()
            raise Damaged(str(err)) from err
        if self.n and os.fstat(self._fd).st_size < int(self.rows["at"][-1]) + int(self.rows["size"][-1]):
            self.close()
            raise Damaged("rows.jsonl is shorter than its rows say")

    def close(self) -> None:
        for fd in (self._fd, self._rows_fd):
            if fd >= 0:
                os.close(fd)
        self._fd = self._rows_fd = -1

    def records(self, rows: Sequence[int] | NDArray[np.intp]) -> NDArray[Any]:
        """The int8 rows ``rows``, in that order, read from rows.bin (not through its map)."""
        size = ROWS.itemsize
        try:
            data = b"".join(os.pread(self._rows_fd, size, int(r) * size) for r in rows)
        except OSError as err:
            raise Damaged(f"rows.bin: {err}") from err
        if len(data) != len(rows) * size:
            raise Damaged("rows.bin is shorter than its rows say")
        return np.frombuffer(data, dtype=ROWS)

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
            code = np.packbits(query > 0).view("<u8")
            words = self.codes.view("<u8")  # a row's 512 signs as 8 words: 8 popcounts, not 64
            far = np.zeros(self.n, dtype=np.uint16)
            for start in range(0, self.n, SCAN):
                block, out = words[start : start + SCAN], far[start : start + SCAN]
                for i in range(CODE // 8):  # a column at a time: ~3x faster than a sum along rows
                    out += np.bitwise_count(np.bitwise_xor(block[:, i], code[i]))
            far[~live] = DIMS + 1
            # the nearest ``want``, found by counting each distance instead of partitioning
            cut = int(np.searchsorted(np.cumsum(np.bincount(far, minlength=DIMS + 2)), want))
            below = np.flatnonzero(far < cut)
            candidates = np.concatenate((below, np.flatnonzero(far == cut)[: want - len(below)]))
        scores = self.cosines(candidates, query)
        best = np.argsort(-scores)[:k]
        return [(float(scores[i]), int(candidates[i])) for i in best]

    def cosines(self, rows: NDArray[np.intp], query: NDArray[np.float32]) -> NDArray[np.float32]:
        got = self.records(rows)
        return np.asarray((got["vec"].astype(np.float32) @ query) * got["scale"], dtype=np.float32)

    def find(self, keys: Iterable[str]) -> dict[str, int]:
        """The live row of each key that has one (the last, should a key have several). Looked up by
        binary search in the rows' key hashes, through their order (``_by_hash``, made once a store:
        4 bytes a row), where comparing every row's hash with each key cost ~2 ms a search at 100,000
        rows."""
        wanted = {key_hash(k): k for k in keys}
        if not wanted or self.n == 0:
            return {}
        hashes, alive = self.keys["key"], self.keys["alive"]
        if self._by_hash is None:  # (a row's hash never changes: rows are only appended, or retired)
            self._by_hash = np.argsort(hashes, kind="stable").astype(np.int32)
        want = np.fromiter(wanted, dtype=np.uint64)
        lo = np.searchsorted(hashes, want, side="left", sorter=self._by_hash)
        hi = np.searchsorted(hashes, want, side="right", sorter=self._by_hash)
        rows = sorted(
            int(r) for a, b in zip(lo.tolist(), hi.tolist(), strict=True) for r in self._by_hash[a:b]
        )
        return {wanted[int(hashes[r])]: r for r in rows if alive[r] == 1}

    def stored(self, rows: Sequence[int]) -> list[Stored]:
        """The stored fields of each row."""
        got = self.records(rows)
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
    """The first ``n`` records of ``path``, read-only through a memory map."""
    size = path.stat().st_size
    need = n * dtype.itemsize * (int(np.prod(shape)) if shape else 1)
    if size < need:
        raise Damaged(f"{path.name} is {size} bytes; {need} expected")
    if n == 0:
        return np.zeros((0, *shape), dtype=dtype)
    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), need, access=mmap.ACCESS_READ)
    return np.frombuffer(mapped, dtype=dtype, count=n * (int(np.prod(shape)) if shape else 1)).reshape(
        (n, *shape)
    )


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


def embed_query(vault: Vault, text: str) -> NDArray[np.float32] | None:
    """The query's unit vector, or None when the model knows none of its words."""
    model: Embedder = embedder(folder(vault))
    if not model.knows(text):
        return None
    vector: NDArray[np.float32] = model.embed([text])[0]
    return vector
