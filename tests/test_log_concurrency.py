"""Many writer processes appending at once: nothing lost, duplicated or interleaved; verify clean."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from conftest import Env

from nexus.audit.verify_state import verify
from nexus.keys import identity
from nexus.ledger import log

WORKER = Path(__file__).resolve().parent / "log_worker.py"


def test_8_processes_x_250_appends(env: Env) -> None:
    agents = [f"w{i}" for i in range(8)]
    for name in agents:
        identity.add(env.vault, env.keys_home, name)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-W",
                "error",
                str(WORKER),
                str(env.vault.root),
                str(env.keys_home),
                name,
                "250",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in agents
    ]
    acked: dict[str, list[str]] = {}
    for name, proc in zip(agents, procs, strict=True):
        out, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0
        lines = out.split()
        assert lines[0] == "ready"
        acked[name] = lines[1:]
    assert all(len(ids) == 250 for ids in acked.values())

    located = []
    for _name, path in log.segment_files(env.vault):
        scan = log.scan_file(env.vault, path)
        assert scan.broken == [] and scan.stray == [] and scan.torn is None
        located.extend(scan.entries)
    assert len(located) == 2000
    ids = [loc.entry.id for loc in located]
    assert len(set(ids)) == 2000
    assert ids == sorted(ids)  # ids are time-sortable and written in order
    per_agent: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for loc in located:
        per_agent[loc.entry.agent].append((loc.entry.seq, loc.entry.summary))
    for name in agents:
        # each agent's chain: seq 1..250 in file order, its summaries in the order it wrote them
        assert per_agent[name] == [(i + 1, f"{name} {i}") for i in range(250)]
        assert [loc.entry.id for loc in located if loc.entry.agent == name] == acked[name]
    # line ranges do not overlap: no entry was written inside another
    spans = sorted((loc.offset, loc.end_offset) for loc in located)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    report = verify(env.vault)
    assert report.ok, [str(p) for p in report.problems]
    assert report.entries == 2000
    assert env.run("verify").returncode == 0


def test_concurrent_cli_appends(env: Env) -> None:
    """24 real `nexus log append` processes started at once, three agents."""
    procs = []
    for i in range(8):
        for agent in ("ella", "lyra", "sam"):
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-W",
                        "error",
                        "-m",
                        "nexus",
                        "log",
                        "append",
                        "--agent",
                        agent,
                        "--channel",
                        "cli",
                        "--type",
                        "note",
                        "--summary",
                        f"{agent} says {i}",
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=env.environ,
                )
            )
    printed = set()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        printed.add(out.strip())
    entries = list(log.iter_entries(env.vault))
    assert len(entries) == 24
    assert {loc.entry.id for loc in entries} == printed
    for agent in ("ella", "lyra", "sam"):
        assert sorted(loc.entry.seq for loc in entries if loc.entry.agent == agent) == list(range(1, 9))
    report = env.run("verify", "--json").json()
    assert report["ok"] and report["entries"] == 24 and report["problems"] == []


def test_threads_sharing_one_writer(env: Env) -> None:
    """A long-lived process (the MCP server) appending from several threads through one LogWriter."""
    import threading

    signers = {name: env.signer(name) for name in ("ella", "lyra", "sam")}
    errors: list[BaseException] = []

    def run(name: str) -> None:
        try:
            for i in range(100):
                log.append(env.vault, signers[name], channel="t", type="note", summary=f"{name} {i}")
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=run, args=(name,)) for name in signers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    located = list(log.iter_entries(env.vault))
    assert len(located) == 300
    for name in signers:
        assert [loc.entry.summary for loc in located if loc.entry.agent == name] == [
            f"{name} {i}" for i in range(100)
        ]
    assert verify(env.vault).ok
