"""BM25 over whole posting blocks: the top documents for a query of plain words.

Each posting stores its BM25 term weight (saturated and length-normalised at index time, see
``engine``), so a document's score is the sum over the query's words of weight × idf, the same as
Whoosh's matcher with the ``engine`` weighting, several times faster than its per-posting collector.
Documents matching every word come first; for a query of plain words, the best of those matching
fewer follow (most words, then best score).

A ``Scorer`` keeps decoded posting lists by (segment id, field, term): a Whoosh segment never
changes (deletions are applied per query), so they stay valid while the index folder does; up to
``POSTINGS_BUDGET`` postings, the least recently used dropped. They are kept compact (``Postings``:
two arrays, 8 bytes a posting, where a dict of Python numbers took ~75).

The arithmetic runs in numpy over those arrays (viewed, not copied): the documents holding every
word are the rarest word's, binary-searched in each other word's docnums, so a word in nearly every
document costs one search per candidate; each segment hands over only its best rows (and any tied
with the last); deletions and filters are masks indexed by docnum. Scores are summed word by word,
rarest first, in doubles, so they are the numbers a loop over every posting gives, to the last bit
(``tests/test_search_scoring.py`` checks it against exhaustive scoring). At 100,000 entries this
made realistic two- and three-word queries ~1.3x and ~2x cheaper in CPU, and a query of the most
common words ~15x (``benchmarks/bench_search_lengths.py``).
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from .engine import Group, Leaf, Searcher, Term, idf

POSTINGS_BUDGET = 2_000_000  # postings kept per scorer, decoded and by weight (~16 MB each): the last used
SHARE = 8  # a word's postings are ranked whole unless fewer than 1/SHARE of them are needed

Row = tuple[int, float, int]  # (words matched, score, docnum)


class Postings:
    """Postings as two arrays: docnums and their weights (kept exactly: float32 as Whoosh stores
    them, else doubles), in the order given (a segment's: docnum order; a ranking: heaviest first;
    a word of several stems: its first stem's documents first)."""

    __slots__ = ("ids", "weights")

    def __init__(self, ids: array[int], weights: array[float]) -> None:
        self.ids, self.weights = ids, weights

    def __len__(self) -> int:
        return len(self.ids)

    def items(self) -> Iterator[tuple[int, float]]:
        return zip(self.ids, self.weights, strict=True)


def heaviest(ws: array[float], k: int) -> list[int]:
    """The positions of the ``k`` heaviest weights, heaviest first, equal weights in position order:
    exactly ``sorted(range(len(ws)), key=ws.__getitem__, reverse=True)[:k]`` (a stable sort), found
    without ordering them all (in C): the positions at or above the k-th heaviest weight, ordered."""
    return _heaviest(_vector(ws), k).tolist() if k > 0 else []


def _heaviest(ws: NDArray[np.float64], k: int) -> NDArray[np.intp]:
    """``heaviest`` of a numpy array: positions, heaviest first, equal weights in position order."""
    top = _best(ws, k)
    return top[np.argsort(-ws[top], kind="stable")][:k]


Posts = tuple[Postings, float]  # a word's postings, and the factor (idf) scoring them
V = TypeVar("V", bound=Postings)
Key = tuple[str, str, str]  # (segment id, field, term)


class _Budgeted(Generic[V]):
    """Values by key, dropped least recently used first when their sizes pass the budget."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.held = 0
        self.items: dict[Key, V] = {}

    def get(self, key: Key) -> V | None:
        got = self.items.pop(key, None)
        if got is not None:
            self.items[key] = got  # (most recently used last)
        return got

    def put(self, key: Key, value: V) -> None:
        if len(value) >= self.budget // 4:
            return
        self.items[key] = value
        self.held += len(value)
        while self.held > self.budget:
            self.held -= len(self.items.pop(next(iter(self.items))))


class Scorer:
    """Scores queries of plain words against one index folder's segments (see the module)."""

    def __init__(self, budget: int = POSTINGS_BUDGET) -> None:
        self.decoded: _Budgeted[Postings] = _Budgeted(budget)
        self.by_weight: _Budgeted[Postings] = _Budgeted(budget)
        self.dead: dict[tuple[str, int], NDArray[np.bool_]] = {}  # (segment id, deletions) -> mask

    def postings(self, leaf: Leaf, term: Term) -> Postings | None:
        """One term's postings in one segment, in docnum order (deleted documents included)."""
        key = (leaf.segment_id, *term) if leaf.segment_id is not None else None
        if key is not None and (cached := self.decoded.get(key)) is not None:
            return cached
        got = leaf.postings(*term)
        if got is None:
            return None
        out = Postings(*got)
        if key is not None:
            self.decoded.put(key, out)
        return out

    def _dead(self, leaf: Leaf) -> NDArray[np.bool_] | None:
        """A segment's deleted documents as a mask (kept: a segment's deletions only ever grow, so its
        id and their number say which they are)."""
        if not leaf.deleted:
            return None
        key = (leaf.segment_id or "", len(leaf.deleted))
        got = self.dead.get(key) if leaf.segment_id is not None else None
        if got is None:
            got = _mask(leaf.deleted, max(leaf.deleted) + 1)
            assert got is not None
            if leaf.segment_id is not None:
                self.dead[key] = got
        return got

    def _ranked(
        self, leaf: Leaf, group: Group, got: Postings, enough: int | None = None
    ) -> Iterable[tuple[int, float]]:
        """A word's postings in one segment, heaviest first (kept like the decoded postings); only the
        heaviest ``enough`` when the caller needs no more and they are a small share (not kept:
        ``heapq.nlargest`` gives exactly the first ``enough`` of the whole ranking, ties in order)."""
        key = (leaf.segment_id, *group[0]) if leaf.segment_id is not None and len(group) == 1 else None
        if key is not None and (cached := self.by_weight.get(key)) is not None:
            return cached.items()
        ids, ws = got.ids, got.weights
        if enough is not None and enough * SHARE < len(got):
            return [(ids[i], ws[i]) for i in heaviest(ws, enough)]
        order = np.argsort(-_vector(ws), kind="stable")  # (heaviest first, ties in docnum order)
        ranked = Postings(array("i"), array(ws.typecode))
        ranked.ids.frombytes(np.frombuffer(ids, dtype=np.intc)[order].tobytes())
        ranked.weights.frombytes(np.frombuffer(ws, dtype=_DTYPES[ws.typecode])[order].tobytes())
        if key is not None:
            self.by_weight.put(key, ranked)
        return ranked.items()

    def top(
        self,
        searcher: Searcher,
        groups: list[Group],
        allow: set[int] | None,
        k: int,
        partial: bool,
        need: int | None = None,
    ) -> tuple[list[Row], bool]:
        """The best ``k`` documents for words ``groups`` (see the module); with ``partial``, those
        matching fewer words follow (computed only when fewer than ``k`` match them all, and not at
        all when at least ``need`` do: they would rank after those). Returns the rows and whether
        partial matches were left out so (ask again without ``need`` if the caller lacks hits)."""
        n = searcher.doc_count_all()
        leaves = searcher.leaves()
        found = [{t: self.postings(leaf, t) for g in groups for t in g} for leaf, _ in leaves]
        idfs: dict[Term, float] = {}
        df_of: list[int] = []
        for group in groups:
            total_df = 0
            for term in group:  # (a term's postings, deleted documents included: Whoosh's df)
                df = sum(len(got) for each in found if (got := each[term]) is not None)
                total_df += df
                idfs[term] = idf(n, df)
            df_of.append(total_df)
        if not partial and not all(df_of):
            return [], False
        order = sorted(range(len(groups)), key=lambda gi: df_of[gi])
        sources = [groups[gi] for gi in order]
        scored: list[Row] = []  # (words matched, score, -docnum)
        allowed = _mask(allow, n)
        segments: list[_Segment] = []
        for (leaf, base), mine in zip(leaves, found, strict=True):
            dead = self._dead(leaf)
            seg = _Segment(leaf, base, [_group_postings(mine, g, idfs) for g in sources], sources, dead)
            segments.append(seg)
            scored.extend(seg.full_rows(len(groups), allow, allowed, k))
        left_out = False
        if partial and len(groups) > 1 and len(scored) < k:
            if need is not None and len(scored) >= need:
                left_out = True
            else:
                for seg in segments:
                    scored.extend(seg.partial_rows(self, len(groups), allow, allowed, k))
        return [(m, sc, -neg) for m, sc, neg in heapq.nlargest(k, scored)], left_out


def _group_postings(found: dict[Term, Postings | None], group: Group, idfs: dict[Term, float]) -> Posts:
    """One query word in one segment: the postings of its stem (``found``: the segment's, by term),
    scored by its idf (no copy: the decoded postings are shared), or, for a word with several stems,
    the best of them per document (different stems of one word are never counted twice)."""
    posts = [(got, idfs[term]) for term in group if (got := found[term])]
    if len(posts) <= 1:
        return posts[0] if posts else (Postings(array("i"), array("d")), 0.0)
    out: dict[int, float] = {}
    for got, f in posts:
        for d, w in got.items():
            sc = w * f
            if sc > out.get(d, 0.0):
                out[d] = sc
    return Postings(array("i", out), array("d", out.values())), 1.0


def _vector(a: array[Any]) -> NDArray[Any]:
    """An array's numbers as a numpy view (no copy): docnums as int64, weights as doubles."""
    got = np.frombuffer(a, dtype=_DTYPES[a.typecode])
    return got.astype(np.float64) if a.typecode == "f" else got.astype(np.int64) if a.typecode == "i" else got


_DTYPES = {"i": np.intc, "f": np.float32, "d": np.float64}
_NONE = np.empty(0, dtype=np.int64)


def _mask(docs: Iterable[int] | None, n: int) -> NDArray[np.bool_] | None:
    """A set of docnums below ``n`` as a mask (``mask[docnums]``: one lookup each, in C), or None."""
    if docs is None:
        return None
    out = np.zeros(n, dtype=np.bool_)
    out[np.fromiter(docs, dtype=np.int64)] = True
    return out


def _best(scores: NDArray[np.float64], k: int) -> NDArray[np.intp]:
    """The positions of the ``k`` best scores and of every score equal to the k-th (so that ties are
    broken where all candidates meet: by docnum, in ``Scorer.top``), in no order."""
    if k <= 0:
        return np.arange(0)
    if len(scores) <= k:
        return np.arange(len(scores))
    least = np.partition(scores, len(scores) - k)[len(scores) - k]
    return np.flatnonzero(scores >= least)


class _Segment:
    """One segment's share of a query: each word's postings, and the documents matching all.

    The documents matching every word are found from the rarest word's postings (``posts`` come
    rarest first): each other word's sorted docnums are searched for them (``np.searchsorted``, in
    C), so a word in nearly every document costs a binary search per candidate, never a pass over
    its own postings in Python. Scores are summed word by word in that order, in doubles, so they
    are the same numbers a loop over dicts gives."""

    def __init__(
        self,
        leaf: Leaf,
        base: int,
        posts: list[Posts],
        sources: list[Group],
        dead: NDArray[np.bool_] | None = None,
    ) -> None:
        self.leaf, self.base, self.posts, self.sources, self.dead = leaf, base, posts, sources, dead
        self.full_ids: NDArray[np.int64] = _NONE  # docnums matching every word (2+ words), and their scores
        self.full_scores: NDArray[np.float64] = np.empty(0)
        self._full: set[int] | None = None
        if len(posts) == 1:
            return  # (one word: its rows are made straight from its postings)
        got, f = posts[0]
        ids, scores = _vector(got.ids), _vector(got.weights) * f
        if dead is not None:
            live = ~self._lookup(dead, ids)
            ids, scores = ids[live], scores[live]
        for more, g in posts[1:]:
            if not len(ids) or not len(more):
                ids, scores = _NONE, np.empty(0)
                break
            their, ws = _vector(more.ids), _vector(more.weights)
            if len(their) > 1 and not bool(np.all(their[1:] > their[:-1])):  # (a word of several stems)
                order = np.argsort(their, kind="stable")
                their, ws = their[order], ws[order]
            at = np.minimum(np.searchsorted(their, ids), len(their) - 1)
            hit = their[at] == ids
            ids, scores = ids[hit], scores[hit] + ws[at[hit]] * g
        self.full_ids, self.full_scores = ids, scores

    @staticmethod
    def _lookup(mask: NDArray[np.bool_], ids: NDArray[np.int64]) -> NDArray[np.bool_]:
        """``mask[ids]``, False past its end (a mask ends at the last document it holds)."""
        if len(ids) and int(ids.max()) >= len(mask):
            inside = ids < len(mask)
            out = np.zeros(len(ids), dtype=np.bool_)
            out[inside] = mask[ids[inside]]
            return out
        return mask[ids]

    @property
    def full(self) -> set[int]:
        """The docnums matching every word, as a set (made when partial matches are looked for)."""
        if self._full is None:
            self._full = set(self.full_ids.tolist())
        return self._full

    def full_rows(
        self, total: int, allow: set[int] | None, allowed: NDArray[np.bool_] | None, k: int
    ) -> list[Row]:
        """(words, score, -docnum) of the best ``k`` documents matching every word, and any tied with
        the k-th (ties go to the earlier document, as in Whoosh, where ``Scorer.top`` ranks them all)."""
        if len(self.posts) == 1:
            return self._one_word_rows(total, allowed, k)
        ids, scores = self.full_ids, self.full_scores
        if allowed is not None:
            keep = allowed[ids + self.base]
            ids, scores = ids[keep], scores[keep]
        best = _best(scores, k)
        docs = (-(ids[best] + self.base)).tolist()
        return list(zip([total] * len(docs), scores[best].tolist(), docs, strict=True))

    def _one_word_rows(self, total: int, allowed: NDArray[np.bool_] | None, k: int) -> list[Row]:
        """One word: its ``k`` heaviest postings are its ``k`` best rows, taken without making a row
        of every posting. Exact: the stored weights are float32 values, so a heavier one stays
        strictly higher once multiplied by the idf (relative gaps of 2^-24 against rounding of
        2^-53), and a word of several stems is already scored (factor 1.0); equal weights keep
        their postings' order (the earlier document first), as equal scores do."""
        got, f = self.posts[0]
        ids, ws = _vector(got.ids), _vector(got.weights)
        keep = None if self.dead is None else ~self._lookup(self.dead, ids)
        if allowed is not None:
            inside = allowed[ids + self.base]
            keep = inside if keep is None else keep & inside
        if keep is not None:
            ids, ws = ids[keep], ws[keep]
        top = _heaviest(ws, k) if k > 0 else np.arange(0)
        docs = (-(ids[top] + self.base)).tolist()
        return list(zip([total] * len(docs), (ws[top] * f).tolist(), docs, strict=True))

    def _keep(self, d: int, allow: set[int] | None) -> bool:
        return d not in self.full and d not in self.leaf.deleted and (allow is None or d + self.base in allow)

    def partial_rows(
        self, scorer: Scorer, total: int, allow: set[int] | None, allowed: NDArray[np.bool_] | None, k: int
    ) -> list[Row]:
        """Documents matching some but not all words, at most the best ``k``."""
        base = self.base
        if total == 2:  # the common case, without building the union: one word or the other
            out: list[Row] = []
            # (without filters, at most the documents matching both and the deleted ones are skipped)
            enough = k + len(self.full_ids) + len(self.leaf.deleted) if allow is None else None
            for (got, f), group in zip(self.posts, self.sources, strict=True):
                rows: list[Row] = []
                for d, w in scorer._ranked(self.leaf, group, got, enough):  # best first: stop at k
                    if self._keep(d, allow):
                        rows.append((1, w * f, -d - base))
                        if len(rows) >= k:
                            break
                out.extend(rows)
            return out
        return self._union_rows(total, allowed, k)

    def _union_rows(self, total: int, allowed: NDArray[np.bool_] | None, k: int) -> list[Row]:
        """Three words or more: the union of their postings, each document's words counted and its
        score summed word by word (in ``posts`` order, in doubles: the numbers a loop over dicts
        gives); the best ``k`` of those matching the most words, ties with the k-th included."""
        lists = [(_vector(got.ids), _vector(got.weights) * f) for got, f in self.posts]
        size = 1 + max((int(ids.max()) for ids, _ in lists if len(ids)), default=-1)
        words = np.zeros(size, dtype=np.int64)  # by docnum: a pass over each word's postings, in C
        scores = np.zeros(size)
        for ids, each in lists:  # (a document once per word: no docnum twice in one assignment)
            words[ids] += 1
            scores[ids] += each
        union = np.flatnonzero(words)
        words, scores = words[union], scores[union]
        keep = words < total
        if self.dead is not None:
            keep &= ~self._lookup(self.dead, union)
        if allowed is not None:
            keep &= allowed[union + self.base]
        union, words, scores = union[keep], words[keep], scores[keep]
        out: list[Row] = []
        for level in range(total - 1, 0, -1):  # most words first
            at = np.flatnonzero(words == level)
            if len(at) > k - len(out):
                at = at[_best(scores[at], k - len(out))]
            docs = (-(union[at] + self.base)).tolist()
            out.extend(zip([level] * len(docs), scores[at].tolist(), docs, strict=True))
            if len(out) >= k:
                break
        return out
