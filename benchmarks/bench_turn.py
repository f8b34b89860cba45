"""What a turn costs an agent runtime (issue 9): the per-turn commands as whole processes, side by side
with `python -c pass`, and `nexus mcp` from spawn to its first tool answer.

    .venv/bin/python benchmarks/bench_turn.py [--runs 30]

Interleaved in one loop (baseline, session-start, prompt with nothing new, prompt with one new entry,
log append, brief, baseline, …) so every command sees the same disk and load. Both agents read as the
protocol asks: ella catches up on the 200 entries of history once, and lyra reads before she writes the
"one new entry" (until stop 11 neither did, so each of ella's entries raced with all 200 and each of
lyra's with ella's recent ones: 3,500 races, which every hook and brief read and the state saved);
reported as p50/p90 and the p50 ratio to the baseline (target: ≤ 4x). The hook commands run as the
runtimes run them: the installed `nexus-hook` script with the event JSON on stdin. Then `nexus mcp
--agent A` spawned over pipes: initialize, then a `brief` call, timed from spawn to the answer (target:
≤ 0.6 s; the stdio front answers it), side by side in the same loop with the SDK server alone
(`NEXUS_MCP_FRONT=sdk`: what `nexus mcp` was before the front) and `python -c "import mcp.server"`; and
a `resources/read` (which only the SDK answers: the front hands over first) timed the same way, front
and SDK alone. Then `-X importtime` of the quiet prompt hook, of the front's first answer and of the SDK
server's module. Nothing is asserted. JSON goes to benchmarks/results/bench_turn.json.
"""

from __future__ import annotations

import argparse
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
sys.path.insert(0, str(ROOT))

from harness import pct  # noqa: E402

from nexus.keys import identity  # noqa: E402
from nexus.ledger import cursors, log  # noqa: E402
from nexus.storage.vault import init  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def script(name: str) -> list[str]:
    path = Path(sysconfig.get_path("scripts")) / name
    module = {"nexus": "nexus", "nexus-hook": "nexus.surfaces.hooks"}[name]
    return [str(path)] if path.is_file() else [sys.executable, "-m", module]


def timed(cmd: list[str], env: dict[str, str], stdin: str = "") -> float:
    return timed_cpu(cmd, env, stdin)[0]


def timed_cpu(cmd: list[str], env: dict[str, str], stdin: str = "") -> tuple[float, float]:
    """Wall and CPU milliseconds (user + system, from the children's rusage) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        cmd, env=env, input=stdin.encode(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


BRIEF = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "brief", "arguments": {}}}
RESOURCE = {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "nexus://decisions"}}


def mcp_messages(request: dict[str, object]) -> list[dict[str, object]]:
    """What a client sends at once after spawning a server: initialize, initialized, ``request``."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    return [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LATEST_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        request,
    ]


def mcp_first_answer(cmd: list[str], env: dict[str, str], request: dict[str, object] = BRIEF) -> float:
    """Milliseconds from spawning the server to the answer of ``request`` (its first tool call,
    `brief`, unless another is given), sent right after initialize."""
    msgs = mcp_messages(request)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(("\n".join(json.dumps(m) for m in msgs) + "\n").encode())
    proc.stdin.flush()
    elapsed = -1.0
    for line in proc.stdout:
        msg = json.loads(line)
        if msg.get("id") == 2:
            elapsed = (time.perf_counter() - t0) * 1000
            assert "result" in msg, msg
            break
    proc.stdin.close()
    proc.wait(timeout=30)
    return elapsed


