"""Memory benchmark: `nexus memory add` and `nexus brief` (with its memory slot) as whole processes,
side by side with `python -c pass`, plus the in-process write path and 4 concurrent writers.

    .venv/bin/python benchmarks/bench_memory.py [--runs 30] [--json]

Interleaved runs (baseline, command, baseline, command, …) so both see the same disk and load; reports
p50/p90 and the p50 ratio against the baseline. In-process: ``memory.add`` (lock, re-read, scan,
atomic replace + fsyncs, dates sidecar), the safety scan of a 2,000-character entry, a snapshot built
from scratch and one served from the cache. Concurrency: 4 processes adding 50 entries each to USER.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import pct, timed

from nexus.keys import identity
from nexus.memory import bounded as memory
from nexus.memory import scan
from nexus.memory import snapshot as frozen
from nexus.storage.vault import init

WRITER = """
import sys
from pathlib import Path
from nexus.memory import bounded as memory
from nexus.storage.vault import Vault
v = Vault(Path(sys.argv[1]))
for i in range(int(sys.argv[3])):
    memory.add(v, "user", None, f"writer {sys.argv[2]} entry {i}", limit=1_000_000)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nexus-bench-memory-"))
    keys = tmp / "keys"
    vault, _ = init(tmp / "vault")
    identity.add(vault, keys, "ella")
    env = dict(os.environ, NEXUS_VAULT=str(vault.root), NEXUS_HOME=str(keys))
    py = [sys.executable]
    for i in range(20):  # a realistic, half-full memory
        memory.add(
            vault, "memory", "ella", f"Fact number {i}: the CI box has {i} cores and runs tests", limit=2200
        )
    out: dict[str, object] = {}

    base, add, brief = [], [], []
    for i in range(args.runs):
        base.append(timed([*py, "-c", "pass"], env))
        add.append(
            timed(
                [
                    *py,
                    "-m",
                    "nexus",
                    "memory",
                    "add",
                    "--target",
                    "user",
                    "--content",
                    f"bench user fact {i}",
                ],
                env,
            )
        )
        brief.append(timed([*py, "-m", "nexus", "brief", "--agent", "ella", "--peek"], env))
    runs = (("python -c pass", base), ("nexus memory add", add), ("nexus brief (memory slot)", brief))
    for name, vals in runs:
        out[name] = {
            "p50_ms": round(statistics.median(vals), 1),
            "p90_ms": round(pct(vals, 0.9), 1),
            "ratio_p50": round(statistics.median(vals) / statistics.median(base), 2),
        }

    lat = []
    for i in range(200):
        t = time.perf_counter()
        memory.add(vault, "user", None, f"in-process fact {i}", limit=1_000_000)
        lat.append((time.perf_counter() - t) * 1000)
    out["memory.add in-process"] = {
        "p50_ms": round(statistics.median(lat), 2),
        "p99_ms": round(pct(lat, 0.99), 2),
    }

    text = "An ordinary memory entry about builds, tests and deploys. " * 35
    scan.findings(text)
    t = time.perf_counter()
    for _ in range(200):
        scan.findings(text[:2000])
    out["scan 2,000 chars"] = {"ms": round((time.perf_counter() - t) * 1000 / 200, 3)}

    t = time.perf_counter()
    for _ in range(50):
        frozen.snapshot(vault, "ella", memory_limit=2200, user_limit=1_000_000)
    out["snapshot (scan every entry)"] = {"ms": round((time.perf_counter() - t) * 1000 / 50, 2)}
    frozen.cached_snapshot(vault, "ella", memory_limit=2200, user_limit=1_000_000)
    t = time.perf_counter()
    for _ in range(200):
        frozen.cached_snapshot(vault, "ella", memory_limit=2200, user_limit=1_000_000)
    out["snapshot (cache hit)"] = {"ms": round((time.perf_counter() - t) * 1000 / 200, 3)}

    (vault.root / "USER.md").unlink()
    per = 50
    t = time.perf_counter()
    procs = [subprocess.Popen([*py, "-c", WRITER, str(vault.root), str(w), str(per)]) for w in range(4)]
    for p in procs:
        p.wait()
    dt = time.perf_counter() - t
    got = memory.read(vault.root / "USER.md")
    out["4 writers x 50 adds to USER.md"] = {
        "entries": len(got),
        "expected": 4 * per,
        "adds_per_s": round(4 * per / dt, 1),
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            print(f"{k:<34} {v}")


if __name__ == "__main__":
    main()
