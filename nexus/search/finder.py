"""Searching: a query's best hits over the vault as it is now, and what the index holds.

``search`` refreshes the index (``indexer``), parses the query (``query``), ranks candidates — plain
ANDs of words by ``scoring``'s block scoring, anything else by Whoosh's own matcher — and turns them
into hits (``hits``) in final order: the first document of each key, within the path and time
filters, a hit about a superseded decision scaled down (``supersession``). Candidates are fetched
``limit + 20`` at a time, four times more while filters or phrases reject too many.
"""

from __future__ import annotations

import fnmatch
import heapq
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..errors import QueryError
from ..records import Hit, IndexStatus
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust
from . import documents, fusion, vector_writer, vectors
from .builder import Progress
from .engine import Query, Stored
from .hits import HitReader
from .indexer import changes, refresh, serialised, usable
from .language import MatchedTerms, analysis, check_languages
from .manifest import INDEX_DIR, index_dir
from .manifest import load as load_manifest
from .query import Filters, check_syntax, check_text, is_plain, parse_query, plain_words, words_of
from .reader import OpenIndex, view
from .scoring import Row
from .supersession import SUPERSEDED_FACTOR, Superseded

FAST = True  # score plain AND-of-words queries block by block (scoring); False: Whoosh's matcher


@serialised
def search(
    vault: Vault,
    text: str,
    *,
    agent: str | None = None,
    type: str | None = None,
    channel: str | None = None,
    since: str | None = None,
    until: str | None = None,
    path: str | None = None,
    limit: int = 10,
    progress: Progress | None = None,
    fresh: bool = True,
    languages: Sequence[str] | None = None,
    mode: str = "hybrid",
    trust: Trust = NO_PINS,
) -> list[Hit]:
    """The best ``limit`` hits for ``text`` (Whoosh query syntax: fields, "phrases", prefix*, AND OR
    NOT, parentheses) over the vault as it is now, with provenance. Plain words rank the hits that
    match all of them first, then partial matches. ``languages``: the stemming languages the index
    must have (None: whatever it has). ``fresh=False`` skips the freshness check (only for measuring
    what a watcher already indexed). ``trust``: the keys this machine pinned, which decide whether a
    hit is marked verified, and its seal secret (``NO_PINS``: the identity notes' keys, no seals)."""
    check_text(text, mode)
    langs = check_languages(languages) if languages else None
    if not is_plain(text):
        check_syntax(text)  # before any indexing: a typo costs nothing
    filters = Filters.of(agent=agent, type=type, channel=channel, since=since, until=until, path=path)
    if limit <= 0:
        return []
    meant = _meant(vault, text, mode)
    if meant is not None:
        return _by_meaning(vault, text, meant, mode, filters, limit, progress, fresh, langs, trust)
    here = view(vault)
    if fresh:
        refresh(vault, progress=progress, languages=langs, open_dir=here.folder, trust=trust)
    opened = here.current(trust)
    q, phrases = parse_query(text, opened.languages)
    terms = MatchedTerms(analysis(opened.languages), q.text_terms(opened.searcher))
    groups = q.groups() if FAST else None
    partial = is_plain(text)
    dead = here.register.load(vault)
    reader = HitReader(vault, here.signatures, terms, phrases, trust)
    k = limit + 20
    need: int | None = limit  # (partial matches only when fewer than ``limit`` match every word)
    try:
        while True:
            try:
                allow = opened.searcher.matching(filters.terms) if filters.terms else None
                left_out = False
                if groups is not None:
                    rows, left_out = opened.scorer.top(opened.searcher, groups, allow, k, partial, need)
                else:
                    rows = [(1, score, doc) for score, doc in opened.searcher.run(q, k, allow)]
                hits = _hits(opened, reader, rows, filters, dead, limit)
            except FileNotFoundError:  # a writer in another process committed under us
                here.forget()
                opened = here.current(trust)
                continue
            if len(hits) >= limit:
                return dead.replacements_first(hits)
            if left_out:  # every-word matches were turned away: the partial ones after all
                need = None
                continue
            if len(rows) < k:
                return dead.replacements_first(hits)
            k *= 4
    finally:
        reader.close()


def _meant(vault: Vault, text: str, mode: str) -> NDArray[np.float32] | None:
    """The query's vector (None: search by words alone, in text mode or when hybrid search's model
    knows none of its words)."""
    if mode == "text":
        return None
    meant = vectors.embed_query(vault, words_of(text))
    if meant is None and mode == "meaning":
        raise QueryError("the model knows no word of this query; try other words or --mode text")
    return meant


