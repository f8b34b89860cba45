"""What nexus costs a user of Gemini CLI 0.61.0 and opencode 1.18.33, measured in the end-to-end
harness (tests/e2e/: the pinned runtime, a scripted model on 127.0.0.1):

    .venv/bin/python benchmarks/bench_gemini_opencode.py [--runs 5] [--turns 4] [--only gemini|opencode]

Side by side in one loop, interleaved so all see the same load:

- **start**: time from spawning a one-prompt run (``gemini -p``; ``opencode run``) to the runtime's
  first model request for the turn (Gemini: ``streamGenerateContent``; opencode: the request with
  tools, not its side request for a title), in a project without nexus, in the same project wired by
  ``nexus setup RUNTIME`` (project scope) with the warm hook server on (as a user has it: the run
  before left it running) and off (``NEXUS_HOOK_SERVER=off``: each hook its own process), and in the
  two halves of the wiring (the MCP server alone; the hooks alone, for opencode its plugin alone);
  with the CPU of the whole run (the runtime and every process it started: hooks, ``nexus mcp``;
  not the warm server's), which load inflates far less than wall time;
- **per turn**: one session of ``--turns`` prompts in a copy of the wired project whose hook command
  is a wrapper timing each ``nexus-hook`` run (neither runtime logs a hook's duration): Gemini CLI in
  ACP mode (``gemini --acp``: BeforeAgent before each prompt), opencode as ``opencode serve`` over its
  HTTP API (the plugin's ``prompt`` on each later prompt; ``session-start`` and ``prompt`` on the
  first); p50 of what a turn runs.

Nothing is asserted. JSON goes to benchmarks/results/bench_gemini_opencode.json.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from e2e.conftest import BIN, runtime_env  # noqa: E402
from e2e.model_gemini import GeminiModel, Text  # noqa: E402
from e2e.model_openai import Text as OText  # noqa: E402
from e2e.runtime_gemini import Acp, environ, gemini_bin, prepare_home, run_headless  # noqa: E402
from e2e.runtime_opencode import OpencodeModel, Server, opencode_bin  # noqa: E402
from e2e.runtime_opencode import environ as oc_environ  # noqa: E402
from e2e.runtime_opencode import prepare_home as oc_prepare_home  # noqa: E402
from harness import children_cpu_ms, hook_server_folder, pct, server_mode  # noqa: E402

from nexus.keys import identity  # noqa: E402
from nexus.ledger import log  # noqa: E402
from nexus.storage.vault import Vault, init  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
OWN = "with nexus, hooks in their own processes"  # (NEXUS_HOOK_SERVER=off; every other: the server on)
HOOK = str(BIN / "nexus-hook")
# each nexus-hook run timed from inside: EVENT and milliseconds, one line each, to $TIMED_LOG's file
WRAPPER = """#!/bin/bash
s=$(date +%s%N)
"__HOOK__" "$@"
rc=$?
e=$(date +%s%N)
echo "$1 $(( (e - s) / 1000 ))" >> "__LOG__"
exit $rc
"""


def _vault(root: Path) -> tuple[Vault, Path]:
    keys = root / "keys"
    vault, _ = init(root / "vault")
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
    return vault, keys


def _setup(runtime: str, vault: Vault, keys: Path, project: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        [
            str(BIN / "nexus"),
            "--vault",
            str(vault.root),
            "setup",
            runtime,
            "--agent",
            "ella",
            "--keys-home",
            str(keys),
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def _wrapper(root: Path) -> tuple[Path, Path]:
    log_file, script = root / "hook-times.txt", root / "timed-nexus-hook"
    script.write_text(WRAPPER.replace("__HOOK__", HOOK).replace("__LOG__", str(log_file)))
    script.chmod(0o755)
    return script, log_file


def _hook_times(log_file: Path) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    if log_file.is_file():
        for line in log_file.read_text().splitlines():
            event, micros = line.split()
            found.setdefault(event, []).append(int(micros) / 1000)
    return found


def _git_project(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def _summary(
    start: dict[str, list[float]],
    cpu: dict[str, list[float]],
    hooks: dict[str, list[float]],
    per_turn: list[float],
) -> dict[str, Any]:
    return {
        "first_request_ms": {
            k: {"p50": pct(v, 0.5) * 1000, "p90": pct(v, 0.9) * 1000} for k, v in start.items()
        },
        "nexus_adds_to_start_ms_p50": {
            k: (pct(v, 0.5) - pct(start["without nexus"], 0.5)) * 1000
            for k, v in start.items()
            if k != "without nexus"
        },
        "run_cpu_ms_p50": {k: pct(v, 0.5) for k, v in cpu.items()},
        "nexus_adds_to_run_cpu_ms_p50": {
            k: pct(v, 0.5) - pct(cpu["without nexus"], 0.5) for k, v in cpu.items() if k != "without nexus"
        },
        "hook_ms": {k: {"p50": pct(v, 0.5), "p90": pct(v, 0.9), "n": len(v)} for k, v in hooks.items()},
        "hooks_per_turn_ms_p50": pct(per_turn, 0.5) if per_turn else None,
    }


def _interleave(
    projects: dict[str, Path], runs: int, first: Callable[[Path], tuple[float, float]], folder: Path
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each project's start, ``runs`` times, interleaved: "with nexus, hooks in their own processes"
    with the warm hook server switched off, every other with it on (warm: the last run left it)."""
    start: dict[str, list[float]] = {name: [] for name in projects}
    cpu: dict[str, list[float]] = {name: [] for name in projects}
    for name, project in projects.items():  # warm each once: the runtime's caches, a plugin's install
        server_mode("off" if name == OWN else "warm", folder)
        first(project)
    for _ in range(runs):
        for name, project in projects.items():
            server_mode("off" if name == OWN else "warm", folder)
            seconds, used = first(project)
            start[name].append(seconds)
            cpu[name].append(used)
    server_mode("warm", folder)
    return start, cpu


