"""`nexus brief`: identity, what the agent owes, unread entries; bounded; cursor rules; hot path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import Env


def test_brief_shows_identity_owed_and_unread_then_advances_the_cursor(env: Env) -> None:
    note = env.vault.identity_path("lyra")
    note.write_text(note.read_text().replace("_What lyra is responsible for._", "Reviews every migration."))
    d = env.append("ella", "we use sqlite", type="decision").located.entry.id
    env.append("ella", "schema drafted", body="tables: users, orders")
    out = env.run("brief", "--agent", "lyra").stdout
    assert "Reviews every migration." in out
    assert "OWED" in out and d in out
    assert "schema drafted" in out and "tables: users, orders" in out
    # the cursor moved: the entries are no longer unread, but the decision is still owed
    again = env.run("brief", "--agent", "lyra", "--json").json()
    assert again["unread_shown"] == 0 and again["owed"] == [d]
    assert env.run("log", "read", "--agent", "lyra", "--json").json() == []


def test_peek_leaves_the_cursor(env: Env) -> None:
    env.append("ella", "one")
    assert env.run("brief", "--agent", "lyra", "--peek", "--json").json()["unread_shown"] == 1
    assert len(env.run("log", "read", "--agent", "lyra", "--json").json()) == 1


def test_over_budget_keeps_owed_and_newest_and_says_what_was_left_out(env: Env) -> None:
    q = env.append("ella", "the oldest: a question that must be answered", type="question").located.entry.id
    for i in range(120):
        env.append("ella", f"progress note {i:03d}", body="detail " * 30)
    out = env.run("brief", "--agent", "lyra", "--max-chars", "3000").stdout
    assert len(out) <= 3000 + 1  # print adds the final newline
    assert q in out  # what it owes is kept
    assert "progress note 119" in out  # the newest is kept
    assert "progress note 000" not in out
    brief = env.run("brief", "--agent", "lyra", "--max-chars", "3000", "--json").json()
    assert brief["unread_omitted"] > 0 and not brief["cursor_advanced"]
    unread = next(s for s in brief["sections"] if s["name"] == "unread")
    assert (
        f"{brief['unread_omitted']} older unread entries not shown: run `nexus log read --agent lyra`"
        in unread["text"]
    )
    # the cursor stayed, so the command it names returns everything
    assert len(env.run("log", "read", "--agent", "lyra", "--json").json()) == 121


def test_default_budget_is_ten_thousand_characters(env: Env) -> None:
    for i in range(200):
        env.append("ella", f"note {i}", body="x" * 200)
    out = env.run("brief", "--agent", "lyra").stdout
    assert 9000 < len(out) <= 10_001


def test_refuses_a_budget_too_small_and_unknown_names(env: Env) -> None:
    r = env.run("brief", "--agent", "lyra", "--max-chars", "10", check=False)
    assert r.returncode == 2 and "too small" in r.stderr
    r = env.run("brief", "--agent", "../etc", check=False)
    assert r.returncode == 2 and r.stderr.startswith("nexus: error:")


def test_the_hot_path_imports_no_yaml_watchdog_or_whoosh(env: Env) -> None:
    env.append("ella", "a decision", type="decision")
    env.run("brief", "--agent", "lyra")  # warms the JSON caches (roster, settings)
    env.append("ella", "more")
    code = (
        "import sys; from nexus.surfaces.cli import main; rc = main(['brief', '--agent', 'lyra']);"
        "heavy = [m for m in ('yaml', 'frontmatter', 'watchdog', 'whoosh', 'mcp', 'markdown_it')"
        " if m in sys.modules]; print('HEAVY', heavy); sys.exit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        env=env.environ,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(env.vault.root),
    )
    assert proc.returncode == 0, proc.stderr
    assert "more" in proc.stdout
    assert "HEAVY []" in proc.stdout


def test_a_correction_says_what_it_corrects_and_the_brief_shows_the_project_state(
    env: Env, tmp_path: Path
) -> None:
    """Issue 13, items 5 and 6: at 2 a.m. lyra's correction read "(acks 01M8…)"; the brief had no
    project state; `--stale-minutes` was refused."""
    wrong = env.run(
        "log",
        "append",
        "--agent",
        "ella",
        "--channel",
        "parser",
        "--type",
        "note",
        "--summary",
        "Lexer ported; grammar rules next",
    ).stdout.strip()
    env.run(
        "log",
        "append",
        "--agent",
        "lyra",
        "--channel",
        "parser",
        "--type",
        "correction",
        "--summary",
        "Only the lexer's tokens were ported, not its modes",
        "--ack",
        wrong,
    )
    state = tmp_path / "state.md"
    state.write_text("# Project state\n- Parser port: in progress (ella)\n- Release: Thursday\n")
    env.run("state", "set", "--agent", "sam", "--expect", "0", "--file", str(state))
    text = env.run("brief", "--agent", "ella", "--stale-minutes", "5").stdout
    assert f'(corrects "Lexer ported; grammar rules next" [{wrong}])' in text
    assert "## Project state (version 1)\n- Parser port: in progress (ella)\n- Release: Thursday" in text
    as_json = env.run("brief", "--agent", "lyra", "--peek", "--json").json()
    assert "state" in [s["name"] for s in as_json["sections"]]
    # --stale-minutes is honoured: a checkpoint idle 2 minutes is a probable crash at 1, not at 30
    env.run("checkpoint", "save", "--agent", "ella", "--task", "port", "--step", "lexer", "--next", "rules")
    import time

    time.sleep(1.2)
    calm = env.run("brief", "--agent", "ella", "--peek", "--stale-minutes", "30").stdout
    alarmed = env.run("brief", "--agent", "ella", "--peek", "--stale-minutes", "0.01").stdout
    assert calm != alarmed and "crash" in alarmed.lower() and "crash" not in calm.lower()


def test_an_acknowledged_entry_is_quoted_only_while_it_verifies_in_one_long_lived_process(
    env: Env,
) -> None:
    """An entry that acks another names it with its summary: only when that entry still verifies,
    read again at every brief (a long-running MCP server kept a process-wide cache by id, and quoted
    a summary without checking its signature)."""
    from conftest import edit_in_place

    from nexus.settings import DEFAULTS
    from nexus.team import brief

    first = env.append("ella", "the harbour crane is fixed").located
    env.append("lyra", "thanks, seen it", ack=[first.entry.id])

    def ack_line() -> str:
        text = brief.render(brief.build(env.vault, "sam", DEFAULTS, peek=True))
        return next(line for line in text.splitlines() if "thanks, seen it" in line)

    assert '"the harbour crane is fixed"' in ack_line()
    edit_in_place(env.vault.root / first.file, b"harbour crane is fixed", b"harbour crane is broke")
    line = ack_line()  # (the same process: nothing remembered of the first brief)
    assert "crane" not in line and first.entry.id in line, line
