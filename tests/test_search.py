"""Search (issue 5): a real Whoosh index under .nexus/index/, never stale, with provenance."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Env

from nexus import search
from nexus.errors import InputError, QueryError
from nexus.search import builder, engine, finder, sections
from nexus.search.manifest import VERSION as MANIFEST_VERSION
from nexus.storage import segments


def _note(env: Env, rel: str, text: str) -> Path:
    path = env.vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


DECISION = """---
id: {id}
title: {title}
status: {status}
author: {author}
---
# {title}

## Decision
{decision}

## Rationale
Keeps the keys out of the repository.
"""


def test_search_right_after_append_without_watcher_finds_it(env: Env) -> None:
    env.run("search", "anything")  # the index exists before the append
    entry_id = env.run(
        "log",
        "append",
        "--agent",
        "ella",
        "--channel",
        "build",
        "--type",
        "note",
        "--summary",
        "Pipeline uses the quokka cache",
        "--body",
        "A second line.",
    ).stdout.strip()
    hits = env.run("search", "quokka", "--json").json()
    assert [h["entry_id"] for h in hits] == [entry_id]
    hit = hits[0]
    assert hit["kind"] == "entry" and hit["agent"] == "ella" and hit["verified"] is True
    assert hit["link"] == f"[[{hit['path'][:-3]}#^{entry_id}]]"
    assert "**quokka**" in hit["snippet"]
    lines = (env.vault.root / hit["path"]).read_text(encoding="utf-8").split("\n")
    assert lines[hit["line_start"] - 1].endswith(f" ^{entry_id}")  # (its header opens it)
    assert lines[hit["line_end"] - 1].startswith("%% ") and lines[hit["line_end"] - 1].endswith(" %%")


def test_deleting_the_index_rebuilds_it_with_the_same_results(env: Env) -> None:
    for i in range(5):
        env.append("lyra", f"otter report {i}", body=f"river otter number {i}")
    _note(env, "notes/otters.md", "# Otters\n\nThe river otter is playful.\n\n## Diet\nFish.\n")
    first = env.run("search", "otter", "--json", "-n", "20").json()
    assert len(first) == 7  # five entries, and both sections of "Otters" (stemmed: otters → otter)
    shutil.rmtree(env.vault.state / "index")
    second = env.run("search", "otter", "--json", "-n", "20").json()
    assert second == first
    assert (env.vault.state / "index" / "manifest.json").is_file()


def test_a_corrupt_index_is_rebuilt(env: Env) -> None:
    env.append("ella", "badger sighting")
    assert len(search.search(env.vault, "badger")) == 1
    manifest = json.loads((env.vault.state / "index" / "manifest.json").read_text())
    folder = env.vault.state / "index" / manifest["dir"]
    for f in folder.iterdir():
        f.write_bytes(b"garbage")
    run = env.run("search", "badger", "--json")
    assert [h["title"] for h in run.json()] == ["badger sighting"]
    (env.vault.state / "index" / "manifest.json").write_text("{not json")
    assert [h["title"] for h in env.run("search", "badger", "--json").json()] == ["badger sighting"]


def test_query_syntax_fields_phrases_prefixes_booleans(env: Env) -> None:
    env.append(
        "ella",
        "deploy the walrus service",
        type="decision",
        channel="ops",
        body="Rolling deploy with a canary.",
    )
    env.append(
        "lyra",
        "walrus tests are flaky",
        type="note",
        channel="build",
        body="The canary deploy step times out.",
    )
    env.append("lyra", "walrus canary failed", type="correction", channel="ops")

    def titles(q: str, **kw: object) -> list[str]:  # (words: hybrid would add near meanings)
        return sorted(h.title for h in search.search(env.vault, q, mode="text", **kw))  # type: ignore[arg-type]

    assert titles("walrus") == sorted(
        ["deploy the walrus service", "walrus tests are flaky", "walrus canary failed"]
    )
    assert titles("agent:lyra walrus") == ["walrus canary failed", "walrus tests are flaky"]
    assert titles("type:decision walrus") == ["deploy the walrus service"]
    assert titles('"canary deploy"') == ["walrus tests are flaky"]
    assert titles('"deploy with a canary"') == ["deploy the walrus service"]
    assert titles("flak* kind:entry") == ["walrus tests are flaky"]
    assert titles("walrus NOT canary") == []
    assert titles("walrus AND (flaky OR failed)") == ["walrus canary failed", "walrus tests are flaky"]
    assert titles("walrus", agent="lyra", channel="ops") == ["walrus canary failed"]
    assert titles("walrus", type="correction") == ["walrus canary failed"]
    assert titles("walrus", path="log/*") == titles("walrus")
    assert titles("walrus", path="decisions/*") == []
    assert titles("walrus", since="1d") == titles("walrus")
    assert titles("walrus", until="2000-01-01") == []
    assert len(search.search(env.vault, "walrus", limit=1)) == 1


@pytest.mark.parametrize("bad", ['"unclosed phrase', "(walrus", "walrus)", "colour:red", "walrus AND", "   "])
def test_bad_syntax_is_a_clear_one_line_error(env: Env, bad: str) -> None:
    with pytest.raises(QueryError):
        search.search(env.vault, bad)
    run = env.run("search", bad, check=False)
    assert run.returncode == 2
    assert run.stderr.startswith("nexus: error: ") and "Traceback" not in run.stderr
    assert run.stderr.count("\n") == 1


def test_bad_time_filter_is_refused(env: Env) -> None:
    with pytest.raises(InputError):
        search.search(env.vault, "x", since="last tuesday")


def test_superseded_decisions_rank_below_active_ones_and_say_so(env: Env) -> None:
    _note(
        env,
        "decisions/D-0001-secrets.md",
        DECISION.format(
            id="D-0001",
            title="Secrets storage",
            status="superseded",
            author="ella",
            decision="Store secrets in environment variables; secrets never in code.",
        ),
    )
    _note(
        env,
        "decisions/D-0002-secrets.md",
        DECISION.format(
            id="D-0002",
            title="Secrets storage v2",
            status="active",
            author="lyra",
            decision="Store secrets in the keychain.",
        ),
    )
    hits = search.search(env.vault, "secrets", type="decision")
    paths = [h.path for h in hits]
    assert paths.index("decisions/D-0002-secrets.md") < paths.index("decisions/D-0001-secrets.md")
    first_old = paths.index("decisions/D-0001-secrets.md")
    assert all(h.path == "decisions/D-0001-secrets.md" for h in hits[first_old:])
    old = hits[first_old]
    assert old.superseded and old.status == "superseded" and old.agent == "ella"
    text = env.run("search", "secrets", "--type", "decision").stdout
    assert "(superseded)" in text
    by_author = search.search(env.vault, "agent:lyra secrets")
    assert {h.path for h in by_author} == {"decisions/D-0002-secrets.md"}
    section = next(h for h in hits if h.heading == "Decision" and h.path.endswith("D-0002-secrets.md"))
    assert section.link == "[[decisions/D-0002-secrets#Decision]]"
    lines = (env.vault.root / section.path).read_text().split("\n")
    assert lines[section.line_start - 1] == "## Decision"


def test_notes_changed_removed_and_touched_are_reindexed(env: Env) -> None:
    path = _note(env, "notes/plan.md", "# Plan\n\nWe migrate to pelican storage.\n")
    assert [h.path for h in search.search(env.vault, "pelican")] == ["notes/plan.md"]
    path.write_text("# Plan\n\nWe migrate to heron storage.\n", encoding="utf-8")
    assert search.search(env.vault, "pelican") == []
    assert [h.path for h in search.search(env.vault, "heron")] == ["notes/plan.md"]
    path.touch()
    stats = search.refresh(env.vault)
    assert stats.files_indexed == 0 and stats.documents_added == 0  # same content hash
    path.unlink()
    assert search.search(env.vault, "heron") == []


def test_an_edited_entry_no_longer_verifies(env: Env) -> None:
    located = env.append("ella", "the falcon budget is 100").located
    assert search.search(env.vault, "falcon")[0].verified is True
    seg = env.vault.root / located.file
    seg.write_text(seg.read_text().replace("budget is 100", "budget is 900"), encoding="utf-8")
    hits = search.search(env.vault, "falcon")
    assert len(hits) == 1 and hits[0].verified is False
    assert "✗ SIGNATURE DOES NOT VERIFY" in env.run("search", "falcon").stdout


def test_index_status_reports_stale_files_until_the_next_search(env: Env) -> None:
    assert env.run("index", "status", "--json").json()["exists"] is False
    env.run("index", "rebuild")
    status = env.run("index", "status", "--json").json()
    assert status["exists"] and status["stale_files"] == [] and status["documents"] > 0
    env.append("ella", "heron spotted")
    status = env.run("index", "status", "--json").json()
    assert len(status["stale_files"]) == 1 and status["stale_files"][0].startswith("log/")
    env.run("search", "heron")
    after = env.run("index", "status", "--json").json()
    assert after["stale_files"] == [] and after["entries"] == status["entries"] + 1


def test_concurrent_writers_and_readers_never_fail(env: Env) -> None:
    """Processes append-and-search while others search in a loop: every search succeeds and finds
    every entry appended before it started."""
    code = r"""
