"""Sync benchmark (issue 11): the merge driver on 10,000 new entries each side, and `nexus sync` with
nothing to do beside a plain `git pull`.

    .venv/bin/python benchmarks/bench_sync.py [--entries 10000] [--runs 5] [--json]

1. A segment with 1,000 common entries, then 10,000 new entries by one agent on "our" side and 10,000
   by another on "theirs". Times `merge.merge_segment` in-process and the whole driver as git runs it
   (`python -m nexus git merge-driver %O %A %B %L %P`, a process each run), beside `python -c pass`;
   checks the result holds all 21,000 entries once, in id order, and verifies. Target: ≤ 2 s of driver.
2. A clone of a bare remote, in sync: `nexus sync` (fetch, nothing to commit or merge) and
   `git pull` interleaved, p50 of each and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import pct, timed

from nexus.keys import identity
from nexus.ledger import log
from nexus.storage.vault import Vault, init
from nexus.sync import merge


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _entries(vault: Vault, keys: Path, agent: str, n: int) -> None:
    signer = identity.load_signer(vault, keys, agent)
    for i in range(n):
        log.append(
            vault,
            signer,
            channel="bench",
            type="note",
            summary=f"{agent} {i}",
            body=f"entry {i} of {agent}\n" + "x" * (i % 200),
        )


def bench_driver(tmp: Path, count: int, runs: int) -> dict[str, float]:
    keys = tmp / "keys"
    vault, _ = init(tmp / "vault")
    for name in ("ella", "lyra"):
        identity.add(vault, keys, name)
    _entries(vault, keys, "ella", 1000)
    ((_, path),) = log.segment_files(vault)
    base = path.read_bytes()
    _entries(vault, keys, "ella", count)
    ours = path.read_bytes()
    path.write_bytes(base)
    (vault.state / "tail.json").unlink()
    log._WRITERS.clear()
    _entries(vault, keys, "lyra", count)
    theirs = path.read_bytes()
    files = {}
    for label, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        files[label] = tmp / label
        files[label].write_bytes(data)
    in_process = []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = merge.merge_segment(base, ours, theirs, "log/x.md")
        in_process.append((time.perf_counter() - t0) * 1000)
    ids = [b for b, _ in merge.split_segment(result.data)[1] if b]
    assert len(ids) == len(set(ids)) == 1000 + 2 * count and ids == sorted(ids), "a bad merge"
    path.write_bytes(result.data)
    from nexus.audit.verify_state import verify

    assert verify(vault, full=True).ok
    env = dict(os.environ)
    driver, baseline, cpu = [], [], []
    for _ in range(runs):
        work = tmp / "work"
        shutil.copy(files["ours"], work)
        baseline.append(timed([sys.executable, "-c", "pass"], env))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        driver.append(
            timed(
                [
                    sys.executable,
                    "-m",
                    "nexus",
                    "git",
                    "merge-driver",
                    str(files["base"]),
                    str(work),
                    str(files["theirs"]),
                    "7",
                    "log/2026-12.md",
                ],
                env,
            )
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
        assert work.read_bytes() == result.data
    return {
        "entries_each_side": count,
        "segment_mb": round(len(result.data) / 1e6, 1),
        "merge_in_process_ms_p50": round(pct(in_process, 0.5), 1),
        "driver_process_ms_p50": round(pct(driver, 0.5), 1),
        "driver_process_ms_max": round(max(driver), 1),
        "driver_process_cpu_ms_p50": round(pct(cpu, 0.5), 1),
        "python_pass_ms_p50": round(pct(baseline, 0.5), 1),
    }


def bench_sync(tmp: Path, runs: int) -> dict[str, float]:
    keys = tmp / "keys2"
    remote = tmp / "remote.git"
    _git(tmp, "init", "-q", "--bare", "-b", "main", str(remote))
    vault, _ = init(tmp / "m1")
    identity.add(vault, keys, "ella")
    _entries(vault, keys, "ella", 200)
    root = vault.root
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.name", "bench")
    _git(root, "config", "user.email", "bench@example.invalid")
    _git(root, "remote", "add", "origin", str(remote))
    env = dict(os.environ, NEXUS_HOME=str(keys), NEXUS_VAULT=str(root))
    for command in (["git", "setup"], ["sync"]):
        subprocess.run([sys.executable, "-m", "nexus", *command], env=env, check=True, capture_output=True)
    pull, sync = [], []
    os.chdir(root)
    for _ in range(runs):
        pull.append(timed(["git", "pull", "-q", "--no-rebase", "origin", "main"], env))
        sync.append(timed([sys.executable, "-m", "nexus", "sync"], env))
    return {
        "git_pull_ms_p50": round(pct(pull, 0.5), 1),
        "nexus_sync_ms_p50": round(pct(sync, 0.5), 1),
        "ratio_p50": round(pct(sync, 0.5) / pct(pull, 0.5), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nexus-bench-sync-"))
    try:
        out = {
            "driver": bench_driver(tmp, args.entries, args.runs),
            "sync_nothing_to_do": bench_sync(tmp, max(args.runs, 10)),
        }
    finally:
        os.chdir("/")
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for section, figures in out.items():
            print(section)
            for key, value in figures.items():
                print(f"  {key:<28} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
