"""Project state: optimistic concurrency (stale edits refused with a diff), history, restore, and a
person's edit in Obsidian recorded as a human version."""

from __future__ import annotations

from pathlib import Path

from conftest import Env


def _write(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_stale_set_is_refused_and_a_fresh_one_applied(env: Env, tmp_path: Path) -> None:
    assert env.run("state", "show", "--json").json()["version"] == 0
    env.run(
        "state",
        "set",
        "--agent",
        "ella",
        "--expect",
        "0",
        "--file",
        _write(tmp_path, "a.md", "# State\n\n- parser: started\n"),
    )
    # lyra planned her edit on version 0: refused, with the current version and a diff
    note = env.vault.root / "state" / "project.md"
    before = note.read_bytes()
    stale = env.run(
        "state",
        "set",
        "--agent",
        "lyra",
        "--expect",
        "0",
        "--file",
        _write(tmp_path, "b.md", "# State\n\n- docs: drafted\n"),
        check=False,
    )
    assert stale.returncode == 3
    assert "at version 1, not 0" in stale.stderr
    assert "+- parser: started" in stale.stderr  # the diff of what changed since her version
    assert note.read_bytes() == before  # nothing changed
    assert [v["version"] for v in env.run("state", "history", "--json").json()] == [1]
    fresh = env.run(
        "state",
        "set",
        "--agent",
        "lyra",
        "--expect",
        "1",
        "--json",
        "--file",
        _write(tmp_path, "c.md", "# State\n\n- parser: started\n- docs: drafted\n"),
    )
    assert fresh.json()["version"] == 2
    shown = env.run("state", "show", "--json").json()
    assert shown["version"] == 2 and "- docs: drafted" in shown["content"]
    logged = [(e["agent"], e["type"]) for e in env.run("log", "tail", "-n", "10", "--json").json()]
    assert logged == [("ella", "state"), ("lyra", "state-conflict"), ("lyra", "state")]
    assert env.run("verify").returncode == 0


def test_history_diff_and_restore(env: Env, tmp_path: Path) -> None:
    for i, text in enumerate(["one\n", "two\n", "three\n"]):
        env.run(
            "state", "set", "--agent", "ella", "--expect", str(i), "--file", _write(tmp_path, f"{i}.md", text)
        )
    diff = env.run("state", "diff", "1", "3").stdout
    assert "-one" in diff and "+three" in diff
    env.run("state", "restore", "--agent", "lyra", "--version", "1", "--expect", "3")
    shown = env.run("state", "show", "--json").json()
    assert shown == {"version": 4, "content": "one\n", "hand_edit": False, "conflicts": []}
    history = env.run("state", "history", "--json").json()
    assert history[-1]["restored_from"] == 1 and history[-1]["author"] == "lyra"
    for v in range(1, 5):  # every version is kept whole
        assert (env.vault.root / "state" / "history" / f"v{v:04d}.md").is_file()
    missing = env.run("state", "restore", "--agent", "lyra", "--version", "9", "--expect", "4", check=False)
    assert missing.returncode == 1 and "no version 9" in missing.stderr


def test_a_persons_edit_in_obsidian_becomes_a_human_version(env: Env, tmp_path: Path) -> None:
    env.run(
        "state", "set", "--agent", "ella", "--expect", "0", "--file", _write(tmp_path, "a.md", "# S\n\nA\n")
    )
    note = env.vault.root / "state" / "project.md"
    note.write_text(note.read_text(encoding="utf-8") + "B from sam\n", encoding="utf-8")
    # an agent that planned on version 1 is now stale: the person's edit is version 2
    stale = env.run(
        "state",
        "set",
        "--agent",
        "lyra",
        "--expect",
        "1",
        "--file",
        _write(tmp_path, "b.md", "# S\n\nC\n"),
        check=False,
    )
    assert stale.returncode == 3 and "+B from sam" in stale.stderr
    history = env.run("state", "history", "--json").json()
    assert (history[-1]["version"], history[-1]["author"], history[-1]["kind"]) == (2, "sam", "human")
    human = [e for e in env.run("log", "tail", "-n", "5", "--json").json() if e["agent"] == "sam"]
    assert len(human) == 1 and "by hand" in human[0]["summary"]
    assert env.run("verify").returncode == 0


def test_the_watcher_records_a_persons_edit(env: Env, tmp_path: Path) -> None:
    env.run("state", "set", "--agent", "ella", "--expect", "0", "--file", _write(tmp_path, "a.md", "A\n"))
    note = env.vault.root / "state" / "project.md"
    note.write_text(note.read_text(encoding="utf-8") + "typed in Obsidian\n", encoding="utf-8")
    env.run("watch", "--once")
    history = env.run("state", "history", "--json").json()
    assert [(v["version"], v["kind"]) for v in history] == [(1, "agent"), (2, "human")]


def test_bad_input_changes_nothing(env: Env, tmp_path: Path) -> None:
    ok = _write(tmp_path, "ok.md", "fine\n")
    for args, needle in (
        (("--agent", "nobody", "--expect", "0", "--file", ok), "unknown agent"),
        (("--agent", "ella", "--expect", "0", "--file", _write(tmp_path, "big.md", "x" * 300_000)), "limit"),
        (("--agent", "ella", "--expect", "0", "--file", ok, "--summary", "two\nlines"), "newline"),
    ):
        result = env.run("state", "set", *args, check=False)
        assert result.returncode != 0 and needle in result.stderr, result.stderr
    assert not (env.vault.root / "state" / "project.md").exists()
    assert env.run("log", "tail", "--json").json() == []


def test_a_refused_stale_edit_is_not_a_race(env: Env, tmp_path: Path) -> None:
    """Issue 13, item 7: lyra's refused `state set` logged a state-conflict entry that then counted as
    a race with ella's change; both were told to reconcile a conflict that never happened."""
    env.run(
        "state",
        "set",
        "--agent",
        "ella",
        "--expect",
        "0",
        "--file",
        _write(tmp_path, "a.md", "# State\n\n- parser: started\n"),
    )
    stale = env.run(
        "state",
        "set",
        "--agent",
        "lyra",
        "--expect",
        "0",
        "--file",
        _write(tmp_path, "b.md", "# State\n\n- docs: drafted\n"),
        check=False,
    )
    assert stale.returncode == 3
    tail = env.run("log", "tail", "-n", "2", "--json").json()
    assert [e["type"] for e in tail] == ["state", "state-conflict"]
    assert env.run("races", "--json").json() == []
    for agent in ("ella", "lyra"):
        assert "RACE" not in env.run("brief", "--agent", agent, "--peek").stdout
    # an ordinary unseen entry by lyra at the same moment still races ella's change
    env.run("log", "append", "--agent", "lyra", "--channel", "state", "--type", "note", "--summary", "me too")
    assert len(env.run("races", "--json").json()) == 1
