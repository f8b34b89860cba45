"""What search remembers within a process, and what makes it cheaper, never changes an answer:
an entry edited in place after it was remembered is read, parsed and checked again (never served
from memory); a hit whose byte range moved is found by scanning its segment; a build that spills
sorted runs to disk gives the same index as one that keeps them in memory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import Env, edit_entry_in_place

from nexus import search
from nexus.search import builder, engine
from nexus.search.reader import view


def _search(vault: Any, text: str, **kw: Any) -> list[Any]:
    """A search by words (these tests look at the text index's scoring)."""
    return search.search(vault, text, mode="text", **kw)


@pytest.mark.parametrize("what", ["text", "signature"])
def test_an_entry_edited_in_place_after_it_was_remembered_is_checked_again(
    env: Env, what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # in this process as a library caller (no pins, no seals), so the verdict is remembered here; the
    # CLI runs below use both
    located = env.append("ella", "the falcon budget is 100", body="Approved by the falcon board.").located
    first = _search(env.vault, "falcon")
    assert [h.verified for h in first] == [True]
    memory = view(env.vault).signatures
    assert memory.checked and memory.entries.known  # remembered for this process
    # and, by the CLI in a process of its own, in the machine's memo
    assert "✓ signed" in env.run("search", "falcon", process=True).stdout
    assert (Path(os.environ["NEXUS_HOME"]) / "checked-signatures").stat().st_size > 0
    seg = env.vault.root / located.file
    original, _ = edit_entry_in_place(env.vault, located, what, (b"budget is 100", b"budget is 900"))
    hits = _search(env.vault, "falcon")
    assert len(hits) == 1 and hits[0].verified is False  # the edited bytes are checked, not recalled
    if what == "text":
        assert hits[0].title == "the falcon budget is 900"
    # nor from the machine's memo
    assert "✗ SIGNATURE DOES NOT VERIFY" in env.run("search", "falcon", process=True).stdout
    seg.write_bytes(original)  # the bytes as signed again: verified again
    assert [h.verified for h in _search(env.vault, "falcon", fresh=False)] == [True]


def test_a_hit_whose_byte_range_moved_is_found_in_its_segment(env: Env) -> None:
    earlier = env.append("ella", "osprey count started").located
    later = env.append("lyra", "pelican count finished", body="Forty pelicans.").located
    assert _search(env.vault, "pelican")[0].line_start == later.line_start
    seg = env.vault.root / earlier.file
    data = seg.read_bytes()
    seg.write_bytes(data.replace(b"osprey count started", b"osprey count started, with a longer summary"))
    # the index has not looked yet (what a watcher-fed search sees between a write and its refresh)
    moved = _search(env.vault, "pelican", fresh=False)
    lines = seg.read_text(encoding="utf-8").split("\n")
    assert len(moved) == 1 and moved[0].entry_id == later.entry.id and moved[0].verified is True
    assert moved[0].line_start == later.line_start
    assert lines[moved[0].line_start - 1].endswith(f" ^{later.entry.id}")  # (its header opens it)
    stale = _search(env.vault, "osprey", fresh=False)  # its range now cuts the longer entry
    assert len(stale) == 1 and stale[0].verified is False and "longer summary" in stale[0].title
    fresh = _search(env.vault, "pelican")  # and after the refresh, from the index again
    assert fresh[0].line_start == later.line_start and fresh[0].verified is True


def test_a_build_that_spills_sorted_runs_gives_the_same_index(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(40):
        body = f"gannet colony {i} " * (i % 7)
        env.append("ella" if i % 3 else "lyra", f"gannet survey {i} cliff", body=body)
    queries = ["gannet", "survey cliff", "colony", "gannet 17"]

    def answers() -> list[list[tuple[Any, ...]]]:
        hits = [_search(env.vault, q, limit=50) for q in queries]
        return [[(h.path, h.line_start, h.entry_id, h.score, h.snippet) for h in found] for found in hits]

    search.rebuild(env.vault)
    in_memory = answers()
    pool = engine._batched_pool()
    runs: list[int] = []
    write_run = pool._write_run

    def counted(self: Any, f: Any, items: Any) -> None:
        runs.append(1)
        write_run(self, f, items)

    monkeypatch.setattr(pool, "_write_run", counted)
    monkeypatch.setattr(engine, "RUN_BATCH", 5)  # several records a run
    monkeypatch.setattr(builder, "LIMIT_MB", 0.002)  # ~2 KB of postings: a run every few entries
    search.rebuild(env.vault)
    assert len(runs) > 5
    assert answers() == in_memory and len(in_memory[0]) == 40


def test_one_entry_is_read_as_a_segment_scan_reads_it(env: Env) -> None:
    from nexus.search.verdicts import _one_entry
    from nexus.storage import segments

    env.append("ella", "no body")
    env.append("lyra", "with a body", body="line one\n%% nexus:end not really\n\nlast line")
    located = env.append("ella", "third").located
    seg = env.vault.root / located.file
    for data in (seg.read_bytes(), seg.read_bytes().replace(b"\n", b"\r\n")):  # (an editor's CRLF save)
        scan = segments.scan(data, located.file)
        assert len(scan.entries) == 3
        for loc in scan.entries:
            got = _one_entry(data[loc.offset : loc.end_offset], located.file, loc.offset, loc.line_start)
            assert got == loc
        first, second = scan.entries[0], scan.entries[1]
        two = data[first.offset : second.end_offset]
        assert _one_entry(two, located.file, first.offset, first.line_start) is None
        assert _one_entry(data[first.offset : first.end_offset - 1], located.file, first.offset, 1) is None


def _cut_as_before(flat: Any, terms: Any, width: int = 200) -> str:
    """The snippet cutter before it stopped looking past the window (the reference)."""
    import re

    from nexus.search.language import WORD_RE

    text = flat.text
    fenced = [(m.start(), m.end()) for m in re.finditer(r"\[\[[^\]]*\]\]|\*\*[^*]+\*\*", text)]
    words = [
        (m.start(), m.end(), m.group(0).lower())
        for m in WORD_RE.finditer(text)
        if not any(a <= m.start() < b for a, b in fenced)
    ]
    stems = terms.analysis.stems  # (worked out here, not by MatchedTerms.matched, which is under test)
    chosen = terms.terms
    matches = [(s, e) for s, e, word in words if word in chosen or not chosen.isdisjoint(stems(word))]
    if not matches:
        return str(text[:width] + ("…" if len(text) > width else ""))
    first = matches[0][0]
    begin = max(0, first - width // 3)
    if begin:
        space = text.find(" ", begin)
        begin = space + 1 if 0 <= space < first else begin
    stop = min(len(text), begin + width)
    out, pos = [], begin
    for s, e in matches:
        if s < begin or e > stop:
            continue
        out.append(text[pos:s])
        out.append(f"**{text[s:e]}**")
        pos = e
    out.append(text[pos:stop])
    return ("…" if begin else "") + "".join(out) + ("…" if stop < len(text) else "")


@pytest.mark.parametrize("memo_words", [50_000, 5])
def test_snippets_cut_as_before(memo_words: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Snippets against a plain reference, on ASCII and other text, links and bold, words the memo
    has and words it lacks (5: the memo full almost at once)."""
    import random

    from nexus.search import language
    from nexus.search.language import MatchedTerms
    from nexus.search.snippets import cut, flatten

    monkeypatch.setattr(language, "MEMO_WORDS", memo_words)

    rng = random.Random(13)
    words = [
        "falcon",
        "Falcons",
        "nest",
        "roof",
        "**bold falcon**",
        "[[falcon note]]",
        "budget",
        "x" * 90,
        "\n",
        "FALCON!",
        "(nest)",
        "roof's",
        "re-roof",
        "under_score",
        "42",
        "naïve",
        "paginación",
        "İstanbul",
        "\u00a0",
        "Nest,falcon",
        "honest",
        "falconry",
        "xx",
    ]
    lang = language.Analysis(("en",))
    for word in ("falcons", "falcon", "nest", "roofs", "budget"):  # (in the memo before any query)
        lang.stems(word)
    pool = ["falcon", "nest", "budget", "roof", "xx", "paginacion", "naiv", "istanbul", "42", "under_scor"]
    for i in range(3000):
        if i % 3 == 0:  # (one query's terms asked about several texts, as a search's hits are)
            terms = MatchedTerms(lang, rng.sample(pool, rng.randint(0, 3)))
        if i % 100 == 0:  # words the memo has never seen (it grows meanwhile)
            words.append(f"fresh{i}word")
            pool.append(lang.stems(f"fresh{i}word")[0] if i % 200 == 0 else f"fresh{i}word")
        choices = words if i % 2 else [w for w in words if "[[" not in w and "**" not in w]
        choices = choices if i % 4 > 1 else [w for w in choices if w.isascii()]
        text = " ".join(rng.choice(choices) for _ in range(rng.randint(0, 120)))
        flat = flatten(text)
        for width in (200, 40):
            assert cut(flat, terms, width) == _cut_as_before(flat, terms, width), text


def test_partial_matches_ranked_from_the_heaviest_postings_only_rank_as_a_whole_ranking_does(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two-word queries whose words rarely meet: the partial matches taken from each word's heaviest
    postings (heapq.nlargest) are exactly those the whole ranking gives, ties included."""
    import random

    from nexus.search import reader, scoring

    rng = random.Random(7)
    words = [f"w{i}" for i in range(40)]
    for i in range(120):
        env.append("ella" if i % 2 else "lyra", " ".join(rng.choices(words, k=rng.randint(2, 6))))
    queries = [f"{rng.choice(words)} {rng.choice(words)}" for _ in range(60)]
    answers = {}
    for share in (10**9, 0):  # never, then always, the heaviest postings only
        monkeypatch.setattr(scoring, "SHARE", share)
        reader.VIEWS.clear()
        answers[share] = [[(h.entry_id, h.score) for h in _search(env.vault, q, limit=5)] for q in queries]
    assert answers[0] == answers[10**9]
    assert any(len(a) == 5 for a in answers[0])


def test_one_word_rows_taken_from_the_heaviest_postings_rank_as_every_row_does(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One-word queries (with and without filters, with deleted documents): the best rows taken from
    the heaviest postings (heapq.nlargest by weight) are exactly those scoring every posting gives,
    equal weights included."""
    import heapq
    import random

    from nexus.search import reader, scoring

    rng = random.Random(11)
    words = [f"v{i}" for i in range(12)]
    for i in range(150):
        env.append(("ella", "lyra")[i % 2], " ".join(rng.choices(words, k=rng.randint(1, 4))))
    for i in range(4):
        _note_text = "\n\n".join(f"## {w}\n{' '.join(rng.choices(words, k=5))}" for w in words[:6])
        (env.vault.root / f"notes-{i}.md").write_text(f"# n{i}\n\n{_note_text}\n", encoding="utf-8")
    _search(env.vault, "v1")
    (env.vault.root / "notes-0.md").write_text("# n0\n\nv1 v2 v3\n", encoding="utf-8")  # deletions

    def every_row(self: Any, total: int, allowed: Any, k: int) -> list[tuple[int, float, int]]:
        allow = None if allowed is None else {i for i, yes in enumerate(allowed.tolist()) if yes}
        got, f = self.posts[0]
        rows = [
            (total, w * f, -d - self.base)
            for d, w in got.items()
            if d not in self.leaf.deleted and (allow is None or d + self.base in allow)
        ]
        return heapq.nlargest(k, rows)

    def answers() -> list[list[tuple[str | None, str, float]]]:
        reader.VIEWS.clear()
        out = []
        for w in words:
            for agent in (None, "lyra"):
                hits = _search(env.vault, w, agent=agent, limit=7)
                out.append([(h.entry_id, h.path, h.score) for h in hits])
        return out

    fast = answers()
    monkeypatch.setattr(scoring._Segment, "_one_word_rows", every_row)
    assert answers() == fast
    assert any(len(a) == 7 for a in fast)


def test_the_heaviest_postings_are_those_a_whole_stable_ranking_puts_first() -> None:
    """``scoring.heaviest`` (the k-th weight, then the positions at or above it) gives exactly the
    first k of a stable sort by weight and of ``heapq.nlargest``: equal weights in position order."""
    import heapq
    import random
    from array import array
    from operator import itemgetter

    from nexus.search.scoring import heaviest

    rng = random.Random(17)
    for _ in range(2000):
        n, k = rng.randint(0, 200), rng.randint(0, 40)
        ws = array("d", [rng.choice([0.5, 1.0, 1.25, round(rng.random(), 2)]) for _ in range(n)])
        expected = sorted(range(n), key=ws.__getitem__, reverse=True)[:k]
        assert heaviest(ws, k) == expected
        assert expected == [i for i, _ in heapq.nlargest(k, enumerate(ws), key=itemgetter(1))]


def test_partial_matches_left_out_when_enough_match_every_word_change_no_answer(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two-word queries, some with fewer every-word matches than the limit, some with more, with a
    note whose every-word match is turned away by the path filter: leaving the partial matches out
    while enough documents match every word gives the same hits as always computing them."""
    import random

    from nexus.search import reader, scoring

    rng = random.Random(23)
    words = [f"u{i}" for i in range(12)]
    for i in range(160):
        env.append("ella" if i % 2 else "lyra", " ".join(rng.choices(words, k=rng.randint(2, 7))))
    (env.vault.root / "notes-x.md").write_text("# x\n\nu1 u2 u3 u4\n", encoding="utf-8")
    for text in ("zeta eta", "zeta eta", "zeta", "zeta", "eta"):  # three match both, one a note:
        env.append("ella", text)  # with the path filter, the partial matches are needed after all
    (env.vault.root / "notes-z.md").write_text("# z\n\nzeta eta\n", encoding="utf-8")
    queries = [f"{rng.choice(words)} {rng.choice(words)}" for _ in range(40)] + ["zeta eta"]
    real = scoring.Scorer.top
    asked: list[int | None] = []

    def always(self: Any, *args: Any) -> Any:
        asked.append(args[-1] if len(args) > 5 else None)
        return real(self, *args[:5])

    answers = []
    for scorer in (None, always):
        if scorer is not None:
            monkeypatch.setattr(scoring.Scorer, "top", scorer)
        reader.VIEWS.clear()
        answers.append(
            [
                [(h.entry_id, h.path, h.score) for h in _search(env.vault, q, limit=limit, path=p)]
                for q in queries
                for limit in (3, 10)
                for p in (None, "log/*")
            ]
        )
    assert answers[0] == answers[1] and asked
    assert any(len(a) == 10 for a in answers[0])
    monkeypatch.setattr(scoring.Scorer, "top", real)
    calls: list[bool] = []

    def spy(self: Any, *args: Any) -> Any:
        rows, left_out = real(self, *args)
        calls.append(left_out)
        return rows, left_out

    monkeypatch.setattr(scoring.Scorer, "top", spy)
    hits = _search(env.vault, "zeta eta", limit=3, path="log/*")
    assert calls == [True, False] and len(hits) == 3  # (asked again: the note was turned away)


def test_a_summary_and_body_joined_flatten_as_their_whole_text() -> None:
    """``joined`` (an entry's summary — body, from the two flattened parts) cuts every snippet as
    flattening the whole text does, though the dash makes the text non-ASCII."""
    import random

    from nexus.search.language import Analysis, MatchedTerms
    from nexus.search.snippets import cut, flatten, joined

    rng = random.Random(21)
    words = ["falcon", "Nest", "roof's", "x" * 70, "42", "**bold**", "ñandú", "  ", "\n", "(budget)", "—"]
    lang = Analysis(("en",))
    made = 0
    for _ in range(2000):
        odd = rng.random() < 0.2  # (now and then a word that makes the text fenced or not ASCII)
        pool = words if odd else [w for w in words if w.isascii() and "**" not in w]
        a = " ".join(rng.choice(pool) for _ in range(rng.randint(0, 8)))
        b = " ".join(rng.choice(pool) for _ in range(rng.randint(0, 60)))
        got = joined(flatten(a), flatten(b))
        if got is None:
            continue
        made += 1
        whole = flatten(f"{a} — {b}")
        assert (got.text, got.words, got.vocab, got.fenced) == (
            whole.text,
            whole.words,
            whole.vocab,
            whole.fenced,
        )
        terms = MatchedTerms(
            lang, rng.sample(["falcon", "nest", "roof", "42", "budget", "xx"], rng.randint(1, 3))
        )
        for width in (200, 40):
            assert cut(got, terms, width) == cut(whole, terms, width), (a, b)
    assert made > 300
