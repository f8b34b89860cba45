"""Entry format 2 beside format 1, side by side in one run: `nexus verify --full` and appends.

    .venv/bin/python benchmarks/bench_format.py --before PATH [--n 20000] [--rounds 5] [--appends 300]

``PATH`` holds the nexus that wrote format 1 (e.g. ``git archive`` of that commit). Two vaults of ``n``
entries by three agents (``bench_brief.generate``): one in format 1 (made by this code with
``version=1``; both codes read it), one in format 2. Rounds take turns, so all cases see the same load:

* ``verify --full`` of the format 1 vault by the code in PATH (the baseline);
* ``verify --full`` of the format 1 vault by this code (reading the older format got no slower);
* ``verify --full`` of the format 2 vault by this code (what a vault written from now on costs);
* ``appends`` appends in one process, by the code in PATH and by this code (each into a fresh vault).

Each: median wall seconds and CPU seconds (the process and its pool), and entries per CPU-second. The
segments' sizes and the machine text per entry of both vaults are printed too. JSON goes to
benchmarks/results/bench_format.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_brief import AGENTS, generate  # noqa: E402
from bench_costs import CPU, measure  # noqa: E402

from nexus.keys import identity  # noqa: E402
from nexus.storage.vault import init  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
APPEND = """
import sys, time
from pathlib import Path
from nexus.keys import identity
from nexus.ledger import log
from nexus.storage.vault import Vault
vault, keys, n = Vault(Path(sys.argv[1])), Path(sys.argv[2]), int(sys.argv[3])
signer = identity.load_signer(vault, keys, "ella")
for i in range(n):
    log.append(vault, signer, channel="bench", type="note", summary=f"benchmark entry {i}",
               body="A body of a couple of sentences, as agents write them.")
"""


def make(folder: Path, n: int, version: int) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    vault, _ = init(folder / "vault")
    for name in AGENTS:
        identity.add(vault, folder / "keys", name)
    identity.add(vault, folder / "keys", "sam", human=True)
    if n:
        generate(vault, folder / "keys", n, version=version)
    return folder


def environ(folder: Path, code: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_")}
    env.update(NEXUS_VAULT=str(folder / "vault"), NEXUS_HOME=str(folder / "keys"), PYTHONPATH=str(code))
    return env


def verify_full(folder: Path, code: Path, n: int) -> tuple[float, float]:
    work = Path(tempfile.mkdtemp(prefix="bench-format-", dir=RESULTS))
    try:
        shutil.copytree(folder, work / "v", symlinks=True)
        t, _rss, text = measure(
            [sys.executable, "-m", "nexus", "verify", "--full", "--json"], environ(work / "v", code), code
        )
        report = json.loads(text)
        assert report["ok"] and report["entries"] == n, report
        return t, CPU[0]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def appends(code: Path, count: int) -> tuple[float, float]:
    work = Path(tempfile.mkdtemp(prefix="bench-format-", dir=RESULTS))
    try:
        folder = make(work / "v", 0, 2)
        cmd = [sys.executable, "-c", APPEND, str(folder / "vault"), str(folder / "keys"), str(count)]
        t, _rss, _ = measure(cmd, environ(folder, code), code)
        return t, CPU[0]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def machine_text(folder: Path) -> dict[str, Any]:
    """Segment bytes, and the characters of Obsidian comments per entry (lines starting with ``%%``)."""
    size = comments = entries = 0
    for seg in (folder / "vault" / "log").glob("*.md"):
        data = seg.read_text(encoding="utf-8")
        size += len(data.encode())
        lines = [x for x in data.split("\n") if x.startswith("%%") and not x.startswith("%% nexus:segment")]
        comments += sum(len(x) for x in lines)
        entries += len(re.findall(r"^\*\*\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\*\* · ", data, re.M))
    return {"segment_bytes": size, "machine_chars_per_entry": round(comments / entries, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, required=True, help="a folder holding the nexus of format 1")
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--appends", type=int, default=300)
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    base = RESULTS / "format-vaults"
    v1, v2 = make(base / "v1", args.n, 1), make(base / "v2", args.n, 2)
    times: dict[str, list[tuple[float, float]]] = {}
    cases: dict[str, Callable[[], tuple[float, float]]] = {
        "verify_full_v1_by_before": lambda: verify_full(v1, args.before, args.n),
        "verify_full_v1_by_this": lambda: verify_full(v1, ROOT, args.n),
        "verify_full_v2_by_this": lambda: verify_full(v2, ROOT, args.n),
        "append_before": lambda: appends(args.before, args.appends),
        "append_this": lambda: appends(ROOT, args.appends),
    }
    for _ in range(args.rounds):
        for name, run in cases.items():
            times.setdefault(name, []).append(run())
    row: dict[str, Any] = {
        "n": args.n,
        "rounds": args.rounds,
        "appends": args.appends,
        "load": os.getloadavg()[0],
    }
    for name, got in times.items():
        wall, cpu = statistics.median(t for t, _ in got), statistics.median(c for _, c in got)
        count = args.appends if name.startswith("append") else args.n
        row[name] = {"s": round(wall, 2), "cpu_s": round(cpu, 2), "per_cpu_s": round(count / cpu)}
    row["v1_vault"], row["v2_vault"] = machine_text(v1), machine_text(v2)
    print(json.dumps(row, indent=2))
    (RESULTS / "bench_format.json").write_text(json.dumps(row, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
