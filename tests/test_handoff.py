"""The morning handoff: every item linked to its source, each link resolves, --since last, colour."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from conftest import Env

from nexus.team import handoff_page

LINK_RE = re.compile(r"\[\[([^\]|#]+)(?:#\^([A-Za-z0-9-]+))?(?:\|[^\]]*)?\]\]")


def assert_links_resolve(vault_root: Path, text: str) -> int:
    """Follow every wikilink: the note exists, and a block id ``^ID`` exists in it. Returns the count."""
    links = LINK_RE.findall(text)
    assert links, "the handoff links nothing"
    for note, block in links:
        path = vault_root / f"{note}.md"
        assert path.is_file(), f"[[{note}]] does not resolve"
        if block:
            assert re.search(rf"\^{re.escape(block)}\b", path.read_text(encoding="utf-8")), (
                f"[[{note}#^{block}]]: no block ^{block} in {note}.md"
            )
    return len(links)


def _night(env: Env) -> dict[str, str]:
    ids = {}
    ids["plan"] = env.run(
        "log",
        "append",
        "--agent",
        "ella",
        "--channel",
        "build",
        "--type",
        "note",
        "--summary",
        "Plan for the night",
    ).stdout.strip()
    env.run("log", "read", "--agent", "lyra")
    ids["fix"] = env.run(
        "log",
        "append",
        "--agent",
        "lyra",
        "--channel",
        "build",
        "--type",
        "correction",
        "--summary",
        "The plan misses the tests",
    ).stdout.strip()
    env.run("log", "read", "--agent", "ella")
    env.run(
        "decide",
        "--agent",
        "ella",
        "--title",
        "Tests first",
        "--decision",
        "Write tests first",
        "--rationale",
        "Lyra's correction",
        "--ref",
        ids["fix"],
    )
    env.run("checkpoint", "save", "--agent", "lyra", "--task", "Docs", "--step", "outline", "--next", "draft")
    env.run(
        "checkpoint",
        "save",
        "--agent",
        "ella",
        "--task",
        "Tests",
        "--step",
        "waiting",
        "--next",
        "a person says which runner",
        "--status",
        "blocked",
    )
    return ids


def test_handoff_items_and_links(env: Env) -> None:
    ids = _night(env)
    out = env.run("handoff", "--stale-minutes", "0").stdout
    written = sorted((env.vault.root / "handoff").glob("*.md"))
    assert len(written) == 1
    text = written[0].read_text(encoding="utf-8")
    assert "Morning handoff" in out and "\033[" not in out  # not a terminal: no colour
    assert "**not acknowledged by ella**" not in text  # ella acked it through the decision's --ref
    assert "The plan misses the tests — acknowledged by all" in text
    assert "lyra probably crashed" in text  # in progress, idle >= 0 minutes
    assert "ella is blocked" in text
    assert "Tests first" in text
    assert f"#^{ids['plan']}]]" in text
    assert assert_links_resolve(env.vault.root, text) >= 5
    # each entry appears once: the correction is not repeated under "Work by agent"
    assert text.count(f"#^{ids['fix']}]]") == 1


def test_handoff_links_catch_a_broken_link(env: Env) -> None:
    _night(env)
    env.run("handoff")
    text = next((env.vault.root / "handoff").glob("*.md")).read_text(encoding="utf-8")
    broken = text.replace("#^", "#^X", 1)
    try:
        assert_links_resolve(env.vault.root, broken)
    except AssertionError:
        return
    raise AssertionError("a broken block link was not caught")


def test_since_last_covers_only_what_is_new(env: Env) -> None:
    _night(env)
    first = env.run("handoff", "--json").json()
    assert first["since"] is None and first["path"].startswith("handoff/")
    env.run("log", "read", "--agent", "lyra")
    new = env.run(
        "log",
        "append",
        "--agent",
        "lyra",
        "--channel",
        "docs",
        "--type",
        "note",
        "--summary",
        "Draft written",
    ).stdout.strip()
    second = env.run("handoff", "--since", "last", "--json").json()
    assert second["since"] == first["until"]
    assert second["path"] != first["path"]
    assert second["items"]["work"] == {"lyra": {"docs": [new]}}
    assert second["items"]["decisions_made"] == []
    bad = env.run("handoff", "--since", "yesterday-ish", check=False)
    assert bad.returncode == 2 and "--since" in bad.stderr
    assert len(list((env.vault.root / "handoff").glob("*.md"))) == 2


def test_colour_only_on_a_terminal_without_no_color(env: Env) -> None:
    _night(env)

    def run_on_pty(extra: dict[str, str]) -> str:
        master, slave = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "nexus", "handoff"],
            stdout=slave,
            stderr=subprocess.DEVNULL,
            env={**env.environ, **extra},
        )
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=60)
        os.close(master)
        return b"".join(chunks).decode("utf-8", "replace")

    assert "\033[" in run_on_pty({})
    no_color = run_on_pty({"NO_COLOR": "1"})
    assert "Morning handoff" in no_color and "\033[" not in no_color


def test_library_for_terminal_shortens_aliased_links() -> None:
    md = "- [[decisions/D-0001-x|D-0001]] and [[log/2026-11#^ABC]]"
    assert handoff_page.for_terminal(md, colour=False) == "- D-0001 and [[log/2026-11#^ABC]]"


def test_integrity_problems_and_open_races_come_first_and_once(env: Env) -> None:
    env.run("decide", "--agent", "ella", "--title", "Keep it", "--decision", "Keep it", "--rationale", "R")
    note = next((env.vault.root / "decisions").glob("D-0001-*.md"))
    note.write_text(note.read_text(encoding="utf-8").replace("Keep it\n", "Drop it\n"), encoding="utf-8")
    a = env.append("ella", "I take the release").located.entry.id
    b = env.append("lyra", "I take the release").located.entry.id  # lyra never read ella's: a race
    text = env.run("handoff", "--json").json()["markdown"]
    waiting = text.split("## Waiting for you", 1)[1].split("\n## ", 1)[0]
    assert "decision-edited" in waiting and f"[[decisions/{note.stem}]]" in waiting
    work = text.split("## Work by agent", 1)[1]
    races = text.split("## Races", 1)[1].split("\n## ", 1)[0]
    assert f"#^{a}]] and lyra" in races and f"#^{b}]]" not in work  # listed once, as a race
    assert text.index("## Waiting for you") < text.index("## Races") < text.index("## Work by agent")
    assert_links_resolve(env.vault.root, text)


def test_handoff_wording_never_says_nothing_needs_you_over_open_races(env: Env) -> None:
    """Issue 13, item 16: a handoff said "Nothing needs you ✓" while listing unresolved races, and the
    first handoff's callout read "the beginning → …"."""
    env.append("ella", "I take the deploy")
    env.append("lyra", "I take the deploy too")
    text = env.run("handoff").stdout
    waiting = text.split("## Waiting for you", 1)[1].split("\n## ", 1)[0]
    assert "Nothing needs you" not in waiting and "1 unreconciled race(s)" in waiting
    assert "the beginning" not in text and "From the first entry of the log (" in text
    human = (env.vault.root / "agents" / "sam" / "identity.md").read_text(encoding="utf-8")
    assert "Identity of a person" in human and "sam is a person" in human
    assert "Relations to the other agents" not in human and "an human" not in human
    register = (env.vault.root / "Decisions.md").read_text(encoding="utf-8")
    assert "> [!info] How decisions work\n" in register
