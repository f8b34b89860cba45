"""A way forward from every mistake: a mistyped agent, command, option or NEXUS_* variable is named as
typed, with the close one when there is one; a refused setting blames where its value came from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import Env

from nexus import variables
from nexus.suggest import closest

ROOT = Path(__file__).resolve().parent.parent


def _one_error(r: object) -> str:
    stderr: str = r.stderr  # type: ignore[attr-defined]
    assert r.returncode != 0 and r.stdout == "", stderr  # type: ignore[attr-defined]
    lines = stderr.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("nexus: error: "), stderr
    return lines[0]


def _log(env: Env) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((env.vault.root / "log").glob("*.md")))


def test_closest_offers_a_close_word_and_nothing_for_a_far_one() -> None:
    assert closest("ela", ["ella", "lyra", "sam"]) == "ella"
    assert closest("lgo", ["log", "sync", "brief"]) == "log"
    assert closest("--maxchars", ["--max-chars", "--peek"]) == "--max-chars"
    assert closest("bob", ["ella", "lyra", "sam"]) is None
    assert closest("ella", ["ella"]) is None  # never the word itself


def test_a_mistyped_agent_is_offered_the_agent_not_invited_to_become_one(env: Env) -> None:
    before = _log(env)
    r = env.run(
        "log", "append", "--agent", "ela", "--channel", "c", "--type", "note", "--summary", "x", check=False
    )
    line = _one_error(r)
    assert "unknown agent 'ela'" in line and "did you mean 'ella'?" in line
    assert "agent add" not in line
    assert _log(env) == before  # nothing written
    for args in (
        ("brief", "--agent", "lyar"),
        ("log", "read", "--agent", "elle"),
        ("log", "owed", "--agent", "sma"),
    ):
        line = _one_error(env.run(*args, check=False))
        assert "did you mean" in line and "agent add" not in line, line
    # no identity close to it: how to add one
    line = _one_error(env.run("brief", "--agent", "bob", check=False))
    assert "unknown agent 'bob': run `nexus agent add bob` first" in line and "did you mean" not in line


def test_a_mistyped_command_is_offered_the_command(env: Env) -> None:
    line = _one_error(env.run("log", "tial", check=False))
    assert "unknown command 'tial' (did you mean `nexus log tail`?)" in line
    assert "(see `nexus log --help`)" in line
    line = _one_error(env.run("lgo", "tail", check=False))
    assert "unknown command 'lgo' (did you mean `nexus log`?)" in line
    assert "did you mean" not in _one_error(env.run("zzzzzz", check=False))


def test_a_mistyped_option_is_named_as_typed_with_its_commands_help(env: Env) -> None:
    before = _log(env)
    r = env.run(
        "log",
        "append",
        "--agent",
        "ella",
        "--chanel",
        "parser",
        "--type",
        "note",
        "--summary",
        "x",
        check=False,
    )
    line = _one_error(r)
    assert r.returncode == 2
    assert line == (
        "nexus: error: nexus log append: unknown option --chanel (did you mean --channel?) "
        "(see `nexus log append --help`)"
    )
    assert _log(env) == before
    line = _one_error(env.run("brief", "--agent", "ella", "--maxchars", "500", check=False))
    assert line == (
        "nexus: error: nexus brief: unknown option --maxchars (did you mean --max-chars?) "
        "(see `nexus brief --help`)"
    )
    assert "unrecognized arguments" not in line
    # an argument the command does not take: its own help, not the program's
    line = _one_error(env.run("log", "tail", "extra", check=False))
    assert line == "nexus: error: nexus log tail: unexpected argument(s): extra (see `nexus log tail --help`)"


def test_a_refused_setting_blames_where_its_value_came_from(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEXUS_BRIEF_MAX_CHARS", "-5")  # not a count at all: refused where it is read
    line = _one_error(env.run("brief", "--agent", "ella", check=False))
    assert "NEXUS_BRIEF_MAX_CHARS" in line and "--max-chars" not in line
    monkeypatch.setenv("NEXUS_BRIEF_MAX_CHARS", "50")  # a count, below what a brief needs
    line = _one_error(env.run("brief", "--agent", "ella", check=False))
    assert line == "nexus: error: NEXUS_BRIEF_MAX_CHARS=50 is too small; the least is 200"
    line = _one_error(env.run("brief", "--agent", "ella", "--max-chars", "100", check=False))
    assert line == "nexus: error: --max-chars 100 is too small; the least is 200"
    monkeypatch.delenv("NEXUS_BRIEF_MAX_CHARS")
    note = env.vault.root / "nexus.md"
    note.write_text(note.read_text(encoding="utf-8").replace("brief_max_chars: 10000", "brief_max_chars: 50"))
    line = _one_error(env.run("brief", "--agent", "ella", check=False))
    assert line == "nexus: error: nexus.md's brief_max_chars: 50 is too small; the least is 200"


def test_an_unknown_nexus_variable_is_warned_about_in_one_line(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEXUS_BREIF_MAX_CHARS", "500")
    r = env.run("log", "tail")
    assert r.stderr == (
        "nexus: warning: NEXUS_BREIF_MAX_CHARS is not a nexus variable, ignored "
        "(did you mean NEXUS_BRIEF_MAX_CHARS?) (docs/settings.md lists them)\n"
    )
    monkeypatch.delenv("NEXUS_BREIF_MAX_CHARS")
    assert env.run("log", "tail").stderr == ""


def test_every_nexus_variable_is_in_the_docs_table() -> None:
    """docs/settings.md holds the table :func:`variables.table` writes, and every ``NEXUS_*`` name the
    code reads is in it."""
    doc = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert variables.table() in doc, "docs/settings.md's table is stale: paste `python -m nexus.variables`"
    read = set()
    for path in (ROOT / "nexus").rglob("*.py"):
        read |= set(re.findall(r"\bNEXUS_[A-Z][A-Z_]*[A-Z]\b", path.read_text(encoding="utf-8")))
    read -= {"NEXUS_PATHS"} | variables.TESTS  # a constant in the Hermes plugin; the tests' own
    assert read <= set(variables.names()), sorted(read - set(variables.names()))


def test_options_after_a_vault_given_before_the_command_are_the_commands(env: Env) -> None:
    assert env.run("--vault", str(env.vault.root), "log", "tail", "-n", "1", "--json").returncode == 0
    line = _one_error(env.run("--vault", str(env.vault.root), "log", "tail", "--nn", "1", check=False))
    assert "nexus log tail: unknown option --nn" in line


def test_adding_an_identity_close_to_one_that_exists_says_so(env: Env) -> None:
    r = env.run("agent", "add", "ela")
    assert r.stderr == "nexus: note: 'ela' is close to the identity 'ella' (a typo? `nexus agent list`)\n"
    assert env.run("agent", "add", "nova").stderr == ""


def test_a_mistyped_runtime_is_offered_the_runtime(env: Env) -> None:
    line = _one_error(env.run("setup", "claud-code", "--agent", "ella", "--dry-run", check=False))
    assert line == "nexus: error: unknown runtime 'claud-code': did you mean 'claude-code'?"