# ---------------------------------------------------------------- Gemini CLI


def _gemini_clone(
    home: Path, wired: Path, new: Path, edit: Callable[[dict[str, Any]], None], hook: str = HOOK
) -> Path:
    """A copy of the wired project with its settings edited, trusted as setup trusted the wired one
    (hooks named by ``hook``'s path where it replaces nexus-hook's)."""
    shutil.copytree(wired, new)
    path = new / ".gemini" / "settings.json"
    settings = json.loads(path.read_text().replace(HOOK, hook))
    edit(settings)
    path.write_text(json.dumps(settings, indent=2))
    for name in ("trustedFolders.json", "trusted_hooks.json"):
        store = home / ".gemini" / name
        data = json.loads(store.read_text())
        if str(wired) in data:
            data[str(new)] = json.loads(json.dumps(data[str(wired)]).replace(HOOK, hook))
        store.write_text(json.dumps(data, indent=2))
    return new


def gemini(root: Path, vault: Vault, keys: Path, runs: int, turns: int, folder: Path) -> dict[str, Any]:
    home = root / "home"
    prepare_home(home)
    plain, wired = _git_project(root / "plain"), _git_project(root / "wired")
    _setup("gemini-cli", vault, keys, wired, runtime_env(home))
    folders = home / ".gemini" / "trustedFolders.json"  # a user runs Gemini in a folder they trust
    data = json.loads(folders.read_text())
    data[str(plain)] = "TRUST_FOLDER"
    folders.write_text(json.dumps(data, indent=2))
    script, log_file = _wrapper(root)
    projects = {
        "without nexus": plain,
        "with nexus": wired,
        OWN: _gemini_clone(home, wired, root / "own", lambda s: None),
        "MCP server only": _gemini_clone(home, wired, root / "mcp-only", lambda s: s.pop("hooks")),
        "hooks only": _gemini_clone(home, wired, root / "hooks-only", lambda s: s.pop("mcpServers")),
    }
    timed = _gemini_clone(home, wired, root / "timed", lambda s: None, str(script))

    def first(project: Path) -> tuple[float, float]:
        with GeminiModel(script=[Text("ok")]) as model:
            cpu, t0 = children_cpu_ms(), time.monotonic()
            ran = run_headless(project, environ(home, model), "hello")
            assert ran.returncode == 0, ran.stderr[-2000:]
            return model.turns()[0].at - t0, children_cpu_ms() - cpu

    start, cpu = _interleave(projects, runs, first, folder)
    per_turn: list[float] = []
    hooks_all: dict[str, list[float]] = {}
    for _ in range(max(1, runs // 2)):
        log_file.unlink(missing_ok=True)
        with GeminiModel(script=[Text(f"answer {i}") for i in range(turns)]) as model:
            acp = Acp(timed, environ(home, model))
            with acp:
                session = acp.request("session/new", {"cwd": str(timed), "mcpServers": []})["sessionId"]
                for i in range(turns):
                    acp.prompt(session, f"p{i}")
        times = _hook_times(log_file)
        per_turn.extend(times.get("prompt", []))
        for k, v in times.items():
            hooks_all.setdefault(k, []).extend(v)
    return {"runs": runs, "turns_per_session": turns, **_summary(start, cpu, hooks_all, per_turn)}


# ---------------------------------------------------------------- opencode


def _opencode_clone(wired: Path, new: Path, mcp: bool, plugin: bool, hook: str = HOOK) -> Path:
    shutil.copytree(wired, new)
    config = new / "opencode.json"
    data = json.loads(config.read_text())
    if not mcp:
        data.pop("mcp")
    config.write_text(json.dumps(data, indent=2))
    source = new / ".opencode" / "plugin" / "nexus.js"
    if not plugin:
        source.unlink()
    else:
        source.write_text(source.read_text().replace(json.dumps(HOOK), json.dumps(hook)))
    return new


def opencode(root: Path, vault: Vault, keys: Path, runs: int, turns: int, folder: Path) -> dict[str, Any]:
    home = root / "home"
    home.mkdir(parents=True)
    plain, wired = _git_project(root / "plain"), _git_project(root / "wired")
    _setup("opencode", vault, keys, wired, runtime_env(home, OPENCODE_DISABLE_MODELS_FETCH="1"))
    script, log_file = _wrapper(root)
    projects = {
        "without nexus": plain,
        "with nexus": wired,
        OWN: _opencode_clone(wired, root / "own", mcp=True, plugin=True),
        "MCP server only": _opencode_clone(wired, root / "mcp-only", mcp=True, plugin=False),
        "plugin only": _opencode_clone(wired, root / "plugin-only", mcp=False, plugin=True),
    }
    timed = _opencode_clone(wired, root / "timed", mcp=True, plugin=True, hook=str(script))

    def first(project: Path) -> tuple[float, float]:
        with OpencodeModel([OText("ok")]) as model:
            oc_prepare_home(home, model)
            cpu, t0 = children_cpu_ms(), time.monotonic()
            subprocess.run(
                [str(opencode_bin()), "run", "hello", "--format", "json"],
                cwd=project,
                env=oc_environ(home, project),
                capture_output=True,
                timeout=180,
                check=True,
                stdin=subprocess.DEVNULL,
            )
            asked = [r.at for r in model.requests if isinstance(r.body, dict) and r.body.get("tools")]
            return asked[0] - t0, children_cpu_ms() - cpu

    start, cpu = _interleave(projects, runs, first, folder)
    per_turn: list[float] = []
    hooks_all: dict[str, list[float]] = {}
    for _ in range(max(1, runs // 2)):
        log_file.unlink(missing_ok=True)
        with OpencodeModel([OText(f"answer {i}") for i in range(turns)]) as model:
            oc_prepare_home(home, model)
            with Server(timed, oc_environ(home, timed)) as server:
                sid = server.session()
                for i in range(turns):
                    server.prompt(sid, f"p{i}")
        times = _hook_times(log_file)
        per_turn.extend(times.get("prompt", [])[1:])  # the first prompt's comes with the start
        for k, v in times.items():
            hooks_all.setdefault(k, []).extend(v)
    return {"runs": runs, "turns_per_session": turns, **_summary(start, cpu, hooks_all, per_turn)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--only", choices=["gemini", "opencode"])
    args = parser.parse_args()
    results: dict[str, Any] = {"load_average_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="nexus-bench-go-") as tmp, hook_server_folder() as folder:
        root = Path(tmp)
        vault, keys = _vault(root)
        if args.only in (None, "gemini"):
            results["gemini_cli"] = gemini(root / "gemini", vault, keys, args.runs, args.turns, folder)
            print(json.dumps({"gemini_cli": results["gemini_cli"]}, indent=1), flush=True)
        if args.only in (None, "opencode"):
            results["opencode"] = opencode(root / "opencode", vault, keys, args.runs, args.turns, folder)
            print(json.dumps({"opencode": results["opencode"]}, indent=1), flush=True)
    results["load_average_after"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = f"bench_gemini_opencode{'_' + args.only if args.only else ''}.json"
    (RESULTS / name).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed nexus has its bytecode
    gemini_bin(), opencode_bin()  # not installed: one line
    main()