import sys
from nexus.keys import identity
from nexus.ledger import log
from nexus import search
from nexus.storage.vault import Vault
from nexus.settings import keys_home
v = Vault(__import__("pathlib").Path(sys.argv[1]))
role = sys.argv[2]
if role == "writer":
    s = identity.load_signer(v, keys_home(), sys.argv[3])
    for i in range(15):
        word = f"{sys.argv[3]}word{i}"
        log.append(v, s, channel="c", type="note", summary=word)
        assert [h.title for h in search.search(v, word, mode="text")] == [word], word
else:
    for i in range(40):
        search.search(v, "word*", limit=5, mode="text")
print("ok")
"""
    procs = [
        subprocess.Popen(
            [sys.executable, "-W", "error", "-c", code, str(env.vault.root), role, *extra],
            env=env.environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role, extra in (("writer", ["ella"]), ("writer", ["lyra"]), ("reader", []), ("reader", []))
    ]
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0 and out.strip() == "ok", err
    assert len(search.search(env.vault, "ellaword* OR lyraword*", limit=100, mode="text")) == 30


def test_sections_split_at_headings_not_inside_code() -> None:
    text = (
        "---\ntitle: T\nstatus: active\n---\nintro line\n\n# One\nalpha\n\n```\n# not a heading\n```\n\n"
        "## Two\nbeta\n"
    )
    props, parts = sections.split(text)
    assert props["status"] == "active"
    assert [(s.heading, s.level, s.line_start, s.line_end) for s in parts] == [
        ("", 0, 5, 5),
        ("One", 1, 7, 12),
        ("Two", 2, 14, 15),
    ]
    data = text.encode()
    assert data[parts[2].start : parts[2].end].decode() == "## Two\nbeta\n"


def test_search_cli_human_output(env: Env) -> None:
    env.append("ella", "ibis nesting season", body="The ibis nests in March.")
    out = env.run("search", "ibis").stdout
    assert out.startswith("1. ibis nesting season  ✓ signed")
    assert "[[log/" in out and "**ibis**" in out
    assert env.run("search", "nothingmatchesthis", "--mode", "text").stdout.strip() == "no matches"


def test_appends_are_indexed_from_the_saved_offset_and_rewrites_in_full(env: Env) -> None:
    first = env.append("ella", "gannet one").located
    assert len(search.search(env.vault, "gannet")) == 1
    second = env.append("lyra", "gannet two").located
    stats = search.refresh(env.vault)
    assert stats.files_indexed == 1 and stats.documents_added == 1  # only the new entry
    manifest = json.loads((env.vault.state / "index" / "manifest.json").read_text())
    offset, line, last, scanned = manifest["files"][first.file]["mark"]  # a marks.Mark: after the last entry
    data = (env.vault.root / first.file).read_bytes()
    found = segments.scan(data, first.file).entries[-1]
    assert (offset, line, last) == (found.end_offset, found.line_end + 1, second.entry.id)
    assert scanned == len(data)
    # a same-size edit in place (a history edit) is not an append: the segment is reindexed whole
    path = env.vault.root / first.file
    path.write_bytes(path.read_bytes().replace(b"gannet one", b"gannet ONE"))
    stats = search.refresh(env.vault)
    assert stats.documents_added == 2
    assert sorted(h.title for h in search.search(env.vault, "gannet")) == ["gannet ONE", "gannet two"]
    assert len(search.search(env.vault, "gannet")) == 2  # no duplicates
    # an edit that moves the bytes before the mark (and then an append): the mark no longer holds
    path.write_bytes(path.read_bytes().replace(b"gannet ONE", b"gannet number one"))
    env.append("lyra", "gannet three")
    stats = search.refresh(env.vault)
    assert stats.documents_added == 3  # the segment reindexed whole
    titles = sorted(h.title for h in search.search(env.vault, "gannet"))
    assert titles == ["gannet number one", "gannet three", "gannet two"]


def test_a_parallel_build_gives_the_same_results_as_a_single_process_one(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(60):
        env.append("ella" if i % 2 else "lyra", f"tern report {i}", body=f"arctic tern number {i} " * 20)
    _note(env, "notes/terns.md", "# Terns\n\nArctic tern migration.\n\n## Range\nPole to pole tern.\n")
    search.rebuild(env.vault)
    single = [
        (h.path, h.line_start, h.entry_id) for h in search.search(env.vault, "tern", limit=100, mode="text")
    ]
    single_manifest = json.loads((env.vault.state / "index" / "manifest.json").read_text())["files"]
    monkeypatch.setattr(builder, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(builder, "CHUNK_BYTES", 2000)  # cut the segment into many pieces
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    search.rebuild(env.vault)
    manifest = json.loads((env.vault.state / "index" / "manifest.json").read_text())
    searcher = engine.Index.open(env.vault.state / "index" / manifest["dir"]).searcher()
    assert len(searcher.leaves()) == 3  # one segment a process
    searcher.close()
    parallel = [
        (h.path, h.line_start, h.entry_id) for h in search.search(env.vault, "tern", limit=100, mode="text")
    ]
    assert sorted(parallel) == sorted(single) and len(single) == 62
    assert manifest["files"] == single_manifest
    env.append("ella", "tern after the parallel build")
    assert len(search.search(env.vault, "tern", limit=100, mode="text")) == 63


def test_block_scoring_gives_the_same_hits_and_scores_as_whoosh_collector(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    words = ["amber", "basalt", "cobalt", "dune", "ember", "fjord"]
    for i in range(120):
        picked = [words[(i * j) % len(words)] for j in range(1, 5)]
        env.append(
            "ella" if i % 3 else "lyra",
            f"{picked[0]} {picked[1]} note {i}",
            body=" ".join(picked * (1 + i % 4)),
            type="decision" if i % 5 == 0 else "note",
        )
    located = env.append("ella", "deleted later cobalt").located
    search.refresh(env.vault)
    seg = env.vault.root / located.file  # a rewrite leaves deletions in a segment
    seg.write_text(seg.read_text().replace("deleted later cobalt", "deleted later cobalx"))

    def run(q: str, **kw: object) -> list[tuple[float, str]]:
        hits = search.search(env.vault, q, limit=50, **kw)  # type: ignore[arg-type]
        return sorted((round(h.score, 3), f"{h.path}:{h.line_start}") for h in hits)

    queries = [
        ("cobalt", {}),
        ("amber AND dune", {}),
        ('"basalt cobalt"', {}),
        ("dune", {"agent": "lyra"}),
        ("fjord", {"type": "decision"}),
        ("amber AND type:decision", {}),
    ]
    fast = [run(q, **kw) for q, kw in queries]
    # Plain words: every hit matching both words (the same as AND, same scores) first, then partial ones.
    plain = [
        (round(h.score, 3), f"{h.path}:{h.line_start}")
        for h in search.search(env.vault, "amber dune", limit=200)
    ]
    both = fast[1]
    assert sorted(plain[: len(both)]) == both and len(plain) > len(both)
    monkeypatch.setattr(finder, "FAST", False)
    slow = [run(q, **kw) for q, kw in queries]
    assert fast == slow
    assert all(fast)


def test_searches_never_fail_while_another_process_rebuilds(env: Env) -> None:
    for i in range(30):
        env.append("ella", f"puffin colony {i}")
    search.rebuild(env.vault)
    code = r"""
