"""How soon `nexus mcp` answers what a runtime waits for before its first model request, spawned over
pipes as a runtime spawns it, side by side with a baseline install, interleaved run by run:

    .venv/bin/python benchmarks/bench_mcp_start.py [--runs 30] [--baseline /other/.venv/bin/nexus] [--sdk]

(``--sdk``: also the MCP SDK's server alone, ``NEXUS_MCP_FRONT=sdk``.)

- **Claude Code's opening** (MCP 2026-07-28): `server/discover`, then `tools/list`, each in the envelope;
- **Codex's opening** (the handshake): `initialize`, `notifications/initialized`, then `tools/list`.

For each program: milliseconds from spawn to the first answer and to the `tools/list` answer (written
as soon as the previous answer arrives, as the clients do), and the CPU (user+sys) of the whole
process, which then reads EOF and exits; beside `python -c pass` spawned the same way (the floor).
The load average is printed before and after. Nothing is asserted. JSON goes to
benchmarks/results/bench_mcp_start.json.
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
NEXUS = Path(sys.executable).parent / "nexus"
MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
OPENINGS: dict[str, list[dict[str, Any]]] = {
    "Claude Code (server/discover)": [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": MODERN}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": MODERN}},
    ],
    "Codex (initialize)": [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "codex-mcp-client", "title": "Codex", "version": "0.171.0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {"progressToken": 0}}},
    ],
}


def spawn(
    command: list[str], env: dict[str, str], messages: list[dict[str, Any]]
) -> tuple[float, float, float]:
    """Milliseconds from spawn to the first answer and to the last; CPU milliseconds of the process."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers: list[float] = []
    for message in messages:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
        if "id" in message:
            line = proc.stdout.readline()
            answers.append((time.perf_counter() - start) * 1000)
            assert b'"result"' in line, line
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stdout.close()
    return answers[0], answers[-1], (usage.ru_utime + usage.ru_stime) * 1000


def floor() -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    _, _, usage = os.wait4(proc.pid, 0)
    return (time.perf_counter() - start) * 1000, (usage.ru_utime + usage.ru_stime) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument(
        "--baseline", type=Path, help="another install's `nexus` program, measured beside this one"
    )
    ap.add_argument("--sdk", action="store_true", help="also the SDK server alone (NEXUS_MCP_FRONT=sdk)")
    args = ap.parse_args()
    programs = {"this": NEXUS, **({"baseline": args.baseline} if args.baseline else {})}
    if args.sdk:
        programs["SDK server alone"] = NEXUS
    load = [os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="nexus-bench-mcp-") as tmp:
        vault, keys = Path(tmp) / "vault", Path(tmp) / "keys"
        base = {**os.environ, "NEXUS_HOME": str(keys)}
        base.pop("PYTHONDONTWRITEBYTECODE", None)  # (every start would recompile nexus)
        subprocess.run([str(NEXUS), "init", str(vault)], env=base, check=True, capture_output=True)
        subprocess.run(
            [str(NEXUS), "--vault", str(vault), "agent", "add", "ella"],
            env=base,
            check=True,
            capture_output=True,
        )
        env = {**base, "NEXUS_VAULT": str(vault)}
        found: dict[str, dict[str, list[float]]] = {}
        for _ in range(args.runs):
            for opening, messages in OPENINGS.items():
                for name, program in programs.items():
                    mode = {"NEXUS_MCP_FRONT": "sdk"} if name == "SDK server alone" else {}
                    first, last, cpu = spawn(
                        [str(program), "mcp", "--agent", "ella"], {**env, **mode}, messages
                    )
                    row = found.setdefault(f"{name}: {opening}", {"first": [], "tools_list": [], "cpu": []})
                    row["first"].append(first)
                    row["tools_list"].append(last)
                    row["cpu"].append(cpu)
            wall, cpu = floor()
            row = found.setdefault("python -c pass", {"first": [], "tools_list": [], "cpu": []})
            row["first"].append(wall)
            row["cpu"].append(cpu)
    load.append(os.getloadavg())
    out: dict[str, Any] = {
        "runs": args.runs,
        "load_average_before_after": load,
        "programs": {k: str(v) for k, v in programs.items()},
    }
    print(
        f"{args.runs} runs, interleaved; load average {load[0][0]:.2f} before, {load[1][0]:.2f} after "
        "(p50 / min)"
    )
    for name, row in found.items():
        out[name] = {k: {"p50": statistics.median(v), "min": min(v)} for k, v in row.items() if v}
        r = out[name]
        tools = (
            f", tools/list answered {r['tools_list']['p50']:5.1f} / {r['tools_list']['min']:5.1f} ms"
            if "tools_list" in r
            else ""
        )
        print(
            f"{name:45s} first answer {r['first']['p50']:5.1f} / {r['first']['min']:5.1f} ms{tools}, "
            f"CPU {r['cpu']['p50']:5.1f} / {r['cpu']['min']:5.1f} ms"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_mcp_start.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
