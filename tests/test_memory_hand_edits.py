"""A person's edit of MEMORY.md / USER.md wins: deleted, changed, reordered or added by hand (with or
without a `§` line), it is taken as it is by the next write, and no read changes a byte of it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import Env

from nexus.errors import ConflictError
from nexus.memory import bounded as memory


def _memory(env: Env) -> Path:
    return env.vault.root / "agents/ella/MEMORY.md"


def _add(env: Env, text: str, target: str = "memory") -> None:
    env.run("memory", "add", "--agent", "ella", "--target", target, "--content", text)


def _snapshot_entries(env: Env, target: str = "memory") -> list[str]:
    path = env.vault.root / ("USER.md" if target == "user" else "agents/ella/MEMORY.md")
    before = path.read_bytes()
    snap = env.run("memory", "snapshot", "--agent", "ella", "--json").json()
    assert path.read_bytes() == before  # a read never writes
    return list(snap[target]["entries"])


def test_the_issue_sequence_a_deleted_entry_stays_deleted(env: Env) -> None:
    _add(env, "Keep this fact.")
    _add(env, "Wrong fact, delete me.")
    _memory(env).write_text("Keep this fact.", encoding="utf-8")  # the person deletes the wrong fact
    assert _snapshot_entries(env) == ["Keep this fact."]
    assert _memory(env).read_bytes() == b"Keep this fact."
    _add(env, "A later fact.")
    assert memory.read(_memory(env)) == ["Keep this fact.", "A later fact."]


def test_the_last_entry_edited_by_hand_is_one_entry(env: Env) -> None:
    _add(env, "First fact.")
    _add(env, "Deploys run on Fridays.")
    _memory(env).write_text("First fact.\n§\nDeploys run on Tuesdays.\n", encoding="utf-8")
    assert _snapshot_entries(env) == ["First fact.", "Deploys run on Tuesdays."]
    r = env.run(
        "memory",
        "replace",
        "--agent",
        "ella",
        "--old-text",
        "Deploys",
        "--content",
        "Deploys run on Mondays.",
    )
    assert r.returncode == 0
    assert memory.read(_memory(env)) == ["First fact.", "Deploys run on Mondays."]


@pytest.mark.parametrize(
    ("edited", "expected"),
    [
        ("B fact\n§\nA fact\n", ["B fact", "A fact"]),  # reordered
        ("A fact\n§\nB fact\n§\nmy own line\n", ["A fact", "B fact", "my own line"]),  # added with §
        ("A fact\n§\nB fact\nmy own line\n", ["A fact", "B fact\nmy own line"]),  # added without §
        ("A fact, changed\n§\nB fact\n", ["A fact, changed", "B fact"]),  # changed
        ("", []),  # all deleted
    ],
)
def test_every_kind_of_hand_edit_is_taken_as_it_is(env: Env, edited: str, expected: list[str]) -> None:
    for target in ("memory", "user"):
        _add(env, "A fact", target)
        _add(env, "B fact", target)
        path = env.vault.root / ("USER.md" if target == "user" else "agents/ella/MEMORY.md")
        path.write_text(edited, encoding="utf-8")
        assert _snapshot_entries(env, target) == expected
        env.run("brief", "--agent", "ella")
        assert path.read_text(encoding="utf-8") == edited  # the brief wrote nothing either
        _add(env, "C fact", target)
        assert memory.read(path) == [*expected, "C fact"]
        path.unlink()


def test_a_repair_on_write_is_said_in_one_line(env: Env) -> None:
    _add(env, "A fact")
    _memory(env).write_text("A fact\n\n§\n\nB fact\n", encoding="utf-8")  # spacing nexus would not write
    r = env.run("memory", "add", "--agent", "ella", "--content", "C fact")
    said = [line for line in (r.stdout + r.stderr).splitlines() if "archive/backups/" in line]
    assert len(said) >= 1 and all("edited by hand" in s or "kept" in s for s in said)
    assert memory.read(_memory(env)) == ["A fact", "B fact", "C fact"]
    backups = list((env.vault.root / "archive/backups").iterdir())
    assert [b.read_text(encoding="utf-8") for b in backups] == ["A fact\n\n§\n\nB fact\n"]


def test_the_stale_save_guard_keeps_a_person_s_save_made_during_a_write(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person's save landing between the agent's read and its replace is never overwritten."""
    memory.add(env.vault, "memory", "ella", "A fact", limit=2200)
    real = memory.read_raw
    calls = [0]

    def read_then_person_saves(st: memory.Store) -> str:
        raw = real(st)
        calls[0] += 1
        if calls[0] == 1:  # the write's first read; the person saves right after it
            st.path.write_text("the person's text\n", encoding="utf-8")
        return raw

    monkeypatch.setattr(memory, "read_raw", read_then_person_saves)
    with pytest.raises(ConflictError, match="saved by someone else"):
        memory.add(env.vault, "memory", "ella", "B fact", limit=2200)
    monkeypatch.undo()
    assert _memory(env).read_text(encoding="utf-8") == "the person's text\n"
    memory.add(env.vault, "memory", "ella", "B fact", limit=2200)  # the retry starts from their text
    assert memory.read(_memory(env)) == ["the person's text", "B fact"]


def test_concurrent_agent_writes_all_land(env: Env) -> None:
    """The guard never refuses nexus's own writes to each other: they are serialised by the lock."""
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            memory.add(env.vault, "memory", "ella", f"fact {n}", limit=2200)
        except BaseException as err:  # pragma: no cover - the assertion below names it
            errors.append(err)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and sorted(memory.read(_memory(env))) == [f"fact {n}" for n in range(6)]


def test_restoring_several_ids_says_what_was_restored_and_what_was_not(env: Env) -> None:
    env.run("memory", "facts", "add", "--name", "f1", "--description", "d", "--type", "project")
    env.run("memory", "facts", "retire", "f1")
    r = env.run("memory", "restore", "f1", "no-such-fact", check=False)
    assert r.returncode == 1
    assert "restored f1" in r.stdout and "not restored: no-such-fact" in r.stderr
    assert (env.vault.root / "memory/f1.md").is_file()
