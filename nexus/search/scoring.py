"""BM25 over whole posting blocks: the top documents for a query of plain words.

Each posting stores its BM25 term weight (saturated and length-normalised at index time, see
``engine``), so a document's score is the sum over the query's words of weight × idf, the same as
Whoosh's matcher with the ``engine`` weighting, several times faster than its per-posting collector.
Documents matching every word come first; for a query of plain words, the best of those matching
fewer follow (most words, then best score).

A ``Scorer`` keeps decoded posting lists by (segment id, field, term): a Whoosh segment never
changes (deletions are applied per query), so they stay valid while the index folder does; up to
``POSTINGS_BUDGET`` postings, the least recently used dropped.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from operator import itemgetter
from typing import Generic, TypeVar

from .engine import Group, Leaf, Searcher, Term, idf

POSTINGS_BUDGET = 400_000  # postings kept decoded per scorer (~30 MB): the most recently used terms
SHARE = 8  # a word's postings are ranked whole unless fewer than 1/SHARE of them are needed

Row = tuple[int, float, int]  # (words matched, score, docnum)
Posts = tuple[dict[int, float], float]  # docnum -> stored weight, and the factor (idf) scoring them
Ranked = list[tuple[int, float]]  # (docnum, weight), heaviest first


V = TypeVar("V", dict[int, float], Ranked)
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
        self.decoded: _Budgeted[dict[int, float]] = _Budgeted(budget)
        self.by_weight: _Budgeted[Ranked] = _Budgeted(budget)

    def postings(self, leaf: Leaf, term: Term) -> dict[int, float] | None:
        """docnum -> stored weight for one term in one segment (deleted documents included)."""
        key = (leaf.segment_id, *term) if leaf.segment_id is not None else None
        if key is not None and (cached := self.decoded.get(key)) is not None:
            return cached
        out = leaf.postings(*term)
        if key is not None and out is not None:
            self.decoded.put(key, out)
        return out

    def _ranked(self, leaf: Leaf, group: Group, got: dict[int, float], enough: int | None = None) -> Ranked:
        """A word's postings in one segment, heaviest first (kept like the decoded postings); only the
        heaviest ``enough`` when the caller needs no more and they are a small share (not kept:
        ``heapq.nlargest`` gives exactly the first ``enough`` of the whole ranking, ties in order)."""
        key = (leaf.segment_id, *group[0]) if leaf.segment_id is not None and len(group) == 1 else None
        if key is not None and (cached := self.by_weight.get(key)) is not None:
            return cached
        if enough is not None and enough * SHARE < len(got):
            return heapq.nlargest(enough, got.items(), key=itemgetter(1))
        ranked = sorted(got.items(), key=itemgetter(1), reverse=True)
        if key is not None:
            self.by_weight.put(key, ranked)
        return ranked

    def _group_postings(self, leaf: Leaf, group: Group, idfs: dict[Term, float]) -> Posts:
        """One query word in one segment: the postings of its stem, scored by its idf (no copy: the
        decoded postings are shared), or, for a word with several stems, the best of them per
        document (different stems of one word are never counted twice)."""
        found = [(got, idfs[term]) for term in group if (got := self.postings(leaf, term))]
        if len(found) <= 1:
            return found[0] if found else ({}, 0.0)
        out: dict[int, float] = {}
        for got, f in found:
            for d, w in got.items():
                sc = w * f
                if sc > out.get(d, 0.0):
                    out[d] = sc
        return out, 1.0

    def top(
        self, searcher: Searcher, groups: list[Group], allow: set[int] | None, k: int, partial: bool
    ) -> list[Row]:
        """The best ``k`` documents for words ``groups`` (see the module); with ``partial``, those
        matching fewer words follow (computed only when fewer than ``k`` match them all)."""
        n = searcher.doc_count_all()
        idfs: dict[Term, float] = {}
        df_of: list[int] = []
        for group in groups:
            total_df = 0
            for term in group:
                df = searcher.doc_frequency(*term)
                total_df += df
                idfs[term] = idf(n, df)
            df_of.append(total_df)
        if not partial and not all(df_of):
            return []
        order = sorted(range(len(groups)), key=lambda gi: df_of[gi])
        sources = [groups[gi] for gi in order]
        scored: list[Row] = []  # (words matched, score, -docnum)
        segments: list[_Segment] = []
        for leaf, base in searcher.leaves():
            seg = _Segment(leaf, base, [self._group_postings(leaf, g, idfs) for g in sources], sources)
            segments.append(seg)
            scored.extend(seg.full_rows(len(groups), allow, k))
        if partial and len(groups) > 1 and len(scored) < k:
            for seg in segments:
                scored.extend(seg.partial_rows(self, len(groups), allow, k))
        return [(m, sc, -neg) for m, sc, neg in heapq.nlargest(k, scored)]


class _Segment:
    """One segment's share of a query: each word's postings, and the documents matching all."""

    def __init__(self, leaf: Leaf, base: int, posts: list[Posts], sources: list[Group]) -> None:
        self.leaf, self.base, self.posts, self.sources = leaf, base, posts, sources
        self.full: dict[int, float] = {}  # docnum -> score of those matching every word (2+ words)
        if len(posts) == 1:
            return  # (one word: its rows are made straight from its postings)
        deleted = leaf.deleted
        (got, f), (other, g) = posts[0], posts[1]  # (the rarest word first: the fewest lookups)
        if deleted:
            acc = {d: w * f + other[d] * g for d, w in got.items() if d in other and d not in deleted}
        else:
            acc = {d: w * f + other[d] * g for d, w in got.items() if d in other}
        for got, f in posts[2:]:
            if not acc:
                break
            acc = {d: s + got[d] * f for d, s in acc.items() if d in got}
        self.full = acc

    def full_rows(self, total: int, allow: set[int] | None, k: int) -> list[Row]:
        """(words, score, -docnum) of the documents matching every word (ties go to the earlier
        document, as in Whoosh)."""
        base, acc = self.base, self.full
        if len(self.posts) == 1:
            return self._one_word_rows(total, allow, k)
        if allow is not None:
            return [(total, sc, -d - base) for d, sc in acc.items() if d + base in allow]
        return list(zip([total] * len(acc), acc.values(), [-d - base for d in acc], strict=True))

    def _one_word_rows(self, total: int, allow: set[int] | None, k: int) -> list[Row]:
        """One word: its ``k`` heaviest postings are its ``k`` best rows, taken without making a row
        of every posting. Exact: the stored weights are float32 values, so a heavier one stays
        strictly higher once multiplied by the idf (relative gaps of 2^-24 against rounding of
        2^-53), and a word of several stems is already scored (factor 1.0); equal weights keep
        their postings' order (the earlier document first), as equal scores do."""
        got, f = self.posts[0]
        base, deleted = self.base, self.leaf.deleted
        items: Iterable[tuple[int, float]] = got.items()
        if deleted or allow is not None:
            items = (x for x in items if x[0] not in deleted and (allow is None or x[0] + base in allow))
        return [(total, w * f, -d - base) for d, w in heapq.nlargest(k, items, key=itemgetter(1))]

    def _keep(self, d: int, allow: set[int] | None) -> bool:
        return d not in self.full and d not in self.leaf.deleted and (allow is None or d + self.base in allow)

    def partial_rows(self, scorer: Scorer, total: int, allow: set[int] | None, k: int) -> list[Row]:
        """Documents matching some but not all words, at most the best ``k``."""
        base = self.base
        if total == 2:  # the common case, without building the union: one word or the other
            out: list[Row] = []
            # (without filters, at most the documents matching both and the deleted ones are skipped)
            enough = k + len(self.full) + len(self.leaf.deleted) if allow is None else None
            for (got, f), group in zip(self.posts, self.sources, strict=True):
                rows: list[Row] = []
                for d, w in scorer._ranked(self.leaf, group, got, enough):  # best first: stop at k
                    if self._keep(d, allow):
                        rows.append((1, w * f, -d - base))
                        if len(rows) >= k:
                            break
                out.extend(rows)
            return out
        acc: dict[int, list[float]] = {}
        for got, f in self.posts:  # three words or more: the union, counted
            for d, w in got.items():
                slot = acc.get(d)
                if slot is None:
                    acc[d] = [1, w * f]
                else:
                    slot[0] += 1
                    slot[1] += w * f
        rows_ = ((int(m), sc, -d - base) for d, (m, sc) in acc.items() if self._keep(d, allow))
        return heapq.nlargest(k, rows_)
