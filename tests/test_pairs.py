"""Writes that belong together land together: a note and its log entry (checkpoint save, decide, state
set, memory consolidate, a fact's review). A write (EIO, ENOSPC) or an fsync fails at its 1st, 2nd, …
call in a `nexus` process of its own (forked by tests/faulty.py); after the failure the pair is whole
or absent, or the retry completes it; after the retry both are there, each once, and `nexus verify`
passes."""

from __future__ import annotations

import subprocess

import faulty
from conftest import Env


def _faulty(env: Env, fault: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return faulty.run(fault, list(args), env=env.environ, cwd=env.vault.root, input=input)


def _entries(env: Env, type: str) -> list[dict[str, str]]:
    return [e for e in env.run("log", "tail", "-n", "200", "--json").json() if e["type"] == type]


def test_checkpoint_save_and_its_entry(env: Env) -> None:
    env.run("checkpoint", "save", "--agent", "ella", "--task", "OLD", "--step", "s", "--next", "n")
    note = env.vault.root / "agents/ella/checkpoint.md"
    round = [0]

    def args() -> tuple[str, ...]:
        return (
            "checkpoint",
            "save",
            "--agent",
            "ella",
            "--task",
            f"NEW {round[0]}",
            "--step",
            "s",
            "--next",
            "n",
        )

    def pair() -> tuple[int, int]:
        task = f"NEW {round[0]}"
        return (
            int(f"task:  {task}" in env.run("checkpoint", "show", "--agent", "ella").stdout)
            if note.exists()
            else 0,
            sum(1 for e in _entries(env, "checkpoint") if f": {task} —" in e["summary"]),
        )

    tried = 0
    for fault in ("write:{n}:persistent:ENOSPC", "fsync:{n}:once:EIO", "replace:{n}:once:EIO"):
        for n in range(1, 40):
            a = args()
            failed = _faulty(env, fault.format(n=n), *a)
            assert "Traceback" not in failed.stderr, failed.stderr
            if failed.returncode == 0:
                assert pair() == (1, 1), (fault, n)
                round[0] += 1
                break
            tried += 1
            got = pair()
            assert got in ((0, 0), (0, 1), (1, 1)), (fault, n, got)  # never the note without its entry
            env.run(*a)
            assert pair() == (1, 1), (fault, n, "after the retry")
            round[0] += 1
        else:
            raise AssertionError("checkpoint save never ran out of writes to fail")
    assert tried >= 6
    assert env.run("verify", check=False).returncode == 0


def test_state_set_and_its_entry(env: Env) -> None:
    version = [0]

    def pair() -> tuple[int, int]:
        v = version[0] + 1
        shown = env.run("state", "show", "--json").json()
        note = int(shown["version"] == v and shown["content"] == f"state {v}\n" and not shown["hand_edit"])
        return note, sum(1 for e in _entries(env, "state") if e["summary"].startswith(f"project state v{v}:"))

    tried = 0
    for fault in ("write:{n}:persistent:ENOSPC", "fsync:{n}:once:EIO", "replace:{n}:once:EIO"):
        for n in range(1, 40):
            v = version[0] + 1
            a = ("state", "set", "--agent", "ella", "--expect", str(v - 1), "--file", "-")
            failed = _faulty(env, fault.format(n=n), *a, input=f"state {v}\n")
            assert "Traceback" not in failed.stderr, failed.stderr
            if failed.returncode == 0:
                assert pair() == (1, 1), (fault, n)
                version[0] += 1
                break
            tried += 1
            assert pair() in ((0, 0), (0, 1), (1, 1)), (fault, n, pair())
            env.run(*a, input=f"state {v}\n")
            assert pair() == (1, 1), (fault, n, "after the retry")
            version[0] += 1
        else:
            raise AssertionError("state set never ran out of writes to fail")
    assert tried >= 6
    assert env.run("verify", check=False).returncode == 0


def test_decide_and_its_entry(env: Env) -> None:
    round = [0]

    def pair() -> tuple[int, int]:
        title = f"Choice {round[0]}"
        notes = [d for d in env.run("decisions", "--all", "--json").json() if d["title"] == title]
        return len(notes), sum(1 for e in _entries(env, "decision") if e["summary"].endswith(f": {title}"))

    tried = 0
    for fault in ("write:{n}:persistent:ENOSPC", "fsync:{n}:once:EIO", "replace:{n}:once:EIO"):
        for n in range(1, 40):
            a = (
                "decide",
                "--agent",
                "ella",
                "--title",
                f"Choice {round[0]}",
                "--decision",
                "x",
                "--rationale",
                "y",
            )
            failed = _faulty(env, fault.format(n=n), *a)
            assert "Traceback" not in failed.stderr, failed.stderr
            if failed.returncode == 0:
                assert pair() == (1, 1), (fault, n)
                round[0] += 1
                break
            tried += 1
            assert pair() in ((0, 0), (0, 1), (1, 1)), (fault, n, pair())
            env.run(*a)
            assert pair() == (1, 1), (fault, n, "after the retry")
            round[0] += 1
        else:
            raise AssertionError("decide never ran out of writes to fail")
    assert tried >= 6
    assert env.run("verify", check=False).returncode == 0


def test_memory_consolidate_archives_and_rewrites_together(env: Env) -> None:
    store = env.vault.root / "agents/ella/MEMORY.md"
    archive = env.vault.root / "archive/memory"
    text = env.vault.root.parent / "consolidated.md"
    text.write_text("A fact\n", encoding="utf-8")
    a = ("memory", "consolidate", "--agent", "ella", "--file", str(text), "--archive", "B fact")

    def state() -> tuple[int, int]:
        archived = [p for p in archive.glob("*.md")] if archive.is_dir() else []
        return int(store.read_text(encoding="utf-8") == "A fact\n"), len(archived)

    tried = 0
    for fault in ("write:{n}:persistent:ENOSPC", "fsync:{n}:once:EIO", "replace:{n}:once:EIO"):
        for n in range(1, 40):
            store.parent.mkdir(parents=True, exist_ok=True)
            store.write_text("A fact\n§\nB fact\n", encoding="utf-8")
            for p in archive.glob("*.md") if archive.is_dir() else []:
                p.unlink()
            failed = _faulty(env, fault.format(n=n), *a)
            assert "Traceback" not in failed.stderr, failed.stderr
            if failed.returncode == 0:
                assert state() == (1, 1), (fault, n)
                break
            tried += 1
            assert state() in ((0, 0), (1, 1)), (fault, n, state())  # both or neither
            if state() == (0, 0):
                env.run(*a)
                assert state() == (1, 1), (fault, n, "after the retry")
        else:
            raise AssertionError("consolidate never ran out of writes to fail")
    assert tried >= 3


def test_the_review_of_a_fact_promotes_and_records_together(env: Env) -> None:
    tried = 0
    for fault in ("write:{n}:persistent:ENOSPC", "fsync:{n}:once:EIO", "replace:{n}:once:EIO"):
        for n in range(1, 40):
            got = env.run(
                "retain", "--agent", "ella", "--type", "fact", "--content", f"fact {fault} {n}", "--json"
            )
            fid = got.json()["id"]
            a = ("review", "--approve", fid, "--agent", "sam")

            def state(fid: str = fid, n: int = n, fault: str = fault) -> tuple[int, int]:
                facts = env.run("memory", "facts", "list", "--json").json()
                promoted = sum(1 for f in facts if f"fact {fault} {n}" in f["description"])
                pending = {f["id"] for f in env.run("review", "--json").json()}
                return promoted, int(fid not in pending)

            failed = _faulty(env, fault.format(n=n), *a)
            assert "Traceback" not in failed.stderr, failed.stderr
            if failed.returncode == 0:
                assert state() == (1, 1), (fault, n)
                break
            tried += 1
            assert state() in ((0, 0), (1, 0), (1, 1)), (fault, n, state())  # never reviewed, not promoted
            if state() != (1, 1):
                env.run(*a)
            assert state() == (1, 1), (fault, n, "after the retry")
        else:
            raise AssertionError("review never ran out of writes to fail")
    assert tried >= 3