def _by_meaning(
    vault: Vault,
    text: str,
    meant: NDArray[np.float32],
    mode: str,
    filters: Filters,
    limit: int,
    progress: Progress | None,
    fresh: bool,
    langs: tuple[str, ...] | None,
    trust: Trust,
) -> list[Hit]:
    """``search`` by meaning, or by meaning and words (``fusion``); a vector store found damaged
    while reading it is built again and the search run once more."""
    try:
        return _by_meaning_once(vault, text, meant, mode, filters, limit, progress, fresh, langs, trust)
    except vectors.Damaged:
        vectors.OPENED.forget(vault)
        vector_writer.refresh(vault, progress=progress, force=True, trust=trust)
        return _by_meaning_once(vault, text, meant, mode, filters, limit, progress, fresh, langs, trust)


def _by_meaning_once(
    vault: Vault,
    text: str,
    meant: NDArray[np.float32],
    mode: str,
    filters: Filters,
    limit: int,
    progress: Progress | None,
    fresh: bool,
    langs: tuple[str, ...] | None,
    trust: Trust,
) -> list[Hit]:
    here = view(vault)
    if fresh:
        refresh(vault, progress=progress, languages=langs, open_dir=here.folder, trust=trust)
    opened = here.current(trust)
    store = _store(vault, progress, fresh, trust)
    words_only = plain_words(text)
    plain = words_only is not None
    if words_only is not None:
        text = words_only or text
    q, phrases = parse_query(text, opened.languages)
    terms = MatchedTerms(analysis(opened.languages), q.text_terms(opened.searcher))
    dead = here.register.load(vault)
    reader = HitReader(vault, here.signatures, terms, phrases, trust)
    files = _files(store, filters)
    k = max(limit + 20, 50)
    partial = fusion.WEIGHT == 0 and fusion.FUSION == "weighted"  # see _by_words: first without them
    try:
        while True:
            meaning: list[tuple[float, Stored]] = []
            more = left_out = False
            if plain or mode == "meaning":
                meaning, more = fusion.by_meaning(store, meant, k, files, lambda s: _accepts(s, filters))
            ranked: Iterator[tuple[float, Stored]] = iter(meaning)
            if mode == "hybrid":
                kw = k if plain else k * 4
                words, more_words, left_out = _by_words(opened, q, text, filters, kw, skip_partial=partial)
                more = more or more_words
                ranked = fusion.fused(store, meant, words, meaning if plain else [])
            hits = _finish(reader, ranked, dead, limit)
            if left_out and len(hits) < limit:
                partial = False  # the partial matches left out might fill the rest: asked for
                continue
            if len(hits) >= limit or not more:
                return dead.replacements_first(hits)
            k *= 4
    finally:
        reader.close()


def _store(vault: Vault, progress: Progress | None, fresh: bool, trust: Trust) -> vectors.Store:
    """The vector store, current (``fresh``) and open; one damaged under us is rebuilt once."""
    meta = vector_writer.refresh(vault, progress=progress, trust=trust) if fresh else vectors.load_meta(vault)
    if meta is None:
        meta = vector_writer.refresh(vault, progress=progress, trust=trust)
    try:
        return vectors.OPENED.open(vault, meta)
    except vectors.Damaged:
        vectors.OPENED.forget(vault)
        return vectors.OPENED.open(
            vault, vector_writer.refresh(vault, progress=progress, force=True, trust=trust)
        )


def _files(store: vectors.Store, filters: Filters) -> set[int] | None:
    exact = next((v for f, v in filters.terms if f == "path"), None)
    if exact is None and filters.path is None:
        return None
    glob = filters.path
    return vectors.files_matching(
        store.meta,
        lambda rel: (exact is None or rel == exact) and (glob is None or fnmatch.fnmatchcase(rel, glob)),
    )


def _accepts(stored: Stored, filters: Filters) -> bool:
    for name, value in filters.terms:
        if name != "path" and str(getattr(stored, name, "")).lower() != value:
            return False
    return _within(stored, filters)


def _by_words(
    opened: OpenIndex, q: Query, text: str, filters: Filters, k: int, *, skip_partial: bool = False
) -> tuple[list[tuple[float, Stored, bool]], bool, bool]:
    """(BM25, document, whether it holds every word) of the best ``k`` word matches within the
    filters; whether more may follow; whether partial matches (some words, not all) were left out.

    ``skip_partial``: only the documents holding every word (partial matches cost a pass over the
    union of the words' postings). Hybrid ranking scores a partial match by its cosine alone, and
    meaning's candidates are the best by cosine of all documents; a partial match below them, or
    below ``fusion.STRONG`` when some document holds every word, only fills a list that falls short
    of the limit: the caller then asks again with them."""
    allow = opened.searcher.matching(filters.terms) if filters.terms else None
    groups = q.groups() if FAST else None
    left_out = False
    if groups is not None:
        partial = is_plain(text)
        left_out = partial and skip_partial and len(groups) > 1
        rows, _ = opened.scorer.top(opened.searcher, groups, allow, k, partial and not left_out, None)
    else:
        rows = [(1, score, doc) for score, doc in opened.searcher.run(q, k, allow)]
    every = len(groups) if groups is not None else 1
    out = []
    for matched, score, doc in rows:
        stored = opened.searcher.stored(doc)
        if _within(stored, filters):
            out.append((score, stored, matched >= every))
    return out, len(rows) >= k, left_out


