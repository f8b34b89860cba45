"""Settings are checked where they are read: a bad value is one line naming the setting and where it
came from, exit 2, nothing changed; every limit comes from the settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Env, Run

from nexus import settings
from nexus.errors import InputError


def _set_in_nexus_md(env: Env, name: str, value: str) -> None:
    marker = env.vault.root / "nexus.md"
    text = marker.read_text(encoding="utf-8")
    lines = [line for line in text.split("\n") if not line.startswith(f"{name}:")]
    lines.insert(1, f"{name}: {value}")  # (the first line is the frontmatter's ---)
    marker.write_text("\n".join(lines), encoding="utf-8")


def _refused(run: Run, *words: str) -> None:
    out = run.stderr
    assert run.returncode == 2, out
    assert "Traceback" not in out and len(out.strip().splitlines()) == 1, out
    for word in words:
        assert word in out, out


def test_a_bad_number_in_the_environment_is_one_line_and_exit_2(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEXUS_BRIEF_MAX_CHARS", "lots")
    run = env.run("brief", "--agent", "ella", check=False)
    _refused(run, "brief_max_chars", "NEXUS_BRIEF_MAX_CHARS", "'lots'")


@pytest.mark.parametrize("value", ["soon", "1.5", "-3", "true"])
def test_a_bad_race_window_in_nexus_md_is_one_line_and_exit_2(env: Env, value: str) -> None:
    """'soon' used to raise a traceback; 1.5 was cut to 1 without a word."""
    env.append("lyra", "before the bad setting")
    _set_in_nexus_md(env, "race_window_seconds", value)
    _refused(env.run("brief", "--agent", "ella", check=False), "race_window_seconds", "nexus.md")
    # nothing changed: ella's cursor did not move, the entry is still unread
    _set_in_nexus_md(env, "race_window_seconds", "60")
    assert "before the bad setting" in env.run("log", "read", "--agent", "ella").stdout


def test_values_of_the_right_kind_are_taken_from_every_source() -> None:
    found = settings.resolve(
        {"brief_max_chars": 500},
        {"NEXUS_RACE_WINDOW": " 90 ", "NEXUS_STALE_MINUTES": "2.5", "NEXUS_ACK_TYPES": "decision, question"},
        {"memory_chars": 3000, "rescan_seconds": 1, "search_languages": ["en", "de"], "user_chars": 2.0},
    )
    assert found.brief_max_chars == 500 and found.race_window_seconds == 90
    assert found.stale_checkpoint_minutes == 2.5 and found.ack_types == ("decision", "question")
    assert found.memory_chars == 3000 and found.rescan_seconds == 1.0 and found.user_chars == 2
    assert found.search_languages == ("en", "de")


@pytest.mark.parametrize(
    ("name", "value", "where"),
    [
        ("race_window_seconds", 1.5, "nexus.md"),
        ("memory_chars", "2k", "nexus.md"),
        ("stale_checkpoint_minutes", "nan", "nexus.md"),
        ("rescan_seconds", -1, "nexus.md"),
        ("ack_types", {"a": 1}, "nexus.md"),
        ("mcp_tools", 3, "nexus.md"),
    ],
)
def test_each_refusal_names_the_setting_the_value_and_the_source(
    name: str, value: object, where: str
) -> None:
    with pytest.raises(InputError) as err:
        settings.resolve({}, {}, {name: value})
    assert name in str(err.value) and where in str(err.value) and repr(value) in str(err.value)


def test_the_briefs_memory_section_obeys_the_memory_limit_setting(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The brief's memory section used the built-in 2,200 whatever NEXUS_MEMORY_CHARS said."""
    monkeypatch.setenv("NEXUS_MEMORY_CHARS", "5000")
    env.run("memory", "add", "--agent", "ella", "--target", "memory", "--content", "x" * 3000)
    brief = env.run("brief", "--agent", "ella", "--peek").stdout
    assert "3,000/5,000 chars" in brief and "OVER BUDGET" not in brief, brief


def test_the_git_merge_driver_takes_the_memory_limit_from_the_environment_as_every_command_does(
    env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """git runs the driver with the person's environment: NEXUS_MEMORY_CHARS is the limit there too
    (the driver read nexus.md and the default only, so a union over the person's limit went unlisted)."""
    sides = {}
    for name, entry in (("base", ""), ("ours", "x" * 300), ("theirs", "y" * 300)):
        sides[name] = tmp_path / name
        sides[name].write_text(entry, encoding="utf-8")
    argv = [str(sides["base"]), str(sides["ours"]), str(sides["theirs"]), "7", "agents/ella/MEMORY.md"]
    assert env.run("git", "merge-driver", *argv).returncode == 0  # 601 characters: under 2,200
    monkeypatch.setenv("NEXUS_MEMORY_CHARS", "500")
    sides["ours"].write_text("x" * 300, encoding="utf-8")
    run = env.run("git", "merge-driver", *argv, check=False)
    assert "over the limit of 500" in run.stderr, run.stderr
