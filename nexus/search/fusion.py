"""Ranking by meaning, and by meaning and words together (hybrid, the default).

Meaning: the query's vector (``embedding``) against every document's (``vectors``), cosine first;
a document below ``MIN_COSINE`` does not mean what was asked and is no hit.

Hybrid: the candidates of both rankings (only the word-ranked ones for a query with phrases, fields
or operators, so what the syntax asks for still holds). A document holding every word of the query
comes first, in the order text search gives it (so a query of words a note holds finds it as text
search does); every other one by its cosine (+ ``WEIGHT`` × its BM25 over the best one's), and when
some document holds every word, one holding none joins only with a cosine of ``STRONG`` or more. Measured
on benchmarks/relevance.py (docs/search.md) against cosine + 0.1-0.3 × normalised BM25 for all and
reciprocal rank fusion of both top fives (``FUSION = "rrf"``): weak word matches of a paraphrase
outranked the note it meant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from numpy.typing import NDArray

from .engine import Stored
from .vectors import Store

WEIGHT = 0.0  # of the normalised BM25 added to the cosine of a document missing some word
EVERY = 2.0  # added for a document that holds every word of the query (0: no such tier)
FUSION = "weighted"  # or "rrf": reciprocal rank fusion over the top RRF_DEPTH of each list
RRF_DEPTH = 5
RRF_K = 60

MIN_COSINE = 0.14  # below it a document does not mean what was asked (unless it holds the words)
STRONG = 0.3  # what a document holding no query word needs when others hold every word

Accept = Callable[[Stored], bool]


def by_meaning(
    store: Store, query: NDArray[np.float32], k: int, files: set[int] | None, accept: Accept
) -> tuple[list[tuple[float, Stored]], bool]:
    """(cosine, document) of the best ``k`` accepted documents, best first; and whether rows were
    left unread (more may be accepted further down)."""
    rows = store.top(query, k, files)
    near = [(score, row) for score, row in rows if score >= MIN_COSINE]
    found = store.stored([row for _, row in near])
    out = [(score, stored) for (score, _), stored in zip(near, found, strict=True) if accept(stored)]
    return out, len(near) >= k


def fused(
    store: Store,
    query: NDArray[np.float32],
    words: list[tuple[float, Stored, bool]],
    meaning: list[tuple[float, Stored]],
) -> Iterator[tuple[float, Stored]]:
    """Both rankings' candidates (``words``: (BM25, document, whether it holds every word);
    ``meaning``: (cosine, document)), one a key, best first by the fused score."""
    cosine = {stored.key: score for score, stored in meaning}
    missing = [s.key for _, s, _ in words if s.key not in cosine]
    if missing:
        found = store.find(missing)
        if found:
            keys = list(found)
            scores = store.cosines(np.fromiter((found[k] for k in keys), dtype=np.intp), query)
            cosine.update(zip(keys, (float(x) for x in scores), strict=True))
    docs: dict[str, Stored] = {}
    for _, stored, _ in words:
        docs.setdefault(stored.key, stored)
    for _, stored in meaning:
        docs.setdefault(stored.key, stored)
    if FUSION == "rrf":
        score = _rrf(docs, words, meaning)
    else:
        best = max((s for s, _, _ in words), default=0.0) or 1.0
        score = {key: cosine.get(key, 0.0) for key in docs}
        if any(every for _, _, every in words):  # the words were found: only a strong meaning joins
            held = {s.key for _, s, _ in words}
            for key in [k for k in docs if k not in held and score[k] < STRONG]:
                del docs[key], score[key]
        seen: set[str] = set()
        for s, stored, every in words:
            if stored.key not in seen:
                seen.add(stored.key)
                if every and EVERY:  # the word ranking's order, above every other
                    score[stored.key] = EVERY + s / best
                else:
                    score[stored.key] += WEIGHT * s / best
    first = {s.key: i for i, (_, s, every) in enumerate(words) if every}  # (the word ranking's order)
    for key in sorted(docs, key=lambda k: (-score[k], first.get(k, len(first)), k)):  # ties: by key
        yield score[key], docs[key]


def _rrf(
    docs: dict[str, Stored], words: list[tuple[float, Stored, bool]], meaning: list[tuple[float, Stored]]
) -> dict[str, float]:
    """Reciprocal rank fusion of both top ``RRF_DEPTH`` (measured, not used: docs/search.md)."""
    score = dict.fromkeys(docs, 0.0)
    for rank, key in enumerate([s.key for _, s, _ in words][:RRF_DEPTH]):
        score[key] += 1 / (RRF_K + rank + 1)
    for rank, (_, stored) in enumerate(meaning):  # below the fused heads, meaning's order
        score[stored.key] += (1 / (RRF_K + rank + 1)) if rank < RRF_DEPTH else 1e-6 / (rank + 1)
    return score
