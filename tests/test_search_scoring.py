"""Block scoring (``scoring.Scorer.top``) against exhaustive scoring: every document's words counted
and its BM25 summed posting by posting, all of them ranked. The scorer finds the documents matching
every word from the rarest word's postings (binary searches in the others), keeps the best rows of
each segment only, and builds partial matches as arrays: the rows it returns must be exactly those,
scores to the last bit, ties to the earlier document, with deletions, filters, several segments, a
word in every document and words with several stems."""

from __future__ import annotations

import heapq
import random

import pytest
from conftest import Env

from nexus import search
from nexus.search import engine, reader, vectors
from nexus.search.engine import Group, Searcher, idf
from nexus.search.query import parse_query
from nexus.trust import NO_PINS

Row = tuple[int, float, int]


def _exhaustive(searcher: Searcher, groups: list[Group], allow: set[int] | None, k: int) -> list[Row]:
    """The best ``k`` rows (words matched, score, docnum) scoring every posting of every document:
    the documents matching every word, or, when fewer than ``k`` do, all those matching any."""
    n = searcher.doc_count_all()
    weights: dict[engine.Term, dict[int, float]] = {t: {} for g in groups for t in g}
    deleted: set[int] = set()
    for leaf, base in searcher.leaves():
        deleted |= {d + base for d in leaf.deleted}
        for term, into in weights.items():
            got = leaf.postings(*term)
            if got is not None:
                into.update((d + base, w) for d, w in zip(*got, strict=True))
    idfs = {t: idf(n, len(ws)) for t, ws in weights.items()}
    df = [sum(len(weights[t]) for t in g) for g in groups]
    order = [groups[i] for i in sorted(range(len(groups)), key=lambda i: df[i])]  # rarest first
    docs = {d for ws in weights.values() for d in ws} - deleted
    rows: list[tuple[int, float, int]] = []
    for d in docs:
        if allow is not None and d not in allow:
            continue
        matched, score = 0, 0.0
        for group in order:
            best = [weights[t][d] * idfs[t] for t in group if d in weights[t]]
            if best:
                score = max(best) if matched == 0 else score + max(best)
                matched += 1
        rows.append((matched, score, -d))
    full = [r for r in rows if r[0] == len(groups)]
    ranked = heapq.nlargest(k, full if len(full) >= k else rows)
    return [(m, sc, -neg) for m, sc, neg in ranked]


@pytest.mark.parametrize("languages", [("en",), ("en", "de")])
def test_block_scoring_ranks_exactly_as_exhaustive_scoring(env: Env, languages: tuple[str, ...]) -> None:
    rng = random.Random(23)
    words = [f"w{i}" for i in range(30)] + ["running", "runs", "häuser", "hauses"]
    cum = [1 / (r + 1) for r in range(len(words))]  # Zipf-like: a few words common, most rare
    for _ in range(3):  # three appends between searches: several segments
        for i in range(90):
            text = " ".join(rng.choices(words, weights=cum, k=rng.randint(2, 9)))
            env.append("ella" if i % 3 else "lyra", f"everyone {text}", body=text if i % 2 else None)
        search.search(env.vault, "w1", mode="text", languages=list(languages))
    note = env.vault.root / "notes-x.md"
    note.write_text("# everyone w1 w2\n\nw3 w4\n\n## everyone w5\n\nw1 w1\n", encoding="utf-8")
    search.search(env.vault, "w1", mode="text", languages=list(languages))
    note.write_text("# everyone w2\n\nw3\n", encoding="utf-8")  # a rewrite: deletions in a segment
    search.search(env.vault, "w1", mode="text", languages=list(languages))
    opened = reader.view(env.vault).current(NO_PINS)
    searcher = opened.searcher
    assert len(searcher.leaves()) > 1 and any(leaf.deleted for leaf, _ in searcher.leaves())
    queries = ["everyone", "w0", "w29", "everyone w0", "w0 w1", "w3 w17", "everyone w1 w2", "w0 w5 w9 w12"]
    queries += ["running w2", "hauses w1 everyone", "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10"]
    queries += [" ".join(rng.sample(words, rng.randint(1, 4))) for _ in range(40)]
    lyra = searcher.matching((("agent", "lyra"),))
    compared = 0
    for text in queries:
        q, _ = parse_query(text, opened.languages)
        groups = q.groups()
        assert groups is not None
        for allow in (None, lyra):
            for k in (1, 5, 30, 400):
                got, _ = opened.scorer.top(searcher, groups, allow, k, True, None)
                assert got == _exhaustive(searcher, groups, allow, k), (text, allow is None, k)
                compared += bool(got)
    assert compared > 300


def test_the_vector_store_finds_each_key_s_live_row_as_a_scan_of_every_row_does(env: Env) -> None:
    """``Store.find`` (a binary search through the rows' order by key hash) gives, for every key,
    the last live row a comparison with every row's hash gives: keys embedded again after an edit
    (their old row retired), keys removed, keys never stored."""
    note = env.vault.root / "plan.md"
    for i in range(30):
        env.append("ella" if i % 2 else "lyra", f"invoices page {i} with cursors and totals")
    note.write_text("# Plan\n\nThe endpoint paginates.\n\n## Later\n\nA dog.\n", encoding="utf-8")
    search.search(env.vault, "invoices", mode="hybrid")
    note.write_text("# Plan\n\nThe endpoint paginates with opaque cursors.\n", encoding="utf-8")
    search.search(env.vault, "invoices", mode="hybrid")  # the note's rows retired, one added again
    meta = vectors.load_meta(env.vault)
    assert meta is not None and meta.dead >= 1
    store = vectors.OPENED.open(env.vault, meta)
    every = [key for key, _ in _stored_keys(store)]
    asked = [*sorted(set(every)), "n:plan.md#9", "e:nothing-like-it"]
    hashes, alive = store.keys["key"], store.keys["alive"]
    expected = {}
    for key in asked:
        rows = [r for r in range(store.n) if int(hashes[r]) == vectors.key_hash(key) and alive[r] == 1]
        if rows:
            expected[key] = rows[-1]
    assert store.find(asked) == expected
    twice = {key for key in every if every.count(key) > 1}  # embedded again: the old row retired
    gone = {key for key in every if key not in expected}  # retired, never embedded again
    assert twice and gone and len(expected) > 30


def _stored_keys(store: vectors.Store) -> list[tuple[str, int]]:
    return [(s.key, r) for r, s in enumerate(store.stored(list(range(store.n))))]
