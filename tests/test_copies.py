"""File-sync conflict copies (Syncthing, Dropbox, Obsidian Sync): found, imported by id, archived."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import Env

from nexus.audit.verify_state import verify
from nexus.ledger import log
from nexus.sync import copies


@pytest.mark.parametrize(
    "name",
    [
        "2026-12.sync-conflict-20261201-064500-ABCDEFG.md",
        "2026-12 (conflicted copy 2026-12-01).md",
        "2026-12 (ella's conflicted copy 2026-12-01).md",
        "2026-12 (Conflicted copy MacBook 202612011234).md",
        "2026-12 (1).md",
    ],
)
def test_conflict_copy_names(name: str) -> None:
    assert copies.is_copy(name)


@pytest.mark.parametrize(
    "name", ["2026-12.md", "2026-12-notes.md", "notes (1).md", "2026-12.sync-conflict.md"]
)
def test_not_conflict_copies(name: str) -> None:
    assert not copies.is_copy(name)


def _syncthing_split(env: Env) -> tuple[str, str, str]:
    """Both machines appended at once; Syncthing kept ella's version and wrote lyra's beside it.
    Returns (lyra's id, ella's id, the copy's name)."""
    env.append("ella", "before")
    env.append("lyra", "before too")
    ((name, path),) = log.segment_files(env.vault)
    before = path.read_bytes()
    theirs = env.append("lyra", "lyra's acknowledged entry, on the other machine").located.entry.id
    other = path.read_bytes()
    path.write_bytes(before)  # Syncthing puts this machine's version in place...
    (env.vault.state / "tail.json").unlink()  # (this machine never saw lyra's entry)
    log._WRITERS.clear()
    mine = env.append("ella", "ella's entry on this machine").located.entry.id
    copy = f"{name}.sync-conflict-20261201-064500-ABCDEFG.md"
    tmp = env.vault.root / ".stversions-tmp"
    tmp.write_bytes(other)  # ... and renames the other in beside it
    os.replace(tmp, path.parent / copy)
    return theirs, mine, copy


def test_watcher_imports_a_syncthing_conflict_copy(env: Env) -> None:
    theirs, mine, copy = _syncthing_split(env)
    report = verify(env.vault)
    assert not report.ok and [p.kind for p in report.errors] == ["conflict-copy"]
    assert report.errors[0].entry_id == theirs
    proc = subprocess.Popen(
        [sys.executable, "-W", "error", "-m", "nexus", "watch", "--json", "--rescan", "0.5"],
        env=env.environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    events = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        for line in proc.stdout:
            events.append(json.loads(line))
            if events[-1].get("event") == "imported" or time.monotonic() > deadline:
                break
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=30)
    imported = [e for e in events if e.get("event") == "imported"]
    assert imported and imported[0]["imported"] == [theirs], (events, err)
    ids = [loc.entry.id for loc in log.iter_entries(env.vault)]
    assert ids.count(theirs) == 1 and ids.count(mine) == 1 and ids == sorted(ids)
    assert not (env.vault.log_dir / copy).exists()
    assert (env.vault.root / copies.ARCHIVE / copy).exists()
    report = verify(env.vault)
    assert report.ok, [str(p) for p in report.problems]
    read = [loc.entry.id for loc in log.unread(env.vault, "ella")]
    assert theirs in read  # a cursor past it still delivers the imported entry


def test_import_copies_command_and_a_copy_already_imported(env: Env) -> None:
    theirs, _mine, copy = _syncthing_split(env)
    log.unread(env.vault, "ella")  # ella has read everything there is: the import is older than that
    done = env.run("log", "import-copies", "--json").json()
    assert done[0]["imported"] == [theirs] and done[0]["archived"].endswith(copy)
    assert [loc.entry.id for loc in log.unread(env.vault, "ella")] == [theirs]
    assert [loc.entry.id for loc in log.unread(env.vault, "ella")] == []  # once
    # A copy whose entries are all in the log: only a warning, and archived on import.
    (env.vault.log_dir / copy.replace("ABCDEFG", "XYZ1234")).write_bytes(
        (env.vault.root / copies.ARCHIVE / copy).read_bytes()
    )
    report = verify(env.vault)
    assert report.ok and "copy-left" in {p.kind for p in report.problems}
    assert env.run("log", "import-copies", "--json").json()[0]["imported"] == []
    assert copies.find(env.vault) == []


def test_a_copys_entries_signed_before_a_key_rotation_are_imported(env: Env) -> None:
    """lyra's entry in the conflict copy was signed with the key lyra had then; lyra rotated since
    (here). The old key stays pinned, so the entry is lyra's and is imported, not dropped."""
    theirs, _mine, _copy = _syncthing_split(env)
    env.run("agent", "rotate", "lyra")
    done = env.run("log", "import-copies", "--json").json()
    assert done[0]["imported"] == [theirs], done
    assert theirs in {loc.entry.id for loc in log.iter_entries(env.vault)}
    # lyra wrote on two machines at once (the other's entry, this one's rotation), which verify names
    # as a fork for a person to resolve; the imported entry itself verifies with the old key, pinned
    problems = env.run("verify", "--json", check=False).json()["problems"]
    assert [p["kind"] for p in problems] == ["fork"], problems
