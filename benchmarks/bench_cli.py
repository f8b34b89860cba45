"""What the per-turn CLI commands cost as whole processes (what an agent without MCP pays each turn),
in CPU and wall time, beside the floor of any Python process (`python -c pass`):

    .venv/bin/python benchmarks/bench_cli.py [--runs 40] [--against OTHER/.venv/bin/python]

Commands, interleaved run by run, in a lived-in vault (``bench_hooks.lived_in``: 50 entries by another
agent, a decision, a checkpoint and a claim): ``nexus brief``, ``nexus log read``, ``nexus log append``
(an entry of its own each run). CPU is user + system of the process (``getrusage``), which moves far
less with the machine's load than wall time. ``--against``: another checkout's ``nexus`` too (main's,
say), each command interleaved with this one's on its own copy of the vault (two checkouts sharing one
would each invalidate the other's derived caches, such as the scan flags keyed by the rule files'
stamps, and both would pay for rebuilding them at every run), named with a trailing ``[against]``.

Then ``python -X importtime`` of ``log append`` and ``log read``: the heaviest imports, and whether any
heavy module (YAML, frontmatter, Whoosh, watchdog, markdown-it, MCP, portalocker) is on the path.
Bytecode is written and reused, as in an installed nexus. Nothing is asserted. JSON goes to
benchmarks/results/bench_cli.json.
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

from bench_hooks import lived_in  # noqa: E402
from harness import installed_env, measured, pct  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
HEAVY = ("yaml", "frontmatter", "whoosh", "watchdog", "markdown_it", "mcp", "portalocker", "pydantic")


def imports(cmd: list[str], env: dict[str, str]) -> list[tuple[str, int, int]]:
    """(module, self µs, cumulative µs) from -X importtime of ``cmd`` (a script beside its interpreter)."""
    python = str(Path(cmd[0]).parent / "python")
    proc = subprocess.run(
        [python, "-X", "importtime", *cmd], env=env, capture_output=True, text=True, check=True
    )
    out = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum_us, name = (p for p in line.replace("import time:", "").split("|"))
        name = name.rstrip()[1:]  # keep the indentation that shows nesting
        out.append((name, int(self_us), int(cum_us)))
    return out


def commands(nexus: str) -> dict[str, list[str]]:
    """The per-turn commands of one checkout's ``nexus``."""
    return {
        "nexus brief": [nexus, "brief", "--agent", "ella"],
        "nexus log read": [nexus, "log", "read", "--agent", "ella"],
        "nexus log append": [
            *[nexus, "log", "append", "--agent", "ella", "--channel", "bench", "--type", "note"],
            *["--summary", "a benchmark entry", "--body", "a body"],
        ],
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument(
        "--against",
        metavar="PYTHON",
        help="another nexus's interpreter (a checkout's .venv/bin/python): its commands run interleaved"
        " with these on the same vault, named with a trailing [against]",
    )
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    programs = {"": str(Path(sys.executable).parent / "nexus")}
    if args.against:
        programs[" [against]"] = str(Path(args.against).parent / "nexus")
    with tempfile.TemporaryDirectory(prefix="nexus-bench-cli-") as tmp:
        _, _, project = lived_in(Path(tmp) / "home")
        base = installed_env(dict(os.environ))
        envs = {}
        for tag in programs:  # a copy of the vault and the keys for each checkout
            root = (
                Path(tmp) / "home"
                if not tag
                else Path(shutil.copytree(Path(tmp) / "home", Path(tmp) / "other"))
            )
            envs[tag] = {**base, "NEXUS_VAULT": str(root / "vault"), "NEXUS_HOME": str(root / "keys")}
        env = envs[""]
        cmds = {"python -c pass (the floor)": [sys.executable, "-c", "pass"]}
        mine = {tag: commands(program) for tag, program in programs.items()}
        cmds.update({name + tag: mine[tag][name] for name in mine[""] for tag in programs})
        env_of = {name: envs[" [against]" if name.endswith("[against]") else ""] for name in cmds}
        for name, cmd in cmds.items():  # bytecode written, caches warm
            subprocess.run(cmd, env=env_of[name], cwd=project, capture_output=True, check=True)
        cpu: dict[str, list[float]] = {k: [] for k in cmds}
        wall: dict[str, list[float]] = {k: [] for k in cmds}
        for _ in range(args.runs):
            for name, cmd in cmds.items():
                w, c, done = measured(cmd, env=env_of[name], cwd=project, capture_output=True)
                assert done.returncode == 0, done.stderr
                wall[name].append(w)
                cpu[name].append(c)
        report: dict[str, object] = {
            "runs": args.runs,
            "ms": {name: {"cpu_p50": pct(cpu[name], 0.5), "wall_p50": pct(wall[name], 0.5)} for name in cmds},
        }
        print(f"each command alone, {args.runs} runs interleaved (p50; CPU = user + system of the process)")
        floor = pct(cpu["python -c pass (the floor)"], 0.5)
        for name in cmds:
            c = pct(cpu[name], 0.5)
            print(
                f"  {name:32} CPU {c:6.1f} ms ({c / floor:4.1f}x the floor)"
                f"   wall {pct(wall[name], 0.5):6.1f} ms"
            )
        for name in ("nexus log append", "nexus log read"):
            mods = imports(mine[""][name], env)
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
