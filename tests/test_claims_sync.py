"""Claims across machines: two real git clones claim the same path while apart, then sync; a
file-sync conflict copy holding a claim is imported. The earlier claim holds on every machine, the
later one is lost (never dropped), and its agent is told in the brief and the handoff."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import Env
from test_sync import git, make_machines, nexus

from nexus.ledger import log
from nexus.team import claimlog


def _claims(clone: Path, keys: Path, *extra: str) -> list[dict[str, object]]:
    out: list[dict[str, object]] = json.loads(nexus(clone, keys, "claims", "--all", "--json", *extra).stdout)[
        "claims"
    ]
    return out


def test_two_clones_claim_the_same_path_apart_then_sync(tmp_path: Path) -> None:
    (m1, m2), keys = make_machines(tmp_path, 2, agents=("ada", "bo"))
    project = tmp_path / "work" / "proj"
    (project / "src").mkdir(parents=True)
    git(project, "init", "-q")
    first = nexus(
        m1,
        keys,
        "claim",
        "src/a.py",
        "--agent",
        "ada",
        "--reason",
        "ada's fix",
        "--project",
        str(project),
        "--json",
    )
    second = nexus(
        m2,
        keys,
        "claim",
        "src/**",
        "--agent",
        "bo",
        "--reason",
        "bo's refactor",
        "--project",
        str(project),
        "--json",
    )
    ada_id, bo_id = json.loads(first.stdout)["id"], json.loads(second.stdout)["id"]
    assert ada_id < bo_id
    nexus(m1, keys, "sync")
    nexus(m2, keys, "sync")  # merges ada's claim into bo's copy (the segment's merge driver)
    nexus(m1, keys, "sync")
    for clone in (m1, m2):
        claims = {c["id"]: c for c in _claims(clone, keys)}
        assert claims[ada_id]["status"] == "active"
        assert claims[bo_id]["status"] == "lost" and claims[bo_id]["lost_to"] == ada_id  # not dropped
        assert nexus(clone, keys, "verify").returncode == 0
    # bo is told in its next brief, and the handoff lists it; Claims.md shows it too after a write
    brief = nexus(m2, keys, "brief", "--agent", "bo", "--peek").stdout
    assert f"your claim {bo_id}" in brief and "LOST on merge" in brief and ada_id in brief
    page = nexus(m2, keys, "handoff", "--since", "1h").stdout
    assert "Lost on merge" in page and bo_id in page and "claim(s) expired without a release or lost" in page
    # the lost claim stops nothing and holds nothing: ada's holds; bo may not take it now
    refused = nexus(
        m2,
        keys,
        "claim",
        "src/a.py",
        "--agent",
        "bo",
        "--reason",
        "again",
        "--project",
        str(project),
        check=False,
    )
    assert refused.returncode == 3 and f"held by ada (exclusive, claim {ada_id})" in refused.stderr
    nexus(m2, keys, "claim", "release", ada_id, "--agent", "sam")  # a person ends it
    nexus(m2, keys, "claim", "src/a.py", "--agent", "bo", "--reason", "now mine", "--project", str(project))
    assert "lost on merge" in (m2 / "Claims.md").read_text().lower()


def test_a_conflict_copys_claim_is_imported_and_loses_to_the_earlier_one(env: Env, tmp_path: Path) -> None:
    """Syncthing kept this machine's segment and wrote the other's beside it: lyra's claim (the
    earlier) was on the other machine; ella's (later) here. After the import lyra's holds."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    env.append("ella", "before")
    ((name, path),) = log.segment_files(env.vault)
    before = path.read_bytes()
    lyra = env.run(
        "claim",
        "src/x.py",
        "--agent",
        "lyra",
        "--reason",
        "other machine",
        "--project",
        str(project),
        "--json",
    ).json()["id"]
    other = path.read_bytes()
    path.write_bytes(before)
    (env.vault.state / "tail.json").unlink()
    (env.vault.state / "claims.json").unlink()  # (this machine never saw lyra's claim)
    ella = env.run(
        "claim",
        "src/x.py",
        "--agent",
        "ella",
        "--reason",
        "this machine",
        "--project",
        str(project),
        "--json",
    ).json()["id"]
    copy = path.parent / f"{name}.sync-conflict-20261201-064500-ABCDEFG.md"
    copy.write_bytes(other)
    assert claimlog.refresh(env.vault).claims()[ella].status == "active"  # the copy is not the log
    done = env.run("log", "import-copies", "--json").json()
    assert done[0]["imported"] == [lyra]
    claims = claimlog.refresh(env.vault).claims()
    assert claims[lyra].status == "active" and claims[ella].status == "lost" and claims[ella].lost_to == lyra
    assert "LOST on merge" in env.run("brief", "--agent", "ella", "--peek").stdout
    hook = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            "-m",
            "nexus.surfaces.hooks",
            "pre-tool",
            "--agent",
            "ella",
            "--vault",
            str(env.vault.root),
            "--home",
            str(env.keys_home),
        ],
        input=json.dumps(
            {
                "tool_name": "Write",
                "tool_input": {"file_path": str(project / "src" / "x.py")},
                "cwd": str(project),
                "session_id": "s",
            }
        ),
        capture_output=True,
        text=True,
        env=env.environ,
        check=True,
    )
    assert json.loads(hook.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