import sys
from pathlib import Path
from nexus import search
from nexus.storage.vault import Vault
v = Vault(Path(sys.argv[1]))
if sys.argv[2] == "rebuild":
    for _ in range(6):
        search.rebuild(v)
else:
    for _ in range(60):
        assert len(search.search(v, "puffin", limit=100)) == 30
print("ok")
"""
    procs = [
        subprocess.Popen(
            [sys.executable, "-W", "error", "-c", code, str(env.vault.root), role],
            env=env.environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role in ("rebuild", "search", "search")
    ]
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0 and out.strip() == "ok", err
    folders = [d for d in (env.vault.state / "index").iterdir() if d.is_dir()]
    assert len(folders) == 1  # earlier builds' folders are gone


@pytest.mark.parametrize(
    "text",
    [
        "cobalt",
        "Amber dune",
        "the fjord",
        "to be",
        "naïve CAFÉ x1 y_2",
        "amber  amber",
        "and or not",
        "Amber OR dune",
        "ab-cd",
    ],
)
def test_plain_word_queries_skip_the_parser_with_the_same_query(text: str) -> None:
    fast, phrases = search.parse_query(text)
    parsed, _ = search.parse_query(text, shortcut=False)
    assert fast == parsed and phrases == []


def test_snippets_never_bold_inside_a_wikilink(env: Env) -> None:
    env.append(
        "ella",
        "Columns decided",
        body="See [[decisions/D-0001-error-columns-are-1-based|D-0001]]: error columns count from 1.",
    )
    hits = search.search(env.vault, "columns")
    [snippet] = [h.snippet for h in hits if h.title == "Columns decided"]
    assert "[[decisions/D-0001-error-columns-are-1-based|D-0001]]" in snippet
    assert "error **columns** count" in snippet


def test_a_failing_index_build_process_is_one_clear_line(env: Env) -> None:
    """A helper process of a parallel build fails (its file system calls fail with EIO, as on a
    failing disk): the search says so in one line, not a traceback, leaves no half-built index
    behind, and the next search builds it."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("a parallel build needs two cores")
    text = "# Big\n\n" + ("walrus heron " * 1000 + "\n\n") * 340
    assert len(text.encode()) > builder.PARALLEL_BYTES  # built by two processes
    _note(env, "notes/big.md", text)
    faulty = Path(__file__).parent / "faulty.py"
    run = subprocess.run(
        [sys.executable, "-W", "error", str(faulty), "search", "walrus"],
        env={**env.environ, "NEXUS_FAULT": "listdir:1:child:EIO"},
        cwd=env.vault.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith("nexus: error: building the search index failed in a helper process (")
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    index = env.vault.state / "index"
    assert not (index / "manifest.json").exists() and not [p for p in index.iterdir() if p.is_dir()]
    assert [h["path"] for h in env.run("search", "walrus", "--mode", "text", "--json").json()] == [
        "notes/big.md"
    ]


Records = dict[str, dict[str, object]]


def _version_7(files: Records) -> dict[str, object]:
    return {"version": 7, "dir": "ix-0ld0", "files": files, "languages": ["en"]}


def _version_8(files: Records) -> dict[str, object]:  # a segment's position as offset, line, tail
    for record in files.values():
        if "mark" in record:
            mark = record.pop("mark")
            assert isinstance(mark, list)
            record.update(offset=mark[0], line=mark[1], tail="")
    return {"version": 8, "dir": "ix-0ld0", "files": files, "languages": ["en"]}


def _version_9(files: Records) -> dict[str, object]:  # before entries' seals (keys.seal)
    return {"version": 9, "dir": "ix-0ld0", "files": files, "languages": ["en"]}


def _version_10(files: Records) -> dict[str, object]:  # Whoosh's own posting blocks (not engine.FlatCodec)
    return {"version": 10, "dir": "ix-0ld0", "files": files, "languages": ["en"]}


def _sizes_as_text(files: Records) -> dict[str, object]:
    records = {rel: {**r, "size": str(r["size"])} for rel, r in files.items()}
    return {"version": MANIFEST_VERSION, "dir": "ix-0ld0", "files": records, "languages": ["en"]}


OLD_MANIFESTS: dict[str, Callable[[Records], dict[str, object]]] = {
    "version 7": _version_7,
    "version 8": _version_8,
    "version 9": _version_9,
    "version 10": _version_10,
    "a record of another shape": _sizes_as_text,
}


@pytest.mark.parametrize("shape", sorted(OLD_MANIFESTS))
def test_an_index_an_older_nexus_wrote_is_rebuilt(env: Env, shape: str) -> None:
    """A vault carrying an index of an older shape (its manifest claims every file is indexed, its
    folder is a real, empty index): read as missing, rebuilt, the old folder removed."""
    env.append("ella", "osprey nest")
    _note(env, "notes/birds.md", "# Birds\n\nAn osprey over the lake.\n")
    search.rebuild(env.vault)
    index = env.vault.state / "index"
    files: Records = json.loads((index / "manifest.json").read_text())["files"]  # all, as indexed now
    shutil.rmtree(index)
    (index / "ix-0ld0").mkdir(parents=True)
    engine.Index.create(index / "ix-0ld0")
    (index / "manifest.json").write_text(json.dumps(OLD_MANIFESTS[shape](files)))
    hits = env.run("search", "osprey", "--json").json()
    assert sorted(h["path"].split("/")[0] for h in hits) == ["log", "notes"]
    manifest = json.loads((index / "manifest.json").read_text())
    assert manifest["version"] == MANIFEST_VERSION == 11 and manifest["dir"] != "ix-0ld0"
    assert not (index / "ix-0ld0").exists()


def test_importing_search_imports_no_whoosh_and_only_the_engine_does() -> None:
    code = (
        "import sys; from nexus import search; search.index_dir; search.MANIFEST; "
        "print('whoosh' in sys.modules); search.search; print('whoosh' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
    root = Path(search.__file__).parent.parent
    importers = [
        p.relative_to(root).as_posix()
        for p in sorted(root.rglob("*.py"))
        if re.search(r"^\s*(from|import) whoosh\b", p.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert importers == ["search/engine.py"]
