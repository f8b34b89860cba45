"""Conflict markers never pass: a plain `git merge` (a clone where `nexus git setup` never ran, so no
merge driver) leaves markers in a segment, memory, a checkpoint and the state; `nexus verify` exits 1
naming them and the repair; the watcher signs none of it as a person's text; `nexus git resolve`
merges each file by its kind's rule and every entry of both sides is there once."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

from conftest import Env

from nexus.storage import markers


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        HOME=str(cwd.parent),
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def _ids(root: Path) -> list[str]:
    out: list[str] = []
    for path in sorted((root / "log").glob("*.md")):
        out += re.findall(r"^%% nexus:begin ([0-9A-Z]{26}) %%$", path.read_text(encoding="utf-8"), re.M)
    return out


def _merged_with_markers(env: Env) -> tuple[set[str], set[str]]:
    root = env.vault.root
    (root / ".gitignore").write_text(".nexus/\n", encoding="utf-8")
    env.run("log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", "base")
    env.run("memory", "add", "--agent", "ella", "--content", "base fact")
    env.run("checkpoint", "save", "--agent", "ella", "--task", "base", "--step", "s", "--next", "n")
    env.run("state", "set", "--agent", "ella", "--expect", "0", "--file", "-", input="# State\n\nbase\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "other")
    for n in range(3):
        env.run(
            "log", "append", "--agent", "lyra", "--channel", "c", "--type", "note", "--summary", f"lyra {n}"
        )
    env.run("memory", "add", "--agent", "ella", "--content", "fact from the other branch")
    env.run("checkpoint", "save", "--agent", "ella", "--task", "other", "--step", "s2", "--next", "n2")
    env.run("state", "set", "--agent", "lyra", "--expect", "1", "--file", "-", input="# State\n\nother\n")
    theirs = set(_ids(root))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "other")
    git(root, "checkout", "-q", "main")
    for n in range(3):
        env.run(
            "log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", f"ella {n}"
        )
    env.run("memory", "add", "--agent", "ella", "--content", "fact from main")
    env.run("checkpoint", "save", "--agent", "ella", "--task", "main", "--step", "s3", "--next", "n3")
    env.run("state", "set", "--agent", "ella", "--expect", "1", "--file", "-", input="# State\n\nmain\n")
    ours = set(_ids(root))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "main")
    merged = git(root, "merge", "other", check=False)
    assert merged.returncode != 0 and "CONFLICT" in merged.stdout
    git(root, "add", "-A")  # a careless person commits the markers
    git(root, "commit", "-q", "-m", "merge")
    return ours, theirs


def test_a_plain_git_merge_is_named_by_verify_and_repaired_by_one_command(env: Env) -> None:
    root = env.vault.root
    ours, theirs = _merged_with_markers(env)
    marked = dict(markers.marked_files(root))
    assert any(rel.startswith("log/") for rel in marked) and "agents/ella/MEMORY.md" in marked
    assert "agents/ella/checkpoint.md" in marked and "state/project.md" in marked

    check = env.run("verify", "--json", check=False)
    assert check.returncode == 1
    found = [p for p in check.json()["problems"] if p["kind"] == "conflict-markers"]
    assert {p["file"] for p in found} == set(marked)
    assert all("nexus git resolve" in p["message"] for p in found)
    text = env.run("verify", check=False)
    assert (
        "conflict-markers" in text.stdout + text.stderr and "nexus git resolve" in text.stdout + text.stderr
    )

    # the watcher, on the merged segment, signs nothing as the person's text
    for path in root.rglob("*.md"):
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    env.run("watch", "--once", check=False)
    people = [e for e in env.run("log", "tail", "-n", "500", "--json").json() if e["agent"] == "sam"]
    assert people == []

    assert not (root / "state/history/v0003.md").exists()  # no marker lines recorded as a version

    # writes refuse a file holding markers (nothing changed); a snapshot shows the store apart
    before = (root / "agents/ella/MEMORY.md").read_bytes()
    refused = env.run("memory", "add", "--agent", "ella", "--content", "new fact", check=False)
    assert refused.returncode == 1 and "nexus git resolve" in refused.stderr
    assert (root / "agents/ella/MEMORY.md").read_bytes() == before
    snap = env.run("memory", "snapshot", "--agent", "ella", "--json").json()
    assert "<<<<<<<" not in snap["text"] and any("conflict markers" in b for b in snap["blocked"])
    stale = env.run(
        "state", "set", "--agent", "ella", "--expect", "2", "--file", "-", input="x\n", check=False
    )
    assert stale.returncode == 1 and "nexus git resolve" in stale.stderr

    fixed = env.run("git", "resolve", "--json").json()
    assert {r["file"] for r in fixed} == set(marked)
    assert markers.marked_files(root) == []
    ids = _ids(root)
    assert sorted(ids) == sorted(ours | theirs) and len(ids) == len(set(ids))  # every entry, once
    memory = (root / "agents/ella/MEMORY.md").read_text(encoding="utf-8")
    assert "fact from main" in memory and "fact from the other branch" in memory and "<<<<<<<" not in memory
    state = env.run("state", "show", "--json").json()
    assert state["version"] == 2 and "<<<<<<<" not in state["content"]
    assert env.run("verify", check=False).returncode == 0
    assert env.run("git", "resolve").stdout.strip() == "no conflict markers in the vault"


def test_a_lone_heading_underline_is_not_a_marker() -> None:
    assert markers.regions(b"Title\n=======\ntext\n") == []
    assert markers.regions(b"<<<<<<< HEAD\nx\n") == []  # no whole region
    data = b"a\n<<<<<<< HEAD\nx\n||||||| base\nz\n=======\ny\n>>>>>>> b\nc\n"
    assert markers.sides(data) == (b"a\nz\nc\n", b"a\nx\nc\n", b"a\ny\nc\n")
