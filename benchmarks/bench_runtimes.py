"""What nexus costs a person using a real agent runtime (Claude Code 2.1.332), measured in the
end-to-end harness (tests/e2e/: the pinned runtime, a scripted Anthropic server on 127.0.0.1):

    .venv/bin/python benchmarks/bench_runtimes.py [--runs 8] [--turns 4] [--baseline OTHER/.venv/bin/nexus]

Side by side in one loop, interleaved so all see the same load:

- **start**: time from starting `claude -p` to its first model request, in a project without nexus
  and in the same project wired by `nexus setup claude-code` (target: nexus adds at most 150 ms), and
  in two halves of the wiring, to tell what the first request waits for: the hooks alone (no
  `.mcp.json`) and the MCP server alone (no hooks); with the CPU the whole `claude -p` run took (its
  processes and theirs: Claude Code, the hooks, `nexus mcp`), which a busy machine inflates far less
  than wall time;
- **the warm hook server**: the wired start three ways: its hooks each in their own process
  (``NEXUS_HOOK_SERVER=off``), with no server running when `claude -p` starts (cold: SessionStart
  runs in process and starts the server, UserPromptSubmit right after may use it), and with the
  server already running (warm: left by the previous run, a first session for the first one); the
  halves run with it off;
- **per turn**: in the wired project, one session of ``--turns`` prompts, the hooks in their own
  processes and served warm (stream-json input); the
  duration of each nexus hook as Claude Code itself logs it (`--debug-file`: "Hooks: EVENT [...]
  finished with status 0 (N ms)"), p50 of the hooks a turn runs (UserPromptSubmit, and Stop where
  it is wired) (target: at most 100 ms);
- **MCP first answer**: `nexus mcp` spawned over pipes, time from spawn to its answer to Claude Code's
  opening `server/discover`, with the stdio front (the default) and with the SDK server alone
  (`NEXUS_MCP_FRONT=sdk`) (`bench_mcp_start.py` times it beside another install);
- `--baseline`: the start also with another install's `nexus` wired (and its halves), interleaved;
  `--turns 0` leaves out the sessions.

Nothing is asserted. JSON goes to benchmarks/results/bench_runtimes.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from e2e.conftest import BIN, runtime_env  # noqa: E402
from e2e.model_anthropic import AnthropicModel, Text  # noqa: E402
from e2e.runtime_claude import Session, claude, model_env  # noqa: E402
from harness import (  # noqa: E402
    children_cpu_ms,
    hook_server_folder,
    installed_env,
    pct,
    server_cpu_ms,
    server_mode,
)

from nexus.keys import identity  # noqa: E402
from nexus.ledger import log  # noqa: E402
from nexus.storage.vault import init  # noqa: E402

HOOK_LINE = re.compile(r"Hooks: (\w+)(?::\w+)? \[.*?\] finished with status 0 \((\d+)ms\)")


def first_request(project: Path, home: Path) -> tuple[float, float]:
    """Seconds from starting `claude -p` to its first model request; milliseconds of CPU the whole run
    took (Claude Code and every process it started)."""
    with AnthropicModel([Text("ok")]) as model:
        env = model_env(home, model)
        cpu, start = children_cpu_ms(), time.monotonic()
        subprocess.run(
            [str(CLAUDE), "-p", "hello", "--output-format", "json"],
            cwd=project,
            env=env,
            capture_output=True,
            timeout=120,
            check=True,
        )
        posts = [r.at for r in model.requests if r.scripted]
        return posts[0] - start, children_cpu_ms() - cpu


def halves(wired: Path, root: Path, home: Path, suffix: str = "") -> dict[str, Path]:
    """Copies of the wired project with only its hooks, and with only its MCP server (each trusted
    and enabled as setup did the wired one)."""
    hooks_only, mcp_only = root / f"hooks-only{suffix}", root / f"mcp-only{suffix}"
    for folder in (hooks_only, mcp_only):
        shutil.copytree(wired, folder)
    (hooks_only / ".mcp.json").unlink()
    settings = mcp_only / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data.pop("hooks")
    settings.write_text(json.dumps(data, indent=2))
    user = home / ".claude.json"
    config = json.loads(user.read_text())
    for folder in (hooks_only, mcp_only):
        config["projects"][str(folder)] = dict(config["projects"][str(wired)])
    user.write_text(json.dumps(config, indent=2))
    return {f"hooks only{suffix}": hooks_only, f"MCP server only{suffix}": mcp_only}


def wire(nexus: Path, project: Path, vault: Path, keys: Path, home: Path) -> None:
    """`nexus setup claude-code` in ``project``, by the ``nexus`` program given."""
    args = ["--vault", str(vault), "setup", "claude-code", "--agent", "ella", "--keys-home", str(keys)]
    env = runtime_env(home)
    env["PATH"] = f"{nexus.parent}:{env.get('PATH', '')}"
    setup = subprocess.run([str(nexus), *args], cwd=project, env=env, capture_output=True, text=True)
    assert setup.returncode == 0, setup.stderr


def turns(project: Path, home: Path, n: int, debug: Path, tag: str = "") -> dict[str, list[float]]:
    """One wired session of ``n`` prompts; each nexus hook's duration as Claude Code logged it (ms)."""
    with AnthropicModel([Text(f"answer {i}") for i in range(n)]) as model:
        session = Session(project, model_env(home, model), debug)
        try:
            for i in range(n):
                session.prompt(f"p{i}")
        finally:
            session.close()
    found: dict[str, list[float]] = {}
    for event, ms in HOOK_LINE.findall(debug.read_text(errors="replace")):
        found.setdefault(event + tag, []).append(float(ms))
    return found


