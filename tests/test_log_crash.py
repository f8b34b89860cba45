"""Writers SIGKILLed at random moments: every acknowledged entry survives, the log still parses, and
a torn tail is quarantined by the next append."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import Env

from nexus.audit.verify_state import verify
from nexus.ledger import log

WORKER = Path(__file__).resolve().parent / "log_worker.py"


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _check(env: Env, acked: set[str]) -> None:
    report = verify(env.vault)
    assert {p.kind for p in report.errors} <= {"torn-tail"}, [str(p) for p in report.errors]
    assert len([p for p in report.errors if p.kind == "torn-tail"]) <= 1
    present = {loc.entry.id for loc in log.iter_entries(env.vault)}
    assert acked <= present, f"{len(acked - present)} acknowledged entries are gone"


def test_writer_sigkilled_200_times(env: Env) -> None:
    """200 forked writers, each appending in a loop and killed after a random delay."""
    rng = random.Random(20261130)
    signer = env.signer("ella")
    acked: set[str] = set()
    for round_no in range(200):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer: a real process, killed with SIGKILL mid-loop
            try:
                os.close(read_fd)
                i = 0
                while True:
                    result = log.append(
                        env.vault,
                        signer,
                        channel="crash",
                        type="note",
                        summary=f"round {round_no} entry {i}",
                        body="x" * (i % 500),
                    )
                    os.write(write_fd, f"{result.located.entry.id}\n".encode())
                    i += 1
            finally:
                os._exit(1)
        os.close(write_fd)
        # each writer acknowledges one entry before the random delay starts, so every round does
        # work however loaded the machine is; the kill still lands at a random moment mid-loop
        first = b""
        while b"\n" not in first:
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            first += chunk
        time.sleep(rng.uniform(0, 0.03))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        acked.update((first + _read_all(read_fd)).decode().split())
        os.close(read_fd)
        if round_no % 25 == 24:
            _check(env, acked)
    _check(env, acked)
    assert len(acked) >= 200  # the writers did get work done between kills
    # the next append (a real CLI process) leaves the log clean
    env.run(
        "log",
        "append",
        "--agent",
        "lyra",
        "--channel",
        "crash",
        "--type",
        "note",
        "--summary",
        "after the storm",
    )
    assert verify(env.vault).ok


def test_cli_writer_processes_sigkilled(env: Env) -> None:
    """Real worker processes (fresh interpreters) killed at random moments after they start writing."""
    rng = random.Random(7)
    acked: set[str] = set()
    for _ in range(12):
        with subprocess.Popen(
            [
                sys.executable,
                str(WORKER),
                str(env.vault.root),
                str(env.keys_home),
                rng.choice(["ella", "lyra"]),
                "0",
            ],
            stdout=subprocess.PIPE,
        ) as proc:
            assert proc.stdout is not None
            assert proc.stdout.readline() == b"ready\n"
            time.sleep(rng.uniform(0, 0.05))
            proc.kill()
            proc.wait()
            acked.update(proc.stdout.read().decode().split())
        _check(env, acked)
    assert env.run("verify").returncode == 0


def test_torn_tail_quarantined_by_next_cli_append(env: Env) -> None:
    env.append("ella", "complete")
    ((_, path),) = log.segment_files(env.vault)
    whole = path.read_bytes()
    head = env.vault.agent_dir("ella") / "head.json"
    head_before = head.read_bytes()
    env.append("ella", "will be torn", body="half of this is lost")
    data = path.read_bytes()
    torn = data[len(whole) : len(whole) + 140]
    path.write_bytes(whole + torn)
    (env.vault.state / "tail.json").unlink()  # the torn entry was never acknowledged
    head.write_bytes(head_before)  # (nor signed as ella's head, which happens after the fsync)
    report = env.run("verify", "--json", check=False, process=True)  # fresh processes, as after a crash
    assert report.returncode == 1
    assert [p["kind"] for p in report.json()["problems"]] == ["torn-tail"]
    run = env.run(
        "log",
        "append",
        "--agent",
        "lyra",
        "--channel",
        "c",
        "--type",
        "note",
        "--summary",
        "next",
        process=True,
    )
    assert "moved a torn tail" in run.stderr and ".nexus/quarantine/" in run.stderr
    moved = list((env.vault.state / "quarantine").iterdir())
    assert len(moved) == 1 and moved[0].read_bytes() == torn
    assert env.run("verify", process=True).returncode == 0
    assert [loc.entry.summary for loc in log.iter_entries(env.vault)] == ["complete", "next"]


def test_log_repair_command(env: Env) -> None:
    env.append("ella", "complete")
    assert env.run("log", "repair").stdout.strip() == "no torn tail"
    ((_, path),) = log.segment_files(env.vault)
    with path.open("ab") as f:
        f.write(b"%% nexus:begin 01JDQ8Z6V3M2K4T5N7P9R1S3W5 %%\n**2026-")
    assert env.run("verify", check=False).returncode == 1
    out = env.run("log", "repair", "--json").json()
    assert len(out["quarantined"]) == 1 and out["quarantined"][0].startswith(".nexus/quarantine/")
    assert (env.vault.root / out["quarantined"][0]).read_bytes().startswith(b"%% nexus:begin 01JDQ8")
    assert env.run("verify").returncode == 0
    assert env.run("log", "repair", "--json").json() == {"quarantined": []}
