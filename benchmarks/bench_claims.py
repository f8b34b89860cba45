"""What claims cost: the pre-tool hook as Claude Code runs it, side by side with the quiet prompt hook
and `python -c pass`; `nexus claim` and `nexus claim release` as whole processes; and a claim and a
release through the library (the check under the log lock and the durable append, Claims.md included).

    .venv/bin/python benchmarks/bench_claims.py [--runs 30]
    VENV/bin/python benchmarks/bench_claims.py   # an interpreter with nexus installed (not editable):
                                                 # its own copy and commands, as a user has them

The vault: 200 entries of history, 100 claims taken and released, and 20 active claims by lyra in the
project (so the hook folds and matches something). The hook runs as the runtime runs it (the installed
`nexus-hook` with the event JSON on stdin), for an edit of a path nobody holds (the case that must be
silent and fast, target p50 ≤ 50 ms), an edit of a path lyra holds (denied), and a tool that edits
nothing. Interleaved in one loop so every command sees the same disk and load. Nothing is asserted.
JSON goes to benchmarks/results/bench_claims.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("nexus") is None:  # (an interpreter with nexus installed uses its own copy)
    sys.path.insert(0, str(ROOT))

from harness import pct  # noqa: E402

from nexus.keys import identity  # noqa: E402
from nexus.ledger import cursors, log  # noqa: E402
from nexus.operations import claims  # noqa: E402
from nexus.operations.spec import Call  # noqa: E402
from nexus.settings import DEFAULTS  # noqa: E402
from nexus.storage.vault import init  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def script(name: str) -> list[str]:
    """The installed command (what a runtime runs), else the module through this interpreter."""
    path = Path(sysconfig.get_path("scripts")) / name
    module = {"nexus": "nexus", "nexus-hook": "nexus.surfaces.hooks"}[name]
    return [str(path)] if path.is_file() else [sys.executable, "-m", module]


def timed_cpu(cmd: list[str], env: dict[str, str], stdin: str = "") -> tuple[float, float]:
    """Wall and CPU milliseconds (user + system, from the children's rusage) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, input=stdin.encode(), check=True, capture_output=True)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-claims-", dir=RESULTS))
    try:
        keys = tmp / "keys"
        vault, _ = init(tmp / "vault")
        for name in ("ella", "lyra"):
            identity.add(vault, keys, name)
        project = tmp / "proj"
        (project / "src").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        lyra = identity.load_signer(vault, keys, "lyra")
        for i in range(200):
            log.append(vault, lyra, channel="bench", type="note", summary=f"history {i}", body="detail " * 20)
        as_lyra = Call(vault, agent="lyra", settings=DEFAULTS, keys=keys)
        as_ella = Call(vault, agent="ella", settings=DEFAULTS, keys=keys)
        for i in range(100):
            got = claims.claim(as_lyra, patterns=[f"old/{i}.py"], reason="history", project=str(project))
            claims.release(as_lyra, id=got.data["id"])
        for i in range(20):
            claims.claim(
                as_lyra, patterns=[f"src/held{i}/**"], reason="lyra's work", ttl="24h", project=str(project)
            )
        # the library: a claim and its release, each timed (ella, on a path nobody holds)
        lib_claim, lib_release = [], []
        for i in range(args.runs):
            t0 = time.perf_counter()
            got = claims.claim(as_ella, patterns=[f"src/lib{i}.py"], reason="bench", project=str(project))
            t1 = time.perf_counter()
            claims.release(as_ella, id=got.data["id"])
            lib_claim.append((t1 - t0) * 1000)
            lib_release.append((time.perf_counter() - t1) * 1000)
        # the hook's own work, in process (no interpreter start, no imports): the claims read back and
        # folded, the path matched
        from nexus.operations import edits

        free_edit = {"file_path": str(project / "src" / "free.py")}
        lib_hook = []
        for _ in range(args.runs * 5):
            t0 = time.perf_counter()
            edits.pre_tool(as_ella, session_id="b", tool_name="Edit", tool_input=free_edit, cwd=str(project))
            lib_hook.append((time.perf_counter() - t0) * 1000)
        env = dict(os.environ, NEXUS_VAULT=str(vault.root), NEXUS_HOME=str(keys))
        hook, nexus = script("nexus-hook"), script("nexus")
        prompt_event = json.dumps({"session_id": "bench", "cwd": str(project), "prompt": "go on"})
        subprocess.run(
            [*hook, "session-start", "--agent", "ella"],
            input=prompt_event.encode(),
            env=env,
            check=True,
            capture_output=True,
        )
        cursors.unread(vault, "ella")

        def edit(path: Path, tool: str = "Edit") -> str:
            return json.dumps(
                {
                    "session_id": "bench",
                    "cwd": str(project),
                    "hook_event_name": "PreToolUse",
                    "tool_name": tool,
                    "tool_input": {"file_path": str(path), "old_string": "a", "new_string": "b"},
                }
            )

        pre = [*hook, "pre-tool", "--agent", "ella"]
        cmds: dict[str, tuple[list[str], str]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], ""),
            "nexus-hook prompt (nothing new)": ([*hook, "prompt", "--agent", "ella"], prompt_event),
            "nexus-hook pre-tool (a free path)": (pre, edit(project / "src" / "free.py")),
            "nexus-hook pre-tool (held by lyra: denied)": (pre, edit(project / "src" / "held3" / "x.py")),
            "nexus-hook pre-tool (Bash: not an edit)": (pre, edit(project / "src" / "free.py", "Bash")),
        }
        times: dict[str, list[float]] = {name: [] for name in cmds}
        cpu: dict[str, list[float]] = {name: [] for name in cmds}
        times["nexus claim"], times["nexus claim release"] = [], []
        for i in range(args.runs):
            for name, (cmd, stdin) in cmds.items():
                wall, used = timed_cpu(cmd, env, stdin)
                times[name].append(wall)
                cpu[name].append(used)
            t0 = time.perf_counter()
            out = subprocess.run(
                [
                    *nexus,
                    "claim",
                    f"src/cli{i}.py",
                    "--agent",
                    "ella",
                    "--reason",
                    "bench",
                    "--project",
                    str(project),
                    "--json",
                ],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            times["nexus claim"].append((time.perf_counter() - t0) * 1000)
            cid = json.loads(out.stdout)["id"]
            times["nexus claim release"].append(
                timed_cpu([*nexus, "claim", "release", cid, "--agent", "ella"], env)[0]
            )
        base = pct(times["python -c pass"], 0.5)
        base_cpu = pct(cpu["python -c pass"], 0.5)
        rows = {
            name: {
                "p50_ms": round(pct(v, 0.5), 1),
                "p90_ms": round(pct(v, 0.9), 1),
                "x_python": round(pct(v, 0.5) / base, 2),
            }
            for name, v in times.items()
        }
        for name, v in cpu.items():  # CPU (user + system) of the process: less moved by the machine's load
            rows[name]["cpu_p50_ms"] = round(pct(v, 0.5), 1)
            rows[name]["cpu_x_python"] = round(pct(v, 0.5) / base_cpu, 2)
        rows["claim (library, in process)"] = {
            "p50_ms": round(pct(lib_claim, 0.5), 2),
            "p90_ms": round(pct(lib_claim, 0.9), 2),
        }
        rows["pre-tool hook's work (library, in process)"] = {
            "p50_ms": round(pct(lib_hook, 0.5), 2),
            "p90_ms": round(pct(lib_hook, 0.9), 2),
        }
        rows["release (library, in process)"] = {
            "p50_ms": round(pct(lib_release, 0.5), 2),
            "p90_ms": round(pct(lib_release, 0.9), 2),
        }
        for name, row in rows.items():
            print(
                f"{name:45} p50 {row['p50_ms']:7.1f} ms   p90 {row['p90_ms']:7.1f} ms"
                + (f"   cpu p50 {row['cpu_p50_ms']:6.1f} ms" if "cpu_p50_ms" in row else "")
                + (f"   {row['x_python']:.2f}x python" if "x_python" in row else "")
            )
        (RESULTS / "bench_claims.json").write_text(json.dumps({"runs": args.runs, "results": rows}, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
