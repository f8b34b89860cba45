"""Identities: key pairs outside the vault, identity notes inside, names that cannot be abused."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conftest import Env

from nexus.errors import InputError
from nexus.keys import identity
from nexus.storage import notes
from nexus.storage.text import RESERVED_NAMES

BAD_NAMES = [
    ("", "empty"),
    ("../evil", "invalid"),
    ("a/b", "invalid"),
    ("a\\b", "invalid"),
    (".hidden", "invalid"),
    ("ella.bak", "invalid"),
    ("Ella", "invalid"),
    ("еlla", "U+0435"),  # Cyrillic е, looks like Latin e
    ("ellа", "U+0430"),  # Cyrillic а
    ("el\u200bla", "U+200B"),
    ("-ella", "invalid"),
    ("ella-", "invalid"),
    ("a" * 33, "invalid"),
    ("con", "reserved"),
    ("nul", "reserved"),
    ("nexus", "reserved"),
    ("watcher", "reserved"),
    ("com1", "reserved"),
    ("ella lyra", "invalid"),
]


def _snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")} if root.exists() else set()


@pytest.mark.parametrize(("name", "says"), BAD_NAMES)
def test_bad_names_are_refused_and_nothing_is_created(env: Env, name: str, says: str) -> None:
    vault_before = _snapshot(env.vault.root)
    keys_before = _snapshot(env.keys_home)
    run = env.run("agent", "add", "--", name, check=False)
    assert run.returncode == 2
    lines = run.stderr.splitlines()
    if name:
        assert len(lines) == 1 and lines[0].startswith("nexus: error: ") and says in lines[0], run.stderr
    else:  # argparse itself refuses an empty positional argument
        assert "name" in run.stderr
    assert _snapshot(env.vault.root) - {".nexus/cache", ".nexus/cache/config.json"} == vault_before - {
        ".nexus/cache",
        ".nexus/cache/config.json",
    }
    assert _snapshot(env.keys_home) == keys_before


def test_reserved_names_cover_windows_devices() -> None:
    assert {"con", "prn", "aux", "nul", "com1", "lpt9"} <= RESERVED_NAMES


def test_agent_add_creates_key_outside_and_note_inside(env: Env) -> None:
    run = env.run("agent", "add", "nova", "--json")
    data = run.json()
    assert data["name"] == "nova" and data["kind"] == "agent"
    key = env.keys_home / "keys" / env.vault.vault_id / "nova.pem"
    assert key.is_file() and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert not str(key.resolve()).startswith(str(env.vault.root))
    assert not list(env.vault.root.rglob("*.pem"))
    note = env.vault.root / "agents" / "nova" / "identity.md"
    shown, _ = notes.read(note)  # what Obsidian's Properties panel shows: no key material
    assert set(shown) == {"name", "kind", "created", "tags"}
    props, body = identity.read_note(env.vault, "nova")
    assert props["public_key"].startswith("ed25519:") and props["key_id"] == data["key_id"]
    assert props["kind"] == "agent" and props["tags"] == ["nexus/agent"]
    assert "nexus:meta" not in body and note.read_text().rstrip().endswith(" %%")
    for section in (
        "## Role",
        "## Priorities",
        "## Never without asking",
        "## Relations to the other agents",
    ):
        assert section in body
    listed = env.run("agent", "list", "--json").json()
    assert [i["name"] for i in listed] == ["ella", "lyra", "nova", "sam"]
    assert {i["name"]: i["kind"] for i in listed}["sam"] == "human"


def test_human_identity_becomes_the_vault_human(tmp_path: Path) -> None:
    from nexus.storage.vault import init

    vault, _ = init(tmp_path / "v")
    identity.add(vault, tmp_path / "keys", "sam", human=True)
    identity.add(vault, tmp_path / "keys", "alex", human=True)
    assert vault.human() == "sam"  # the first person added
    assert identity.load(vault, "alex").kind == "human"


def test_adding_twice_is_refused(env: Env) -> None:
    key = env.keys_home / "keys" / env.vault.vault_id / "ella.pem"
    before = key.read_bytes()
    run = env.run("agent", "add", "ella", check=False)
    assert run.returncode != 0 and "already exists" in run.stderr
    assert key.read_bytes() == before


def test_nexus_home_decides_where_keys_live(env: Env, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    environ = env.environ | {"NEXUS_HOME": str(other)}
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "nexus", "agent", "add", "kai"], env=environ, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert (other / "keys" / env.vault.vault_id / "kai.pem").is_file()
    assert not (env.keys_home / "keys" / env.vault.vault_id / "kai.pem").exists()


def test_library_refuses_bad_names_before_touching_disk(env: Env) -> None:
    for name, _ in BAD_NAMES:
        with pytest.raises(InputError):
            identity.add(env.vault, env.keys_home, name)
    assert sorted(os.listdir(env.vault.agents_dir)) == ["ella", "lyra", "sam"]
