"""`nexus log append` and `nexus log read` as whole processes, against `python -c pass`.

    .venv/bin/python benchmarks/bench_cli.py [--runs 40]

The three commands run interleaved (baseline, append, read, baseline, …) with the same interpreter, so
they see the same disk and load. Reported: p50/p90 wall time of each and the p50 ratio to the baseline
(target of issue 2: within 8x). Then ``python -X importtime`` of both commands: the heaviest imports,
and whether any heavy module (YAML, frontmatter, Whoosh, watchdog, markdown-it, MCP, portalocker) is
on the path. Nothing is asserted. JSON goes to benchmarks/results/bench_cli.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import pct, timed  # noqa: E402

from nexus.keys import identity  # noqa: E402
from nexus.storage.vault import init  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
HEAVY = ("yaml", "frontmatter", "whoosh", "watchdog", "markdown_it", "mcp", "portalocker", "pydantic")


def imports(cmd: list[str], env: dict[str, str]) -> list[tuple[str, int, int]]:
    """(module, self µs, cumulative µs) from -X importtime, top-level packages only."""
    proc = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]], env=env, capture_output=True, text=True, check=True
    )
    out = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum_us, name = (p for p in line.replace("import time:", "").split("|"))
        name = name.rstrip()[1:]  # keep the indentation that shows nesting
        out.append((name, int(self_us), int(cum_us)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-cli-", dir=RESULTS))
    try:
        keys = tmp / "keys"
        vault, _ = init(tmp / "vault")
        for name in ("ella", "lyra"):
            identity.add(vault, keys, name)
        env = dict(os.environ, NEXUS_VAULT=str(vault.root), NEXUS_HOME=str(keys))
        py = sys.executable
        cmds = {
            "python -c pass": [py, "-c", "pass"],
            "nexus log append": [
                py,
                "-m",
                "nexus",
                "log",
                "append",
                "--agent",
                "ella",
                "--channel",
                "bench",
                "--type",
                "note",
                "--summary",
                "a benchmark entry",
                "--body",
                "a body",
            ],
            "nexus log read": [py, "-m", "nexus", "log", "read", "--agent", "lyra"],
        }
        for cmd in cmds.values():  # warm the page cache and .pyc files
            timed(cmd, env)
        times: dict[str, list[float]] = {k: [] for k in cmds}
        for _ in range(args.runs):
            for name, cmd in cmds.items():
                times[name].append(timed(cmd, env))
        base = pct(times["python -c pass"], 0.5)
        rows = []
        print(f"{args.runs} runs each, interleaved, {py}")
        print(f"{'command':<22} {'p50 ms':>8} {'p90 ms':>8} {'x pass':>7}")
        for name, values in times.items():
            p50 = pct(values, 0.5)
            rows.append(
                {
                    "command": name,
                    "p50_ms": round(p50, 1),
                    "p90_ms": round(pct(values, 0.9), 1),
                    "ratio": round(p50 / base, 2),
                }
            )
            print(f"{name:<22} {p50:>8.1f} {pct(values, 0.9):>8.1f} {p50 / base:>7.2f}")
        report: dict[str, object] = {"rows": rows}
        for name in ("nexus log append", "nexus log read"):
            mods = imports(cmds[name], env)
            names = {m.strip() for m, _, _ in mods}
            heavy = sorted({h for h in HEAVY for m in names if m == h or m.startswith(h + ".")})
            total = sum(s for _, s, _ in mods) / 1000
            top = sorted((m for m in mods if not m[0].startswith(" ")), key=lambda m: -m[2])[:8]
            crypto = "cryptography" in names
            print(
                f"\n{name}: {len(mods)} modules imported, {total:.1f} ms in imports; heavy modules: "
                f"{', '.join(heavy) or 'none'}; cryptography {'imported' if crypto else 'not imported'}"
            )
            print(
                "  top-level imports by cumulative time: "
                + ", ".join(f"{m.strip()} {c / 1000:.1f} ms" for m, _, c in top)
            )
            report[name] = {
                "modules": len(mods),
                "import_ms": round(total, 1),
                "heavy": heavy,
                "cryptography": crypto,
                "top": [[m.strip(), round(c / 1000, 1)] for m, _, c in top],
            }
        report["when"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        (RESULTS / "bench_cli.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