def importtime(cmd: list[str], env: dict[str, str], stdin: str = "", top: int = 8) -> list[list[object]]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *cmd],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            _s, cum, name = line.replace("import time:", "").split("|")
            if not name[1:].startswith(" "):  # top level only
                rows.append([name.strip(), round(int(cum) / 1000, 1)])
    return sorted(rows, key=lambda r: -float(str(r[1])))[:top]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--mcp-runs", type=int, default=10)
    parser.add_argument(
        "--before",
        type=Path,
        help="a checkout of an earlier nexus to run beside this one "
        "(`python -P -m` with that folder first on PYTHONPATH)",
    )
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-turn-", dir=RESULTS))
    try:
        keys = tmp / "keys"
        vault, _ = init(tmp / "vault")
        for name in ("ella", "lyra"):
            identity.add(vault, keys, name)
        lyra = identity.load_signer(vault, keys, "lyra")
        for i in range(200):  # a log with some history
            log.append(
                vault,
                lyra,
                channel="bench",
                type="question" if i % 20 == 0 else "note",
                summary=f"history entry {i}",
                body="detail " * 20,
            )
        env = dict(os.environ, NEXUS_VAULT=str(vault.root), NEXUS_HOME=str(keys))
        hook, nexus = script("nexus-hook"), script("nexus")
        event = json.dumps(
            {"session_id": "bench", "cwd": str(tmp), "hook_event_name": "UserPromptSubmit", "prompt": "go on"}
        )
        start_event = json.dumps({"session_id": "bench-start", "source": "startup"})
        subprocess.run(
            [*hook, "session-start", "--agent", "ella"],
            input=event.encode(),
            env=env,
            check=True,
            capture_output=True,
        )
        # ella catches up on the history the brief could not show (`nexus log read`), as the brief
        # tells her to: until then her cursor stays put and each of her entries races with all of it
        cursors.unread(vault, "ella")
        cmds: dict[str, tuple[list[str], str]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], ""),
            "nexus-hook session-start": ([*hook, "session-start", "--agent", "ella"], start_event),
            "nexus-hook prompt (nothing new)": ([*hook, "prompt", "--agent", "ella"], event),
            "nexus-hook prompt (1 new entry)": ([*hook, "prompt", "--agent", "ella"], event),
            "nexus log append": (
                [
                    *nexus,
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
                "",
            ),
            "nexus brief": ([*nexus, "brief", "--agent", "lyra"], ""),
        }
        if args.before:
            # -P: `python -m` run from the checkout would put it first on sys.path, ahead of --before
            old = [sys.executable, "-P", "-m"]
            cmds.update(
                {
                    "before: nexus-hook session-start": (
                        [*old, "nexus.surfaces.hooks", "session-start", "--agent", "ella"],
                        start_event,
                    ),
                    "before: nexus-hook prompt": (
                        [*old, "nexus.surfaces.hooks", "prompt", "--agent", "ella"],
                        event,
                    ),
                    "before: nexus log append": (
                        [
                            *old,
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
                        "",
                    ),
                    "before: nexus brief": ([*old, "nexus", "brief", "--agent", "lyra"], ""),
                }
            )
        before_env = dict(env, PYTHONPATH=str(args.before.resolve())) if args.before else env
        times: dict[str, list[float]] = {k: [] for k in cmds}
        cpus: dict[str, list[float]] = {k: [] for k in cmds}
        for _ in range(args.runs + 2):
            for name, (cmd, stdin) in cmds.items():
                if name.endswith("(1 new entry)"):  # lyra reads first, as an agent does before it writes
                    cursors.unread(vault, "lyra")
                    log.append(vault, lyra, channel="bench", type="note", summary="something new")
                elif name.endswith("(nothing new)"):  # settle what the previous round left new
                    subprocess.run(cmd, input=stdin.encode(), env=env, check=True, capture_output=True)
                wall, cpu = timed_cpu(cmd, before_env if name.startswith("before:") else env, stdin)
                times[name].append(wall)
                cpus[name].append(cpu)
        times = {k: v[2:] for k, v in times.items()}  # the first two rounds warm caches and .pyc files
        cpus = {k: v[2:] for k, v in cpus.items()}
        base = pct(times["python -c pass"], 0.5)
        cpu_base = pct(cpus["python -c pass"], 0.5)
        rows = []
        print(f"{args.runs} runs each, interleaved, {sys.executable}")
        print(f"{'command':<34} {'p50 ms':>8} {'p90 ms':>8} {'x pass':>7} {'cpu p50':>8} {'cpu x':>6}")
        for name, values in times.items():
            p50 = pct(values, 0.5)
            cpu50 = pct(cpus[name], 0.5)
            rows.append(
                {
                    "command": name,
                    "p50_ms": round(p50, 1),
                    "p90_ms": round(pct(values, 0.9), 1),
                    "ratio": round(p50 / base, 2),
                    "cpu_p50_ms": round(cpu50, 1),
                    "cpu_ratio": round(cpu50 / cpu_base, 2),
                }
            )
            print(
                f"{name:<34} {p50:>8.1f} {pct(values, 0.9):>8.1f} {p50 / base:>7.2f}"
                f" {cpu50:>8.1f} {cpu50 / cpu_base:>6.2f}"
            )
        mcp_cmd = [*nexus, "mcp", "--agent", "ella"]
        sdk_env = dict(env, NEXUS_MCP_FRONT="sdk")
        mcp: dict[str, list[float]] = {
            k: [] for k in ("front", "sdk", "front resource", "sdk resource", "import", "before")
        }
        for _ in range(args.mcp_runs):  # interleaved, like the per-turn commands
            mcp["front"].append(mcp_first_answer(mcp_cmd, env))
            mcp["sdk"].append(mcp_first_answer(mcp_cmd, sdk_env))
            mcp["front resource"].append(mcp_first_answer(mcp_cmd, env, RESOURCE))
            mcp["sdk resource"].append(mcp_first_answer(mcp_cmd, sdk_env, RESOURCE))
            mcp["import"].append(timed([sys.executable, "-c", "import mcp.server"], env))
            if args.before:
                mcp["before"].append(
                    mcp_first_answer(
                        [sys.executable, "-P", "-m", "nexus", "mcp", "--agent", "ella"], before_env
                    )
                )
        mcp50 = {k: pct(v, 0.5) for k, v in mcp.items() if v}
        print(
            f"\nnexus mcp, spawn to the first `brief` answer: p50 {mcp50['front']:.0f} ms, p90 "
            f"{pct(mcp['front'], 0.9):.0f} ms (the front); the SDK server alone p50 {mcp50['sdk']:.0f} ms "
            f"({mcp50['front'] / mcp50['sdk']:.2f}x); `import mcp.server` alone p50 {mcp50['import']:.0f} ms"
            + (f"; before: p50 {mcp50['before']:.0f} ms" if "before" in mcp50 else "")
        )
        print(
            f"nexus mcp, spawn to the first `resources/read` answer (the SDK's, after the hand-over): "
            f"p50 {mcp50['front resource']:.0f} ms; the SDK server alone p50 {mcp50['sdk resource']:.0f} ms "
            f"({mcp50['front resource'] / mcp50['sdk resource']:.2f}x)"
        )
        subprocess.run(
            [*hook, "prompt", "--agent", "ella"],
            input=event.encode(),
            env=env,
            check=True,
            capture_output=True,
        )  # settle, so the import profile is the quiet path's
        quiet_imports = importtime(["-m", "nexus.surfaces.hooks", "prompt", "--agent", "ella"], env, event)
        front_stdin = "".join(json.dumps(m) + "\n" for m in mcp_messages(BRIEF))
        front_imports = importtime(
            ["-m", "nexus", "mcp", "--agent", "ella"], dict(env, NEXUS_MCP_FRONT="front"), front_stdin
        )
        mcp_imports = importtime(["-c", "import nexus.surfaces.mcp_server"], env)
        print("quiet prompt hook, top-level imports (cumulative ms):", quiet_imports)
        print("nexus mcp's front to its first answer, top-level imports (cumulative ms):", front_imports)
        print("nexus.surfaces.mcp_server import, top-level imports (cumulative ms):", mcp_imports)
        report = {
            "rows": rows,
            "mcp_first_answer_ms": {
                "p50": round(mcp50["front"]),
                "p90": round(pct(mcp["front"], 0.9)),
                "sdk_alone_p50": round(mcp50["sdk"]),
                "ratio_to_sdk_alone": round(mcp50["front"] / mcp50["sdk"], 2),
                "before_p50": round(mcp50["before"]) if "before" in mcp50 else None,
            },
            "mcp_first_resource_ms": {
                "p50": round(mcp50["front resource"]),
                "sdk_alone_p50": round(mcp50["sdk resource"]),
            },
            "import_mcp_server_ms": round(mcp50["import"]),
            "imports": {
                "prompt (nothing new)": quiet_imports,
                "nexus mcp front, first answer": front_imports,
                "nexus.surfaces.mcp_server": mcp_imports,
            },
            "load_average": os.getloadavg(),
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (RESULTS / "bench_turn.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
