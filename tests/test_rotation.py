"""Key rotation: `nexus agent rotate` announces the new key with an entry signed by the old one; another
machine's `nexus agent trust` finds that announcement; without it, a changed key is trusted only on a
person's word. Real CLI processes, two machines' pins (two NEXUS_HOME folders)."""

from __future__ import annotations

import shutil
from pathlib import Path

import faulty
from conftest import Env

from nexus.keys import trust
from nexus.keys.signatures import valid
from nexus.ledger import log
from nexus.storage import entries


def _other_machine(env: Env, tmp_path: Path) -> dict[str, str]:
    """Another machine: the same vault, pins of its own (it has seen the vault before the rotation)."""
    home = tmp_path / "other-machine"
    environ = dict(env.environ, NEXUS_HOME=str(home))
    return environ


def test_rotation_is_announced_with_the_old_key_and_accepted_elsewhere(env: Env, tmp_path: Path) -> None:
    env.append("ella", "before the rotation")
    other = _other_machine(env, tmp_path)
    import subprocess
    import sys

    def run_other(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-W", "error", "-m", "nexus", *args],
            env=other,
            capture_output=True,
            text=True,
            cwd=str(env.vault.root),
            timeout=60,
        )

    assert run_other("verify").returncode == 0  # the other machine pins ella's first key
    rotated = env.run("agent", "rotate", "ella", "--json").json()
    assert rotated["old_key_id"] != rotated["new_key_id"]
    env.run("log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", "after")
    # this machine: clean, the announcement signed with the old key, the confirmation with the new
    check = env.run("verify", check=False)
    assert check.returncode == 0, check.stdout
    tail = env.run("log", "tail", "-n", "3", "--json").json()
    # (entry format 2 stores no key id: the key of ella's this machine trusts whose signature holds)
    ring = trust.load(env.vault, env.keys_home)
    written = {loc.entry.id: loc.entry for loc in log.iter_entries(env.vault)}

    def signed_by(entry_id: str) -> str:
        e = written[entry_id]
        return next(k for k, pub in ring.keys["ella"].items() if valid(pub, e.sig, entries.signing_bytes(e)))

    assert [(e["type"], signed_by(e["id"])) for e in tail] == [
        ("rotation", rotated["old_key_id"]),
        ("rotation", rotated["new_key_id"]),
        ("note", rotated["new_key_id"]),
    ]
    assert tail[0]["id"] == rotated["announced"] and tail[1]["ack"] == [rotated["announced"]]
    # the other machine: the new key is not trusted until a person accepts it
    run = run_other("verify", "--json")
    assert run.returncode == 1 and "key-changed" in run.stdout
    trusted = run_other("agent", "trust", "ella", "--json")
    assert trusted.returncode == 0, trusted.stderr
    data = __import__("json").loads(trusted.stdout)
    assert data["announced_by"] == rotated["announced"] and data["key_id"] == rotated["new_key_id"]
    assert run_other("verify").returncode == 0
    pins = __import__("json").loads(run_other("agent", "trusted", "--json").stdout)
    hows = {r["key_id"]: r["how"] for r in pins if r["name"] == "ella"}
    assert hows[rotated["new_key_id"]] == "rotation-entry"


def test_a_key_swapped_in_without_an_announcement_is_trusted_only_on_a_persons_word(
    env: Env, tmp_path: Path
) -> None:
    env.append("lyra", "hello")
    env.run("verify")  # pins lyra's key on this machine
    # a second vault's lyra key, copied into this vault's note: no rotation entry names it
    note = env.vault.root / "agents" / "lyra" / "identity.md"
    before = note.read_text(encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(env.vault.root, elsewhere)
    (elsewhere / "agents" / "lyra" / "identity.md").unlink()
    other_home = tmp_path / "other-keys"
    import subprocess
    import sys

    subprocess.run(
        [sys.executable, "-m", "nexus", "--vault", str(elsewhere), "agent", "add", "lyra"],
        env=dict(env.environ, NEXUS_HOME=str(other_home)),
        check=True,
        capture_output=True,
    )
    note.write_text(
        (elsewhere / "agents" / "lyra" / "identity.md").read_text(encoding="utf-8"), encoding="utf-8"
    )
    assert note.read_text(encoding="utf-8") != before
    assert "key-changed" in env.run("verify", check=False).stdout
    assert "on your word" in env.run("agent", "trust", "lyra").stdout
    again = env.run("agent", "trust", "lyra", "--json").json()
    assert again["announced_by"] is None and again["key_id"] == again["previous"]
    pins = env.run("agent", "trusted", "--json").json()
    assert {r["how"] for r in pins if r["name"] == "lyra" and r["current"]} == {"trust"}


def test_rotate_refuses_an_unknown_agent_in_one_line(env: Env) -> None:
    run = env.run("agent", "rotate", "nobody", check=False)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_a_rotation_that_fails_at_any_rename_converges_when_run_again(env: Env, tmp_path: Path) -> None:
    """os.replace fails (EIO) at its 1st, 2nd, … call inside `agent rotate`, in a child process (forked
    by tests/faulty.py); running rotate again finishes it: the vault verifies, ella signs with the key
    her note declares."""
    env.run("agent", "trusted")  # pins the first keys on this machine
    for nth in range(1, 12):
        env.append("ella", f"round {nth}")
        failed = faulty.run(
            f"replace:{nth}:once:EIO", ["agent", "rotate", "ella"], env=env.environ, cwd=env.vault.root
        )
        assert "Traceback" not in failed.stderr, failed.stderr
        if failed.returncode == 0:
            break  # no rename left to fail: every step was covered
        env.run("agent", "rotate", "ella")
        check = env.run("verify", check=False)
        assert check.returncode == 0, (nth, check.stdout)
        env.run("log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", "ok")
    else:
        raise AssertionError("rotate kept failing: the fault never ran out of renames")
    assert nth > 2  # the key and the note were each replaced under a fault at least once
