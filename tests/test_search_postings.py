"""Posting blocks as flat arrays (``engine.FlatCodec``): what the scorer decodes (``Leaf.postings``)
and what Whoosh's own matcher reads (phrases, prefixes and filters use it) are exactly the postings
written, across several blocks, after deletions and after segments are merged; their lengths add up
to Whoosh's document frequency (``scoring`` takes a word's idf from them)."""

from __future__ import annotations

import random
from array import array
from pathlib import Path
from typing import Any

from nexus.search import engine

N = 2 * engine.BLOCK + 300  # three blocks of the word every document has


def _doc(i: int, freq: int, rare: bool) -> engine.Doc:
    counts = {"common": freq, f"only{i}": 1}
    if rare:
        counts["rare"] = 1 + i % 3
    return engine.Doc(
        key=f"e:{i:05d}",
        kind="entry",
        path=f"log/{i // 1500}.md",  # (deleting log/0.md deletes the first block whole)
        agent=("ella", "lyra")[i % 2],
        channel="build",
        type="note",
        status="",
        ts="2026-12-01T00:00:00Z",
        heading="",
        text=engine.Terms(counts, 10 + i % 50),
        loc=(0, 1, 1, 1),
    )


def _weight(freq: int, words: int) -> float:
    norm = engine.K1 * (1 - engine.B + engine.B * words / engine.AVGDL)
    return array("f", [freq * (engine.K1 + 1) / (freq + norm)])[0]  # (stored as float32)


def _postings(index: engine.Index) -> dict[tuple[str, str], dict[str, float]]:
    """(field, term) -> {key: weight} of the documents not deleted, read both ways (asserted equal)."""
    searcher = index.searcher()
    out: dict[tuple[str, str], dict[str, float]] = {}
    try:
        for field, term in (("text", "common"), ("text", "rare"), ("kind", "entry"), ("agent", "lyra")):
            lengths = [len(got[0]) for leaf, _ in searcher.leaves() if (got := leaf.postings(field, term))]
            assert sum(lengths) == searcher.doc_frequency(field, term)  # (scoring's df: deleted included)
        for leaf, base in searcher.leaves():
            for field, term in (("text", "common"), ("text", "rare"), ("kind", "entry"), ("agent", "lyra")):
                got = leaf.postings(field, term)
                assert got is not None
                ids, weights = got
                ours = [(d, w) for d, w in zip(ids, weights, strict=True) if d not in leaf.deleted]
                matcher: Any = leaf.raw.postings(field, term)
                theirs = []  # (Whoosh's matcher, as its scorer reads it: deletions skipped)
                while matcher.is_active():
                    theirs.append((matcher.id(), matcher.weight()))
                    matcher.next()
                assert ours == theirs
                assert list(ids) == sorted(ids)
                keys = out.setdefault((field, term), {})
                for d, w in ours:
                    keys[searcher.stored(base + d).key] = w
    finally:
        searcher.close()
    return out


def test_flat_blocks_read_back_as_written(tmp_path: Path) -> None:
    rng = random.Random(3)
    freqs = {i: rng.randint(1, 9) for i in range(N + 400)}
    rare = {i for i in freqs if rng.random() < 0.2}
    folder = tmp_path / "ix"
    folder.mkdir()
    index = engine.Index.create(folder)
    writer = index.writer()
    for i in range(N):
        writer.add(_doc(i, freqs[i], i in rare))
    writer.commit()
    leaf_matcher: Any = engine.Index.open(folder).raw.reader().postings("text", "common")
    assert isinstance(leaf_matcher, engine.FlatMatcher) and isinstance(leaf_matcher._data or b"", bytes)

    def expected(alive: set[int]) -> dict[tuple[str, str], dict[str, float]]:
        return {
            ("text", "common"): {f"e:{i:05d}": _weight(freqs[i], 10 + i % 50) for i in alive},
            ("text", "rare"): {f"e:{i:05d}": _weight(1 + i % 3, 10 + i % 50) for i in alive & rare},
            ("kind", "entry"): {f"e:{i:05d}": 1.0 for i in alive},
            ("agent", "lyra"): {f"e:{i:05d}": 1.0 for i in alive if i % 2},
        }

    alive = set(range(N))
    assert _postings(engine.Index.open(folder)) == expected(alive)
    writer = engine.Index.open(folder).writer()  # a second segment, and deletions in the first
    writer.delete_path("log/0.md")
    for i in range(N, N + 400):
        writer.add(_doc(i, freqs[i], i in rare))
    writer.commit()
    alive = set(range(1500, N + 400))
    assert len(engine.Index.open(folder).searcher().leaves()) == 2
    assert _postings(engine.Index.open(folder)) == expected(alive)
    raw: Any = engine.Index.open(folder).raw.writer(codec=engine.FlatCodec())
    raw.commit(optimize=True)  # merged: read through FlatMatcher, written by FlatPostingsWriter
    merged = engine.Index.open(folder)
    assert len(merged.searcher().leaves()) == 1
    assert _postings(merged) == expected(alive)
