"""Many machines through git (issue 11): real git, real processes, three clones and a bare remote."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nexus.keys import identity
from nexus.ledger import log
from nexus.settings import DEFAULT_ACK_TYPES
from nexus.storage import segments
from nexus.storage.vault import Vault, init
from nexus.team import acks, races

ROOT = Path(__file__).resolve().parent.parent
WORKER = Path(__file__).resolve().parent / "sync_worker.py"
AGENTS = ("ada", "bo", "cy")  # one per machine ("team" keeps a checkpoint and memory on all three)


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", HOME=str(cwd.parent), GIT_TERMINAL_PROMPT="0")
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def nexus(cwd: Path, keys: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(NEXUS_HOME=str(keys), HOME=str(cwd.parent), GIT_CONFIG_NOSYSTEM="1")
    env.pop("NEXUS_VAULT", None)
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-m", "nexus", "--vault", str(cwd), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"nexus {' '.join(args)} failed in {cwd} ({proc.returncode}):\n{proc.stderr}")
    return proc


def _identity(repo: Path, n: int) -> None:
    git(repo, "config", "user.name", f"machine {n}")
    git(repo, "config", "user.email", f"m{n}@example.invalid")


def make_machines(
    tmp_path: Path, count: int = 3, agents: tuple[str, ...] = AGENTS
) -> tuple[list[Path], Path]:
    """A bare remote and ``count`` clones of one vault, each set up with `nexus git setup`."""
    keys = tmp_path / "keys"
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    first = tmp_path / "m1"
    vault, _ = init(first)
    for name in agents:
        identity.add(vault, keys, name)
    identity.add(vault, keys, "sam", human=True)
    git(first, "init", "-q", "-b", "main")
    _identity(first, 1)
    nexus(first, keys, "git", "setup")
    git(first, "remote", "add", "origin", str(remote))
    git(first, "add", "-A")
    git(first, "commit", "-q", "-m", "a vault")
    git(first, "push", "-q", "-u", "origin", "main")
    clones = [first]
    for n in range(2, count + 1):
        clone = tmp_path / f"m{n}"
        git(tmp_path, "clone", "-q", str(remote), str(clone))
        _identity(clone, n)
        nexus(clone, keys, "git", "setup")
        clones.append(clone)
    return clones, keys


def ids_in(root: Path) -> list[str]:
    out: list[str] = []
    for _name, path in log.segment_files(Vault(root)):
        out += [entry_id for _at, entry_id in segments.openings(path.read_bytes())]
    return out


def history_team(clone: Path) -> str:
    return (clone / "agents" / "team" / "checkpoint-history.md").read_text(encoding="utf-8")


def worker(clone: Path, keys: Path, agent: str, rnd: int) -> subprocess.Popen[str]:
    env = dict(os.environ, NEXUS_HOME=str(keys), PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-W", "error", str(WORKER), str(clone), str(keys), agent, str(rnd)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _watch(clone: Path, keys: Path, events: Path) -> subprocess.Popen[str]:
    """`nexus watch` on one clone, its events in a file (a full pipe would stall the watcher), once ready."""
    env = dict(os.environ, NEXUS_HOME=str(keys))
    env.pop("NEXUS_VAULT", None)
    with open(events, "w") as out:
        watcher = subprocess.Popen(
            [
                sys.executable,
                "-W",
                "error",
                "-m",
                "nexus",
                "--vault",
                str(clone),
                "watch",
                "--json",
                "--rescan",
                "0.5",
            ],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
    deadline = time.monotonic() + 60
    while '"ready"' not in events.read_text():  # wait until it watches
        assert watcher.poll() is None and time.monotonic() < deadline, "the watcher did not start"
        time.sleep(0.05)
    return watcher


def _play_rounds(clones: list[Path], keys: Path, rng: random.Random) -> tuple[set[str], dict[str, list[str]]]:
    """Two rounds: agents act on every machine while machines sync in random orders.

    Returns what the agents acknowledged and what each read."""
    acked: set[str] = set()
    read_by: dict[str, list[str]] = {a: [] for a in AGENTS}
    for rnd in range(2):
        procs = [worker(clone, keys, agent, rnd) for clone, agent in zip(clones, AGENTS, strict=True)]
        # Syncs while agents act on every machine: the sync holds the write locks while git merges.
        for clone in rng.sample(clones, 1):
            nexus(clone, keys, "sync")
        for proc, agent in zip(procs, AGENTS, strict=True):
            stdout, stderr = proc.communicate(timeout=120)
            assert proc.returncode == 0, stderr
            data = json.loads(stdout)
            acked.update(data["acked"])
            read_by[agent] += data["read"]
        for clone in rng.sample(clones, 3):
            if clone == clones[1] and rnd == 1:
                # a plain commit and pull, as a person would, on the machine whose watcher runs
                git(clone, "add", "-A")
                git(clone, "commit", "-q", "-m", "by hand")
                git(clone, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
            nexus(clone, keys, "sync")
    for clone in [*clones, *clones[:2]]:  # everyone ends with everything
        nexus(clone, keys, "sync")
    return acked, read_by


def _check_clone(clone: Path, keys: Path, acked: set[str]) -> None:
    """One machine after the last sync: every acknowledged write there once, verified, nothing dropped."""
    ids = ids_in(clone)
    assert len(ids) == len(set(ids)), "an entry twice"
    assert acked <= set(ids), f"lost on {clone.name}: {sorted(acked - set(ids))}"
    report = json.loads(nexus(clone, keys, "verify", "--json").stdout)
    assert report["ok"], report["problems"]
    kinds = {p["kind"] for p in report["problems"]}
    assert "sync-conflict" in kinds  # the state diverged: shown, as a note in conflicts/
    states = sorted((clone / "conflicts").glob("state-*.md"))
    assert states and "the project state diverged" in states[0].read_text(encoding="utf-8")
    shown = nexus(clone, keys, "state", "show")
    assert f"state conflict: another machine's version is in conflicts/{states[0].name}" in shown.stderr
    notes = sorted((clone / "decisions").glob("D-*.md"))
    assert len(notes) == 6 and len({n.name[:6] for n in notes}) == 6  # 3 agents x 2 rounds, no id twice
    user = (clone / "USER.md").read_text(encoding="utf-8")
    for agent in AGENTS:
        for rnd in range(2):
            assert f"the user told {agent} something in round {rnd}" in user
            assert f"{agent} learned {rnd}" in (clone / "agents" / agent / "MEMORY.md").read_text()
            assert (
                f"{agent} retained a fact in round {rnd}"
                in (clone / "agents" / agent / "bank.md").read_text()
            )
        history = (clone / "agents" / agent / "checkpoint-history.md").read_text(encoding="utf-8")
        assert history.count("nexus:checkpoint ") == 2
        for rnd in range(2):  # the shared agent's saves and notes from every machine
            step = f"{agent}'s machine, round {rnd}"
            assert sum(step in line for line in history_team(clone).splitlines()) == 1
            assert f"team noted {agent} {rnd}" in (clone / "agents" / "team" / "MEMORY.md").read_text()
    assert len(list((clone / "handoff").glob("*.md"))) == 3  # one per machine, none dropped


def _check_agreement(clones: list[Path], keys: Path, read_by: dict[str, list[str]]) -> None:
    """Races and owed acknowledgements come from the log alone: every machine agrees, and agents on
    different machines who acted at once (neither had seen the other's entry) raced. Cursors after
    merges: every entry by others reached each agent exactly once, over its reads."""
    answers = []
    for clone in clones:
        vault = Vault(clone)
        found = [(r.a.entry.id, r.b.entry.id, r.resolved_by) for r in races.find_races(vault)]
        owed = {a: [i.entry.id for i in acks.owed(vault, a, DEFAULT_ACK_TYPES)] for a in AGENTS}
        answers.append((found, owed))
        assert any({r.a.entry.agent, r.b.entry.agent} == {"ada", "bo"} for r in races.find_races(vault))
    assert answers[0] == answers[1] == answers[2]
    for clone, agent in zip(clones, AGENTS, strict=True):
        final = json.loads(nexus(clone, keys, "log", "read", "--agent", agent, "--json").stdout)
        got = read_by[agent] + [e["id"] for e in final]
        vault = Vault(clone)
        others = {loc.entry.id for loc in log.iter_entries(vault) if loc.entry.agent != agent}
        assert len(got) == len(set(got)), f"{agent} read an entry twice"
        assert set(got) == others, f"{agent} missed {sorted(others - set(got))[:5]}"


@pytest.mark.slow
def test_three_clones_sync_in_random_orders_and_lose_nothing(tmp_path: Path) -> None:
    clones, keys = make_machines(tmp_path, agents=(*AGENTS, "team"))
    events = tmp_path / "watch.jsonl"
    watcher = _watch(clones[1], keys, events)
    try:
        acked, read_by = _play_rounds(clones, keys, random.Random(11))
        assert watcher.poll() is None, "the watcher died"
    finally:
        watcher.terminate()
        try:
            _out, err = watcher.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # (never left running into the next test)
            watcher.kill()
            watcher.communicate()
            raise
    assert "Traceback" not in err, err
    seen = [json.loads(line) for line in events.read_text().splitlines()]
    assert not [e for e in seen if e.get("event") in ("restored", "recreated", "error")], seen
    heads = {git(c, "rev-parse", "HEAD").stdout.strip() for c in clones}
    assert len(heads) == 1
    for clone in clones:
        _check_clone(clone, keys, acked)
    _check_agreement(clones, keys, read_by)


def test_same_agent_on_two_machines_is_a_fork_both_kept_and_not_pushed(tmp_path: Path) -> None:
    (m1, m2), keys = make_machines(tmp_path, 2, ("ada",))
    a = nexus(
        m1, keys, "log", "append", "--agent", "ada", "--channel", "c", "--type", "note", "--summary", "on m1"
    ).stdout.strip()
    b = nexus(
        m2, keys, "log", "append", "--agent", "ada", "--channel", "c", "--type", "note", "--summary", "on m2"
    ).stdout.strip()
    nexus(m1, keys, "sync")
    run = nexus(m2, keys, "sync", check=False)
    assert run.returncode == 1
    assert "not pushed" in run.stderr and "Traceback" not in run.stderr
    assert "fork" in run.stderr or "duplicate" in run.stderr
    assert {a, b} <= set(ids_in(m2))  # both entries kept
    remote_log = git(m1, "ls-remote", "origin", "main").stdout.split()[0]
    assert remote_log == git(m1, "rev-parse", "HEAD").stdout.strip()  # m2's merge never reached it


def test_plain_git_pull_merges_through_the_driver(tmp_path: Path) -> None:
    """Without `nexus sync`: two machines append to one segment, a plain pull merges it by id."""
    (m1, m2), keys = make_machines(tmp_path, 2, ("ada", "bo"))
    mine = [
        nexus(
            m1,
            keys,
            "log",
            "append",
            "--agent",
            "ada",
            "--channel",
            "c",
            "--type",
            "note",
            "--summary",
            f"ada {i}",
        ).stdout.strip()
        for i in range(3)
    ]
    theirs = [
        nexus(
            m2,
            keys,
            "log",
            "append",
            "--agent",
            "bo",
            "--channel",
            "c",
            "--type",
            "question",
            "--summary",
            f"bo {i}",
        ).stdout.strip()
        for i in range(3)
    ]
    for clone, msg in ((m1, "ada"), (m2, "bo")):
        git(clone, "add", "-A")
        git(clone, "commit", "-q", "-m", msg)
    git(m1, "push", "-q", "origin", "main")
    before = json.loads(nexus(m2, keys, "log", "read", "--agent", "bo", "--json").stdout)
    assert before == []  # bo has read up to its own newest entry, newer than all of ada's
    git(m2, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    ids = ids_in(m2)
    assert ids == sorted(mine + theirs)  # union in id order, nothing twice
    assert "<<<<<<<" not in (m2 / "log").joinpath(os.listdir(m2 / "log")[0]).read_text()
    assert json.loads(nexus(m2, keys, "verify", "--json").stdout)["ok"]
    # ada's entries arrived older than what bo had read: the post-merge hook noted them, bo gets them once
    got = json.loads(nexus(m2, keys, "log", "read", "--agent", "bo", "--json").stdout)
    assert [e["id"] for e in got] == mine
    assert json.loads(nexus(m2, keys, "log", "read", "--agent", "bo", "--json").stdout) == []


def test_sync_refuses_without_setup_and_says_why(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    vault, _ = init(tmp_path / "v")
    run = nexus(vault.root, keys, "sync", check=False)
    assert run.returncode == 1 and "nexus git setup" in run.stderr and "Traceback" not in run.stderr


def test_setup_is_idempotent_and_ignores_derived_state(tmp_path: Path) -> None:
    (m1,), keys = make_machines(tmp_path, 1, ("ada",))
    again = json.loads(nexus(m1, keys, "git", "setup", "--json").stdout)
    assert again["changed"] == []
    attrs = (m1 / ".gitattributes").read_text()
    for pattern in (
        "log/*.md merge=nexus",
        "state/project.md merge=nexus",
        "agents/*/MEMORY.md merge=nexus",
        "agents/*/bank.md merge=nexus",
        "handoff/*.md merge=nexus",
        "decisions/*.md merge=nexus",
    ):
        assert pattern in attrs
    assert git(m1, "check-ignore", ".nexus/tail.json").returncode == 0
    assert git(m1, "check-ignore", "memory/.REVIEW.md.4242.0a1b.tmp").returncode == 0
    assert "merge-driver" in git(m1, "config", "--get", "merge.nexus.driver").stdout
    for hook in ("post-merge", "post-checkout", "post-rewrite"):
        assert os.access(m1 / ".git" / "hooks" / hook, os.X_OK)


def test_first_sync_of_a_repository_without_commits(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    vault, _ = init(tmp_path / "v")
    identity.add(vault, keys, "ada")
    git(vault.root, "init", "-q", "-b", "main")
    _identity(vault.root, 1)
    git(vault.root, "remote", "add", "origin", str(remote))
    nexus(vault.root, keys, "git", "setup")
    first = json.loads(nexus(vault.root, keys, "sync", "--json").stdout)
    assert first["committed"] == 1 and first["pushed"]
    again = json.loads(nexus(vault.root, keys, "sync", "--json").stdout)
    assert again["committed"] == 0 and not again["pushed"] and not again["merged"]
    files = git(vault.root, "ls-tree", "-r", "--name-only", "origin/main").stdout.split()
    assert "agents/ada/identity.md" in files and ".gitattributes" in files
    assert not [f for f in files if f.startswith(".nexus/")]