def _finish(
    reader: HitReader, ranked: Iterator[tuple[float, Stored]], dead: Superseded, limit: int
) -> list[Hit]:
    """The first ``limit`` hits of ``ranked`` (one a key), a superseded decision's score scaled down."""
    scored: list[tuple[float, int, Stored]] = []
    seen: set[str] = set()
    for i, (score, stored) in enumerate(ranked):
        if stored.key in seen:
            continue
        seen.add(stored.key)
        old = stored.status == "superseded" or dead.superseded_by(stored.key, stored.path) is not None
        scored.append((score * SUPERSEDED_FACTOR if old and score > 0 else score, i, stored))
    scored.sort(key=lambda x: (-x[0], x[1]))
    hits: list[Hit] = []
    for score, _, stored in scored:
        hit = reader.hit(stored, score, dead.superseded_by(stored.key, stored.path))
        if hit is not None:
            hits.append(hit)
            if len(hits) >= limit:
                break
    return hits


def _hits(
    opened: OpenIndex, reader: HitReader, rows: list[Row], filters: Filters, dead: Superseded, limit: int
) -> list[Hit]:
    hits: list[Hit] = []
    for score, stored in _ranked(opened, rows, filters, dead):
        hit = reader.hit(stored, score, dead.superseded_by(stored.key, stored.path))
        if hit is not None:
            hits.append(hit)
            if len(hits) >= limit:
                break
    return hits


def _ranked(
    opened: OpenIndex, rows: list[Row], filters: Filters, dead: Superseded
) -> Iterator[tuple[float, Stored]]:
    """(score, stored fields) of ``rows`` (words matched, score, docnum; best first) in final order:
    the first document of each key, within the path and time filters, a hit about a superseded
    decision with its score scaled down (among hits matching as many words). Stored fields are read
    lazily: a document is yielded once no later row can outrank it (scaling only lowers a score), so
    the caller reads as many as it uses."""
    pending: list[tuple[int, float, int, Stored]] = []  # (-matched, -score, row, stored)
    seen: set[str] = set()
    for i, (matched, raw, doc) in enumerate(rows):
        while pending and (-pending[0][0], -pending[0][1]) >= (matched, raw):
            _, neg, _, stored = heapq.heappop(pending)
            yield -neg, stored
        stored = opened.searcher.stored(doc)
        if stored.key in seen:
            continue
        seen.add(stored.key)
        if not _within(stored, filters):
            continue
        old = stored.status == "superseded" or dead.superseded_by(stored.key, stored.path) is not None
        heapq.heappush(pending, (-matched, -(raw * SUPERSEDED_FACTOR if old else raw), i, stored))
    while pending:
        _, neg, _, stored = heapq.heappop(pending)
        yield -neg, stored


def _within(stored: Stored, filters: Filters) -> bool:
    if filters.path and not fnmatch.fnmatchcase(stored.path, filters.path):
        return False
    return not (
        (filters.since and stored.ts < filters.since) or (filters.until and stored.ts > filters.until)
    )


@serialised
def status(vault: Vault) -> IndexStatus:
    """What the index holds and which files changed since they were indexed (no writing)."""
    from . import engine

    manifest = load_manifest(vault)
    rel_folder = f"{vault.rel(vault.state)}/{INDEX_DIR}"
    if manifest is None or not usable(vault, manifest):
        return IndexStatus(rel_folder, False, 0, 0, 0, 0, (), 0, None, None)
    changed, removed = changes(manifest, documents.vault_files(vault))
    folder = index_dir(vault) / manifest.dir
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    stale = tuple(changed + removed)
    built, updated = manifest.built or None, manifest.updated or None
    try:
        searcher = engine.Index.open(folder).searcher()
        try:
            docs, n_entries = searcher.doc_count(), searcher.doc_frequency("kind", "entry")
        finally:
            searcher.close()
    except FileNotFoundError as err:  # (a file of the index deleted: the next search rebuilds it)
        missing = Path(err.filename).name if err.filename else "a file"
        n = len(manifest.files)
        return IndexStatus(
            rel_folder, True, 0, 0, 0, n, stale, size, built, updated, damaged=f"{missing} is missing"
        )
    return IndexStatus(
        rel_folder, True, docs, n_entries, docs - n_entries, len(manifest.files), stale, size, built, updated
    )
