"""Checkpoint benchmark: `nexus checkpoint save` as a whole process against `python -c pass`.

    .venv/bin/python benchmarks/bench_checkpoint.py [--runs 60] [--json]

Runs the two side by side, interleaved (baseline, save, baseline, save, …) so both see the same disk
and load, and reports p50/p90/max for each and the p50 ratio (target of issue 4: within 10×). Also
times the library call ``checkpoints.save`` in-process (the durable write path alone: history append +
fsync, temp file + fsync + rename + fsync of the folder) and ``brief`` with its decisions and checkpoint
slots filled, and lists the heaviest modules the save command imports.
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
from nexus.project import checkpoints, decisions
from nexus.storage.vault import init


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nexus-bench-cp-"))
    keys = tmp / "keys"
    vault, _ = init(tmp / "vault")
    for name in ("ella", "lyra"):
        identity.add(vault, keys, name)
    signer = identity.load_signer(vault, keys, "ella")
    for i in range(20):  # a realistic register for the brief's slot
        decisions.decide(vault, signer, title=f"Decision {i}", decision=f"We do thing {i}.", rationale="Why.")
    env = dict(os.environ, NEXUS_VAULT=str(vault.root), NEXUS_HOME=str(keys))
    py = sys.executable
    base_cmd = [py, "-c", "pass"]
    save_cmd = [
        py,
        "-m",
        "nexus",
        "checkpoint",
        "save",
        "--agent",
        "ella",
        "--task",
        "Port the parser",
        "--step",
        "step",
        "--next",
        "next step",
        "--files",
        "parser/lexer.py",
    ]
    brief_cmd = [py, "-m", "nexus", "brief", "--agent", "lyra", "--peek"]
    for _ in range(3):  # warm the page cache and .pyc files
        timed(base_cmd, env), timed(save_cmd, env), timed(brief_cmd, env)
    base, save, brief = [], [], []
    for _ in range(args.runs):
        base.append(timed(base_cmd, env))
        save.append(timed(save_cmd, env))
        brief.append(timed(brief_cmd, env))
    lib = []
    for i in range(200):
        t0 = time.perf_counter()
        checkpoints.save(
            vault, "ella", task="Port the parser", step=f"step {i}", next="next", files=("a.py",)
        )
        lib.append((time.perf_counter() - t0) * 1000)
    imports = subprocess.run(
        [py, "-X", "importtime", *save_cmd[1:]], env=env, capture_output=True, text=True, check=True
    ).stderr.splitlines()
    heavy = sorted(
        (
            (int(line.split("|")[1]), line.split("|")[2].strip())
            for line in imports
            if line.startswith("import time:") and line.split("|")[1].strip().isdigit()
        ),
        reverse=True,
    )[:6]
    result = {
        "runs": args.runs,
        "python_c_pass_ms": {"p50": pct(base, 0.5), "p90": pct(base, 0.9), "max": max(base)},
        "checkpoint_save_ms": {"p50": pct(save, 0.5), "p90": pct(save, 0.9), "max": max(save)},
        "brief_with_slots_ms": {"p50": pct(brief, 0.5), "p90": pct(brief, 0.9), "max": max(brief)},
        "save_ratio_p50": pct(save, 0.5) / pct(base, 0.5),
        "brief_ratio_p50": pct(brief, 0.5) / pct(base, 0.5),
        "library_save_ms": {"p50": statistics.median(lib), "p99": pct(lib, 0.99)},
        "heaviest_imports_us": [{"module": m, "cumulative_us": us} for us, m in heavy],
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        b, s, r = result["python_c_pass_ms"], result["checkpoint_save_ms"], result["brief_with_slots_ms"]
        print(
            f"python -c pass          p50 {b['p50']:6.1f} ms  p90 {b['p90']:6.1f} ms  max {b['max']:6.1f} ms"
        )
        print(
            f"nexus checkpoint save   p50 {s['p50']:6.1f} ms  p90 {s['p90']:6.1f} ms  max {s['max']:6.1f} ms"
            f"   ratio p50 {result['save_ratio_p50']:.1f}x (target <= 10x)"
        )
        print(
            f"nexus brief (20 decisions, checkpoint)  p50 {r['p50']:6.1f} ms"
            f"  ratio {result['brief_ratio_p50']:.1f}x"
        )
        lib_ms = result["library_save_ms"]
        print(f"checkpoints.save in-process  p50 {lib_ms['p50']:.2f} ms  p99 {lib_ms['p99']:.2f} ms")
        print("heaviest imports of the save command (cumulative µs):")
        for item in result["heaviest_imports_us"]:
            print(f"  {item['cumulative_us']:>8}  {item['module']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
