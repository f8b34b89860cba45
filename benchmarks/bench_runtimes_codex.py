"""What nexus costs a Codex 0.171.0 user, measured on the real program driven by the scripted model
on 127.0.0.1 (tests/e2e/), side by side in one run:

    .venv/bin/python benchmarks/bench_runtimes_codex.py [--runs 10] [--turns 12] [--baseline PYTHON]

- **Start**: `codex exec PROMPT` from spawn to its first model request, without nexus (a bare home and
  project) and wired (`nexus setup codex`, project scope: a required MCP server, the SessionStart and
  UserPromptSubmit hooks before the first request), interleaved run by run; and on every wired run,
  whether that first request already offers the nexus tools. Also two halves of the wiring, to tell
  what the first request waits for: the hooks alone (no `[mcp_servers.nexus]`) and the MCP server
  alone (no `hooks.json`); and with `--baseline`, another install's wiring and its MCP server alone
  (the hooks in their own processes in all of these).
- **The warm hook server**: the wired start with the hooks each in their own process
  (``NEXUS_HOOK_SERVER=off``), warm (the server an untimed first session just started) and cold (no
  server: ``nexus mcp`` starts it after its first answer, and SessionStart waits for it), all in one
  wired place reused run after run (the vault, key folder and Codex home a user has); and a first
  session ever (a new place each run, just wired: a new vault, a new Codex home, no server).
- **Per turn**: one app-server session of N turns, wired (the hooks in their own processes, then
  served by a warm server), every other turn with one new entry by another
  agent between prompts: the time Codex itself reports for nexus's hooks in each turn (`hook/completed`
  `durationMs`: UserPromptSubmit + Stop), beside two bare `python -c pass` timed after each turn (the
  floor of two hook processes under the same load), and the turn's wall time beside a bare session's.

Needs scripts/runtimes/codex.sh. Nothing is asserted. JSON goes to
benchmarks/results/bench_runtimes_codex.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from e2e.model_openai import OpenAIModel, Text  # noqa: E402
from e2e.runtime_codex import VERSION, AppServer, codex_bin, environ, provider_args  # noqa: E402
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

BIN = Path(sys.executable).parent
RESULTS = ROOT / "benchmarks" / "results"


def place(root: Path, wired: bool, half: str = "", python: Path | None = None) -> tuple[Path, Path, Any]:
    """A home and a project; wired by ``python``'s install (default: this one), or half of it (``half``:
    "hooks only", "MCP server only")."""
    home, project = root / "home", root / "project"
    home.mkdir(parents=True)
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    keys = root / "keys"
    vault, _ = init(root / "vault")
    for name in ("ella", "lyra"):
        identity.add(vault, keys, name)
    if wired:
        python = python or Path(sys.executable)
        env = {"HOME": str(home), "NEXUS_HOME": str(keys), "PATH": f"{python.parent}:/usr/bin:/bin"}
        args = ["--vault", str(vault.root), "setup", "codex", "--agent", "lyra"]
        subprocess.run(
            [str(python), "-m", "nexus", *args], cwd=project, env=env, check=True, capture_output=True
        )
        if half == "hooks only":  # the project's config without the server: hooks switched on
            (project / ".codex" / "config.toml").write_text("[features]\nhooks = true\n")
        elif half == "MCP server only":
            (project / ".codex" / "hooks.json").unlink()
    else:  # the same trust a user gives their own project, without nexus
        (home / ".codex").mkdir()
        (home / ".codex" / "config.toml").write_text(f'[projects."{project}"]\ntrust_level = "trusted"\n')
    return home, project, (vault, keys)


def first_request(home: Path, project: Path) -> tuple[float, bool, float]:
    """Seconds from spawning `codex exec` to its first model request; whether it offers nexus tools; the
    CPU (ms) of the whole run (Codex and every process it started)."""
    with OpenAIModel(script=[Text("ok")]) as model:
        args = [str(codex_bin()), "exec", "--json", "--skip-git-repo-check", *provider_args(model), "hi"]
        cpu, start = children_cpu_ms(), time.monotonic()
        subprocess.run(
            args,
            cwd=project,
            env=installed_env(environ(home)),
            capture_output=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=True,
        )
        used = children_cpu_ms() - cpu
        first = model.turns()[0]
    tools = any(t.get("name") == "mcp__nexus" for t in first.body.get("tools", []))
    return first.at - start, tools, used


def two_pythons() -> float:
    """Milliseconds two `python -c pass` take one after the other: the floor of two hook processes."""
    start = time.monotonic()
    for _ in range(2):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    return (time.monotonic() - start) * 1000


def session(
    home: Path, project: Path, stores: Any, turns: int, floor: list[float] | None = None
) -> tuple[list[float], list[float]]:
    """Per turn: nexus's hook time as Codex reports it (ms), and the turn's wall time (ms); ``floor``
    gets two bare Python starts timed after each turn, under the same load."""
    vault, keys = stores
    hooks: list[float] = []
    walls: list[float] = []
    with OpenAIModel() as model, AppServer(project, installed_env(environ(home)), model) as server:
        tid = server.request("thread/start", {"cwd": str(project), "model": "gpt-scripted"})["thread"]["id"]
        for n in range(turns):
            if n % 2:
                signer = identity.load_signer(vault, keys, "ella")
                log.append(vault, signer, summary=f"entry {n}", channel="build", type="note")
            start = time.monotonic()
            notes = server.turn(tid, f"turn {n}")
            walls.append((time.monotonic() - start) * 1000)
            done = [x["params"]["run"] for x in notes if x.get("method") == "hook/completed"]
            per_turn = [r for r in done if r["eventName"] in ("userPromptSubmit", "stop")]
            hooks.append(float(sum(r.get("durationMs") or 0 for r in per_turn)))
            if floor is not None:
                floor.append(two_pythons())
    return hooks, walls


FIRST = "wired, first session in a new place"
MODES = {"wired, hook server cold": "cold", "wired, hook server warm": "warm"}  # (else: off; FIRST cold)
STARTS = (
    "bare",
    "wired",
    "wired, hook server cold",
    "wired, hook server warm",
    FIRST,
    "hooks only",
    "MCP server only",
)
BASELINE = ("wired (baseline)", "MCP server only (baseline)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--turns", type=int, default=12)
    ap.add_argument("--baseline", type=Path, help="another install's python: its wiring beside this one's")
    args = ap.parse_args()
    with hook_server_folder() as folder:
        measure(args.runs, args.turns, folder, args.baseline)


def measure(runs: int, turns: int, folder: Path, baseline: Path | None = None) -> None:
    names = (*STARTS, *(BASELINE if baseline else ()))
    starts: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    tools: list[bool] = []
    hooks: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        warm = place(Path(tmp) / "warm", True)
        server_mode("warm", folder)
        first_request(*warm[:2])  # a first session: its server is up for the first warm run
        for i in range(runs):
            for n, name in enumerate(names):
                mode = "cold" if name == FIRST else MODES.get(name, "off")
                server_mode(mode, folder)
                if name in MODES or name == "wired":  # (one place: the same vault, keys and Codex home)
                    home, project, _ = warm
                else:
                    half = name.removesuffix(" (baseline)") if "only" in name else ""
                    python = baseline if name.endswith("(baseline)") else None
                    home, project, _ = place(Path(tmp) / f"{i}-{n}", name != "bare", half, python)
                if mode == "warm":  # a first session, untimed: the server up (a cold run stopped it)
                    first_request(home, project)
                served = server_cpu_ms(folder)
                seconds, has_tools, used = first_request(home, project)
                starts[name].append(seconds * 1000)
                cpu[name].append(
                    used + sum(server_cpu_ms(folder, served).values())
                )  # (the server: no child of ours)
                if name not in ("bare", "hooks only"):
                    tools.append(has_tools)
        floor: list[float] = []
        for mode, tag in (("off", ""), ("warm", " [served]")):
            server_mode(mode, folder)
            home, project, stores = place(Path(tmp) / f"session-wired-{mode}", True)
            hooks[tag], wired_walls = session(home, project, stores, turns, floor if not tag else None)
        server_mode("off", folder)
        home, project, stores = place(Path(tmp) / "session-bare", False)
        _, bare_walls = session(home, project, stores, turns)
    later = {tag: found[1:] for tag, found in hooks.items()}  # (the first turn also starts the session)
    out: dict[str, Any] = {
        "codex": VERSION,
        "runs": runs,
        "load": os.getloadavg(),
        "first_request_ms": {name: pct(v, 0.5) for name, v in starts.items()},
        "first_request_added_ms": {
            name: pct(v, 0.5) - pct(starts["bare"], 0.5) for name, v in starts.items() if name != "bare"
        },
        "exec_run_cpu_ms": {name: pct(v, 0.5) for name, v in cpu.items()},
        "exec_run_cpu_added_ms": {
            name: pct(v, 0.5) - pct(cpu["bare"], 0.5) for name, v in cpu.items() if name != "bare"
        },
        "first_turn_has_nexus_tools": f"{sum(tools)}/{len(tools)}",
        "hooks_per_turn_ms": {
            tag.strip(" []") or "in process": {
                "p50": pct(v, 0.5),
                "p90": pct(v, 0.9),
                "nothing_new_p50": pct(v[1::2], 0.5),
                "one_new_entry_p50": pct(v[0::2], 0.5),
                "all": hooks[tag],
            }
            for tag, v in later.items()
        },
        "two_python_starts_p50": pct(floor[1:], 0.5),
        "turn_wall_ms": {
            "bare_p50": pct(bare_walls[1:], 0.5),
            "wired_p50 (served)": pct(wired_walls[1:], 0.5),
        },
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_runtimes_codex.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"Codex {VERSION}, {runs} runs of each, interleaved; load {out['load'][0]:.1f}")
    print(json.dumps({k: v for k, v in out.items() if k not in ("codex", "runs", "load")}, indent=1))


if __name__ == "__main__":
    main()
