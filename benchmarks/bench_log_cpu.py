"""CPU time of the log's incremental readers and its writer, this code beside an earlier checkout.

    .venv/bin/python benchmarks/bench_log_cpu.py [--n 20000] [--rounds 2] [--before CHECKOUT]

Each measurement runs in a process of its own on a vault generated as ``bench_brief.py`` generates
one (``--n`` entries by three agents, decisions among them): the derived coordination state rebuilt
from the log, the view ``nexus brief`` reads when nothing changed, an append followed by that view
(the state refreshed and saved), an append by a long-lived and by a fresh writer, an append followed
by the other agent's read since its cursor, and ``tail -n 10``. Times are ``time.process_time``
medians (this process's CPU only), so other processes on a loaded machine barely move them. With
``--before``, the same measurements run from that checkout (its own code, generator and derived file
shapes) in alternating rounds. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MEASURE = r"""
import json, shutil, statistics, sys, tempfile, time
from pathlib import Path
tree, n = Path(sys.argv[1]), int(sys.argv[2])
sys.path[:0] = [str(tree), str(tree / "benchmarks")]
import bench_brief
from nexus.team import coordination
from nexus.keys import identity
from nexus.ledger import log
from nexus.settings import DEFAULT_ACK_TYPES
from nexus.storage.vault import init
tmp = Path(tempfile.mkdtemp(prefix="bench-log-cpu-"))
try:
    keys = tmp / "keys"
    vault, _ = init(tmp / "vault")
    for name in bench_brief.AGENTS:
        identity.add(vault, keys, name)
    identity.add(vault, keys, "sam", human=True)
    bench_brief.generate(vault, keys, n)
    ella = identity.load_signer(vault, keys, "ella")
    log.append(vault, ella, channel="b", type="note", summary="warm")
    log.unread(vault, "lyra")
    log._WRITERS.clear()
    args = (DEFAULT_ACK_TYPES, 60.0)

    def cpu(f, k):
        out = []
        for _ in range(k):
            t = time.process_time()
            f()
            out.append((time.process_time() - t) * 1000)
        return round(statistics.median(out), 3)

    def cold():
        shutil.rmtree(vault.state / "coord", ignore_errors=True)
        coordination.refresh(vault, *args)

    def append(summary="x"):
        log.append(vault, ella, channel="b", type="note", summary=summary)

    def fresh():
        log._WRITERS.clear()
        append()

    def then_read():
        append()
        assert len(log.unread(vault, "lyra")) == 1

    res = {
        "coordination rebuilt from the log": cpu(cold, 3),
        "coordination view, nothing new": cpu(lambda: coordination.view(vault, "lyra", *args), 100),
        "append + coordination view": cpu(lambda: (append(), coordination.view(vault, "lyra", *args)), 100),
        "append, long-lived writer": cpu(append, 200),
        "append, fresh writer": cpu(fresh, 100),
    }
    log.unread(vault, "lyra")
    res["append + lyra reads it"] = cpu(then_read, 100)
    res["tail -n 10"] = cpu(lambda: log.tail(vault, 10), 100)
    print(json.dumps(res))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
"""


def measure(tree: Path, n: int) -> dict[str, float]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [sys.executable, "-c", MEASURE, str(tree), str(n)],
        env=env,
        cwd=str(tree),
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--before", type=Path, help="an earlier checkout to measure beside this one")
    args = parser.parse_args()
    trees = {"this": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in reversed(trees.items()):
            runs[name].append(measure(tree, args.n))
    print(f"CPU ms (process_time), median per call; {args.n} entries; best of {args.rounds} rounds")
    keys = list(runs["this"][0])
    print(f"{'':40} {'this':>10}" + (f" {'before':>10} {'ratio':>7}" if args.before else ""))
    out = {}
    for key in keys:
        this = min(r[key] for r in runs["this"])
        line = f"{key:40} {this:10.3f}"
        out[key] = {"this": this}
        if args.before:
            before = min(r[key] for r in runs["before"])
            line += f" {before:10.3f} {this / before if before else 0:7.2f}"
            out[key]["before"] = before
        print(line)
    results = ROOT / "benchmarks" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "bench_log_cpu.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
