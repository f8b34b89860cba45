"""The decision register: concurrent ids, superseding, briefs, the register note, hand edits caught."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import Env

from nexus.project import decisions


def _decide(env: Env, agent: str, title: str, *extra: str, check: bool = True) -> object:
    return env.run(
        "decide",
        "--agent",
        agent,
        "--title",
        title,
        "--decision",
        f"We do: {title}",
        "--rationale",
        "Because.",
        *extra,
        "--json",
        check=check,
    )


def test_four_processes_decide_at_once(env: Env) -> None:
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-W",
                "error",
                "-m",
                "nexus",
                "decide",
                "--agent",
                agent,
                "--title",
                f"Decision number {i}",
                "--decision",
                f"Do thing {i}",
                "--rationale",
                "Concurrency",
                "--json",
            ],
            env=env.environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, agent in enumerate(["ella", "lyra", "ella", "lyra"])
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    ids = sorted(__import__("json").loads(o[0])["id"] for o in outs)
    assert ids == ["D-0001", "D-0002", "D-0003", "D-0004"]
    files = sorted(p.name for p in (env.vault.root / "decisions").glob("D-*.md"))
    assert [f[:6] for f in files] == ids
    register = (env.vault.root / "Decisions.md").read_text(encoding="utf-8")
    listed = re.findall(r"\[\[decisions/(D-\d{4})-[a-z0-9-]+\|D-\d{4}\]\]", register)
    assert sorted(listed) == ids and "## Active (4)" in register
    log_ids = [
        e["summary"][:6]
        for e in env.run("log", "tail", "-n", "10", "--json").json()
        if e["type"] == "decision"
    ]
    assert sorted(log_ids) == ids
    assert env.run("verify").returncode == 0


def test_supersede_keeps_both_and_briefs_show_only_the_active_one(env: Env) -> None:
    _decide(env, "ella", "Tokens in the keychain")
    env.run("log", "read", "--agent", "lyra")
    new = env.run(
        "decide",
        "--agent",
        "lyra",
        "--title",
        "Tokens in the CI secret store on CI",
        "--decision",
        "Keychain locally, the CI secret store on CI",
        "--rationale",
        "No keychain on CI",
        "--supersedes",
        "D-0001",
        "--json",
    ).json()
    assert new["id"] == "D-0002" and new["supersedes"] == "D-0001"
    listed = {d["id"]: d for d in env.run("decisions", "--all", "--json").json()}
    assert listed["D-0001"]["status"] == "superseded" and listed["D-0001"]["superseded_by"] == "D-0002"
    assert listed["D-0002"]["status"] == "active"
    assert [d["id"] for d in env.run("decisions", "--json").json()] == ["D-0002"]
    assert len(list((env.vault.root / "decisions").glob("D-*.md"))) == 2  # both kept
    old_note = next((env.vault.root / "decisions").glob("D-0001-*.md")).read_text(encoding="utf-8")
    assert "Superseded" in old_note and "[[decisions/D-0002-" in old_note
    for agent in ("ella", "lyra"):
        sections = env.run("brief", "--agent", agent, "--peek", "--json").json()["sections"]
        text = next(s["text"] for s in sections if s["name"] == "decisions")
        assert "D-0002 Tokens in the CI secret store on CI" in text
        assert "D-0001" not in text
    # superseding a superseded decision is refused, and nothing changes
    before = sorted(p.name for p in (env.vault.root / "decisions").iterdir())
    bad = _decide(env, "ella", "Again", "--supersedes", "D-0001", check=False)
    assert bad.returncode == 2 and "already superseded" in bad.stderr  # type: ignore[attr-defined]
    assert sorted(p.name for p in (env.vault.root / "decisions").iterdir()) == before
    assert env.run("verify").returncode == 0


def test_a_hand_edit_of_a_decision_is_caught_by_verify(env: Env) -> None:
    _decide(env, "ella", "Use Python 3.11")
    path = next((env.vault.root / "decisions").glob("D-0001-*.md"))
    original = path.read_text(encoding="utf-8")
    path.write_text(original.replace("We do: Use Python 3.11", "We do: Use Python 3.9"), encoding="utf-8")
    report = env.run("verify", "--json", check=False)
    assert report.returncode == 1
    kinds = [(p["kind"], p["file"]) for p in report.json()["problems"]]
    assert ("decision-edited", f"decisions/{path.name}") in kinds
    # flipping the status by hand (no signature by a successor) is caught too
    path.write_text(original.replace('status: "active"', 'status: "superseded"'), encoding="utf-8")
    problems = env.run("verify", "--json", check=False).json()["problems"]
    assert any(p["kind"] == "decision-edited" and "status" in p["message"] for p in problems)
    # restoring the original makes verify clean again
    path.write_text(original, encoding="utf-8")
    assert env.run("verify").returncode == 0


def test_an_obsidian_property_rewrite_is_not_an_edit(env: Env) -> None:
    """Obsidian may re-save the properties as block YAML; the values are unchanged, so verify is clean."""
    import yaml

    _decide(env, "ella", "Keep the log in Markdown")
    path = next((env.vault.root / "decisions").glob("D-0001-*.md"))
    text = path.read_text(encoding="utf-8")
    _, fm, body = text.split("---\n", 2)
    props = yaml.safe_load(fm)
    path.write_text("---\n" + yaml.safe_dump(props, sort_keys=False) + "---\n" + body, encoding="utf-8")
    assert env.run("verify").returncode == 0
    assert env.run("decisions", "--json").json()[0]["title"] == "Keep the log in Markdown"


def test_bad_input_changes_nothing(env: Env) -> None:
    for args, needle in (
        (("--agent", "nobody", "--title", "T", "--decision", "D", "--rationale", "R"), "unknown agent"),
        (("--agent", "ella", "--title", " ", "--decision", "D", "--rationale", "R"), "title is empty"),
        (("--agent", "ella", "--title", "T\u200b", "--decision", "D", "--rationale", "R"), "U+200B"),
        (
            (
                "--agent",
                "ella",
                "--title",
                "T",
                "--decision",
                "D",
                "--rationale",
                "R",
                "--supersedes",
                "D-0042",
            ),
            "no decision D-0042",
        ),
        (("--agent", "ella", "--title", "T", "--decision", "## Rationale", "--rationale", "R"), "## "),
        (
            ("--agent", "ella", "--title", "T", "--decision", "D", "--rationale", "R", "--ref", "nope"),
            "not an entry id",
        ),
    ):
        result = env.run("decide", *args, check=False)
        assert result.returncode != 0 and needle in result.stderr, (args, result.stderr)
        assert result.stderr.count("\n") == 1
    assert list((env.vault.root / "decisions").glob("D-*.md")) == []
    assert env.run("log", "tail", "--json").json() == []


def test_brief_lines_come_from_the_cache(env: Env) -> None:
    _decide(env, "ella", "First")
    lines = decisions.brief_lines(env.vault)
    assert len(lines) == 1 and "First" in lines[0]
    cache = env.vault.state / "cache" / decisions.CACHE
    assert cache.is_file()
    # a changed folder (a new note) invalidates the cache
    _decide(env, "lyra", "Second")
    assert len(decisions.brief_lines(env.vault)) == 2


def test_unquoted_yaml_times_from_obsidian_still_verify(env: Env) -> None:
    """Obsidian may write `date: 2026-11-30T04:41:07Z` unquoted; YAML reads a datetime; still clean."""
    _decide(env, "ella", "Dates survive")
    path = next((env.vault.root / "decisions").glob("D-0001-*.md"))
    text = path.read_text(encoding="utf-8")
    lines = []
    for line in text.split("\n"):
        if line.startswith(("date: ", "id: ", "status: ")):
            key, value = line.split(": ", 1)
            line = f"{key}: {value.strip(chr(34))}"
        lines.append(line)
    path.write_text("\n".join(lines), encoding="utf-8")
    assert env.run("verify").returncode == 0
    assert env.run("decisions", "--json").json()[0]["date"].endswith("Z")


def test_decisions_show_gives_the_rationale_and_the_chain_both_ways(env: Env) -> None:
    """Issue 13, item 4: a decision's rationale was in neither `nexus decisions` nor Decisions.md."""
    env.run(
        "decide",
        "--agent",
        "ella",
        "--title",
        "API tokens live in the OS keychain",
        "--decision",
        "Agents read tokens from the keychain.",
        "--rationale",
        "Plain files leak.",
        "--alternatives",
        "An encrypted file in the repo.",
    )
    env.run(
        "decide",
        "--agent",
        "lyra",
        "--title",
        "Keychain locally, secret store on CI",
        "--decision",
        "CI reads the secret store.",
        "--rationale",
        "CI has no keychain.",
        "--supersedes",
        "D-0001",
    )
    env.run(
        "decide",
        "--agent",
        "ella",
        "--title",
        "Secret store everywhere",
        "--decision",
        "One way.",
        "--rationale",
        "Two ways confused people.",
        "--supersedes",
        "D-0002",
    )
    one = env.run("decisions", "show", "D-0001", "--json").json()
    assert one["rationale"] == "Plain files leak." and one["alternatives"] == "An encrypted file in the repo."
    assert one["author"] == "ella" and one["status"] == "superseded"
    assert one["supersedes_chain"] == [] and one["superseded_by_chain"] == ["D-0002", "D-0003"]
    assert one["in_force"] == "D-0003"
    three = env.run("decisions", "show", "d-0003", "--json").json()
    assert three["supersedes_chain"] == ["D-0002", "D-0001"] and three["in_force"] == "D-0003"
    text = env.run("decisions", "show", "D-0002").stdout
    assert "Rationale\n  CI has no keychain." in text and "decided by lyra" in text
    assert "SUPERSEDED by D-0003" in text and "Supersedes: D-0002 ← D-0001" in text
    missing = env.run("decisions", "show", "D-0042", check=False)
    assert missing.returncode != 0 and "no decision D-0042" in missing.stderr
    assert "Traceback" not in missing.stderr
    assert len(env.run("decisions", "--all", "--json").json()) == 3  # the list still works beside show