DISCOVER = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "server/discover",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}


def mcp_first_answer(vault: Path, keys: Path, mode: str) -> float:
    """Seconds from spawning `nexus mcp` to its answer to the opening discover."""
    env = dict(
        installed_env(dict(os.environ)), NEXUS_VAULT=str(vault), NEXUS_HOME=str(keys), NEXUS_MCP_FRONT=mode
    )
    start = time.monotonic()
    proc = subprocess.Popen(
        [str(BIN / "nexus"), "mcp", "--agent", "ella"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write((json.dumps(DISCOVER) + "\n").encode())
    proc.stdin.flush()
    line = proc.stdout.readline()
    took = time.monotonic() - start
    assert b'"result"' in line, line
    proc.stdin.close()
    proc.wait(timeout=60)
    proc.stdout.close()
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument(
        "--baseline", type=Path, help="another install's `nexus` program, wired beside this one"
    )
    args = parser.parse_args()
    with hook_server_folder() as folder:
        measure(args.runs, args.turns, folder, args.baseline)


def measure(runs: int, n_turns: int, folder: Path, baseline: Path | None = None) -> None:
    with tempfile.TemporaryDirectory(prefix="nexus-bench-runtimes-") as tmp:
        root = Path(tmp)
        vault, _ = init(root / "vault")
        keys = root / "keys"
        for name in ("ella", "lyra"):
            identity.add(vault, keys, name)
        for i in range(50):  # a lived-in vault: history to brief from
            log.append(
                vault,
                identity.load_signer(vault, keys, "lyra"),
                channel="build",
                type="note",
                summary=f"note {i}",
            )
        plain, wired, home = root / "plain", root / "wired", root / "home"
        for folder in (plain, wired, home):
            folder.mkdir()
            subprocess.run(["git", "init", "-q", str(folder)], check=True)
        wire(BIN / "nexus", wired, vault.root, keys, home)
        projects = {
            "without nexus": (plain, "off"),
            "with nexus": (wired, "off"),
            "with nexus, hook server cold": (wired, "cold"),
            "with nexus, hook server warm": (wired, "warm"),
            **{name: (path, "off") for name, path in halves(wired, root, home).items()},
        }
        if baseline:  # another install wired the same way, the hooks in their own processes
            other = root / "wired-baseline"
            other.mkdir()
            subprocess.run(["git", "init", "-q", str(other)], check=True)
            wire(baseline, other, vault.root, keys, home)
            projects["with nexus (baseline)"] = (other, "off")
            for name, path in halves(other, root, home, "-baseline").items():
                projects[name.replace("-baseline", " (baseline)")] = (path, "off")
        start: dict[str, list[float]] = {name: [] for name in projects}
        cpu: dict[str, list[float]] = {name: [] for name in projects}
        mcp: dict[str, list[float]] = {"front": [], "sdk": []}
        hooks: dict[str, list[float]] = {}
        first_request(plain, home)  # warm the runtime's own caches once
        server_mode("warm", folder)
        first_request(wired, home)  # a first session: the server is up for the first warm run
        for run in range(runs):
            for name, (project, mode) in projects.items():
                server_mode(mode, folder)
                served = server_cpu_ms(folder)
                seconds, used = first_request(project, home)
                start[name].append(seconds)
                cpu[name].append(
                    used + sum(server_cpu_ms(folder, served).values())
                )  # (the server: no child of ours)
            mcp["front"].append(mcp_first_answer(vault.root, keys, "auto"))
            mcp["sdk"].append(mcp_first_answer(vault.root, keys, "sdk"))
            for mode, tag in (("off", ""), ("warm", " [served]")) if n_turns else ():
                server_mode(mode, folder)
                debug = root / f"debug-{run}{mode}.txt"
                for event, values in turns(wired, home, n_turns, debug, tag).items():
                    hooks.setdefault(event, []).extend(values)
    result: dict[str, Any] = {
        "runs": runs,
        "load": os.getloadavg(),
        "turns_per_session": n_turns,
        "first_request_ms": {
            k: {"p50": pct(v, 0.5) * 1000, "p90": pct(v, 0.9) * 1000} for k, v in start.items()
        },
        "nexus_adds_to_start_ms_p50": {
            k: (statistics.median(v) - statistics.median(start["without nexus"])) * 1000
            for k, v in start.items()
            if k.startswith("with nexus")
        },
        "run_cpu_ms_p50": {k: pct(v, 0.5) for k, v in cpu.items()},
        "nexus_adds_to_run_cpu_ms_p50": {
            k: pct(v, 0.5) - pct(cpu["without nexus"], 0.5)
            for k, v in cpu.items()
            if k.startswith("with nexus")
        },
        "mcp_first_answer_ms": {
            k: {"p50": pct(v, 0.5) * 1000, "p90": pct(v, 0.9) * 1000} for k, v in mcp.items()
        },
        "hook_ms": {k: {"p50": pct(v, 0.5), "p90": pct(v, 0.9), "n": len(v)} for k, v in hooks.items()},
    }
    result["hooks_per_turn_ms_p50"] = {}
    for tag in ("", " [served]"):
        prompts, stops = hooks.get("UserPromptSubmit" + tag, []), hooks.get("Stop" + tag, [])
        per_turn = [a + (stops[i] if i < len(stops) else 0) for i, a in enumerate(prompts)]
        result["hooks_per_turn_ms_p50"][tag.strip(" []") or "in process"] = (
            pct(per_turn, 0.5) if per_turn else None
        )
    out = ROOT / "benchmarks" / "results" / "bench_runtimes.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


CLAUDE = Path()

if __name__ == "__main__":
    CLAUDE = claude()  # not installed: one line
    main()
