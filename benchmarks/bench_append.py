"""Durable signed append vs the disk's raw write+fsync loop, with 1 and 8 writer processes.

    .venv/bin/python benchmarks/bench_append.py [--n 2000] [--rounds 3] [--dir PATH]

Everything runs in one folder on one disk (default: a temp folder under benchmarks/results/, which is
on the same disk as the repository; /tmp may be a RAM disk elsewhere). Rounds interleave the raw loop
and the appends so both see the same load. Reported:

* raw 1: one process, ``os.write`` + ``os.fsync`` of a record the size of an average entry;
* raw 8 locked: 8 processes doing the same under an exclusive ``flock`` (the limit for 8 writers);
* append 1: ``log.append`` in one process (a long-lived writer: LogWriter keeps the tail state);
* append 8: 8 processes appending at once as 8 agents;

entries/s, p50/p99 latency of one call, and the ratio of each append rate to the raw loop beside it.
Target (issue 2): append 1 >= 0.5 x raw 1. JSON goes to benchmarks/results/bench_append.json.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import pct  # noqa: E402

from nexus.keys import identity  # noqa: E402
from nexus.ledger import log  # noqa: E402
from nexus.storage.vault import Vault, init  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
SUMMARY = "benchmark entry: a one-line summary of about the usual length"
BODY = "A body of a couple of sentences, as agents write them. " * 3


def raw_loop(path: Path, size: int, n: int, lock: Path | None = None) -> list[float]:
    record = b"x" * (size - 1) + b"\n"
    lat = []
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    lfd = os.open(lock, os.O_RDWR | os.O_CREAT) if lock else -1
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            if lfd >= 0:
                fcntl.flock(lfd, fcntl.LOCK_EX)
            os.write(fd, record)
            os.fsync(fd)
            if lfd >= 0:
                fcntl.flock(lfd, fcntl.LOCK_UN)
            lat.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        if lfd >= 0:
            os.close(lfd)
    return lat


def append_loop(vault: Vault, keys: Path, agent: str, n: int) -> list[float]:
    signer = identity.load_signer(vault, keys, agent)
    lat = []
    for i in range(n):
        t0 = time.perf_counter()
        log.append(vault, signer, channel="bench", type="note", summary=f"{SUMMARY} {i}", body=BODY)
        lat.append(time.perf_counter() - t0)
    return lat


def worker(argv: list[str]) -> None:
    """Subprocess body: wait for the start time, run one loop, print latencies as JSON."""
    kind, folder, keys, name, n, start = (
        argv[0],
        Path(argv[1]),
        Path(argv[2]),
        argv[3],
        int(argv[4]),
        float(argv[5]),
    )
    if kind == "append":
        vault = Vault(folder)
        identity.load_signer(vault, keys, name)  # warm: imports and key load happen before the start
    time.sleep(max(0.0, start - time.time()))
    t0 = time.time()
    if kind == "append":
        lat = append_loop(Vault(folder), keys, name, n)
    else:
        lat = raw_loop(folder / "raw8.bin", int(name), n, lock=folder / "raw8.lock")
    print(json.dumps({"lat": lat, "t0": t0, "t1": time.time()}))


def parallel(kind: str, folder: Path, keys: Path, names: list[str], n: int) -> tuple[float, list[float]]:
    start = time.time() + 1.5
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", kind, str(folder), str(keys), name, str(n), str(start)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    results = []
    for p in procs:
        out, _ = p.communicate()
        assert p.returncode == 0
        results.append(json.loads(out))
    wall = max(r["t1"] for r in results) - min(r["t0"] for r in results)
    lat = [x for r in results for x in r["lat"]]
    return len(lat) / wall, lat


def row(name: str, rate: float, lat: list[float], base: float | None) -> dict[str, object]:
    return {
        "case": name,
        "per_s": round(rate),
        "p50_ms": round(pct(lat, 0.5) * 1000, 3),
        "p99_ms": round(pct(lat, 0.99) * 1000, 3),
        "ratio_to_raw": round(rate / base, 2) if base else None,
    }


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=2000, help="appends per case and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="folder to work in (same disk as the vault)")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    base_dir = args.dir or RESULTS
    tmp = Path(tempfile.mkdtemp(prefix="bench-append-", dir=base_dir))
    try:
        keys = tmp / "keys"
        vault, _ = init(tmp / "vault")
        names = [f"w{i}" for i in range(8)]
        for name in names:
            identity.add(vault, keys, name)
        # the record size of an average entry
        append_loop(vault, keys, "w0", 50)
        ((_, seg),) = log.segment_files(vault)
        entry_size = max(1, seg.stat().st_size // 50)
        cases: dict[str, list[tuple[float, list[float]]]] = {
            k: [] for k in ("raw1", "append1", "raw8", "append8")
        }
        for _ in range(args.rounds):
            lat = raw_loop(tmp / "raw1.bin", entry_size, args.n)
            cases["raw1"].append((len(lat) / sum(lat), lat))
            t0 = time.perf_counter()
            lat = append_loop(vault, keys, "w0", args.n)
            cases["append1"].append((args.n / (time.perf_counter() - t0), lat))
            cases["raw8"].append(parallel("raw", tmp, keys, [str(entry_size)] * 8, args.n // 8))
            cases["append8"].append(parallel("append", vault.root, keys, names, args.n // 8))
        med = {k: statistics.median(r for r, _ in v) for k, v in cases.items()}
        lats = {k: [x for _, lat in v for x in lat] for k, v in cases.items()}
        rows = [
            row("raw write+fsync, 1 process", med["raw1"], lats["raw1"], None),
            row("signed append, 1 writer", med["append1"], lats["append1"], med["raw1"]),
            row("raw write+fsync, 8 processes, flock", med["raw8"], lats["raw8"], med["raw1"]),
            row("signed append, 8 writer processes", med["append8"], lats["append8"], med["raw8"]),
        ]
        from nexus.audit.verify_state import verify

        report = verify(vault)
        assert report.ok, [str(p) for p in report.problems][:5]
        print(f"record size {entry_size} bytes; {args.rounds} rounds x {args.n}; median rate of the rounds")
        print(f"{'case':<40} {'per s':>8} {'p50 ms':>8} {'p99 ms':>8} {'ratio':>7}")
        for r in rows:
            ratio = "" if r["ratio_to_raw"] is None else f"{r['ratio_to_raw']:.2f}"
            print(f"{r['case']:<40} {r['per_s']:>8} {r['p50_ms']:>8.3f} {r['p99_ms']:>8.3f} {ratio:>7}")
        print("ratios: append 1 against raw 1 process; append 8 against raw 8 processes under flock")
        out = {
            "record_bytes": entry_size,
            "n": args.n,
            "rounds": args.rounds,
            "rows": rows,
            "verified_entries": report.entries,
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (RESULTS / "bench_append.json").write_text(json.dumps(out, indent=2), encoding="utf-8")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
