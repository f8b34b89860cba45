"""What nexus costs a Codex 0.171.0 user, measured on the real program driven by the scripted model
on 127.0.0.1 (tests/e2e/), side by side in one run:

    .venv/bin/python benchmarks/bench_runtimes_codex.py [--runs 10] [--turns 12] [--baseline OTHER/.venv/bin/python]

- **Start**: `codex exec PROMPT` from spawn to its first model request, without nexus (a bare home and
  project) and wired (`nexus setup codex`, project scope: a required MCP server, the SessionStart and
  UserPromptSubmit hooks before the first request), and in two halves of the wiring, to tell what the
  first request waits for: the hooks alone (no `[mcp_servers.nexus]`) and the MCP server alone (no
  `hooks.json`); interleaved run by run, with the CPU of each whole run; and on every run with the
  server, whether that first request already offers the nexus tools.
- **Per turn**: one app-server session of N turns, wired, every other turn with one new entry by another
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
from harness import children_cpu_ms, installed_env, pct  # noqa: E402

from nexus.keys import identity  # noqa: E402
from nexus.ledger import log  # noqa: E402
from nexus.storage.vault import init  # noqa: E402

BIN = Path(sys.executable).parent
RESULTS = ROOT / "benchmarks" / "results"


VARIANTS = ("without nexus", "with nexus", "hooks only", "MCP server only")


def place(
    root: Path, wired: bool, variant: str = "with nexus", python: Path | None = None
) -> tuple[Path, Path, Any]:
    home, project = root / "home", root / "project"
    home.mkdir(parents=True)
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    keys = root / "keys"
    vault, _ = init(root / "vault")
    for name in ("ella", "lyra"):
        identity.add(vault, keys, name)
    if wired:
        python = python or Path(sys.executable)  # (the install whose `nexus` the wiring runs)
        env = {"HOME": str(home), "NEXUS_HOME": str(keys), "PATH": f"{python.parent}:/usr/bin:/bin"}
        args = ["--vault", str(vault.root), "setup", "codex", "--agent", "lyra"]
        subprocess.run(
            [str(python), "-m", "nexus", *args], cwd=project, env=env, check=True, capture_output=True
        )
        if variant.startswith("hooks only"):  # the project's config without the server: hooks switched on
            (project / ".codex" / "config.toml").write_text("[features]\nhooks = true\n")
        elif variant.startswith("MCP server only"):
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--turns", type=int, default=12)
    ap.add_argument(
        "--baseline", type=Path, help="another install's python: its wiring measured beside this one's"
    )
    args = ap.parse_args()
    variants = [*VARIANTS, *(f"{v} (baseline)" for v in VARIANTS[1:] if args.baseline)]
    starts: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    tools: dict[str, list[bool]] = {v: [] for v in variants[1:]}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            for n, variant in enumerate(variants):
                python = args.baseline if variant.endswith("(baseline)") else None
                home, project, _ = place(Path(tmp) / f"{i}-{n}", variant != "without nexus", variant, python)
                seconds, has_tools, used = first_request(home, project)
                starts[variant].append(seconds * 1000)
                cpu[variant].append(used)
                if variant in tools:
                    tools[variant].append(has_tools)
        home, project, stores = place(Path(tmp) / "session-wired", True)
        floor: list[float] = []
        hooks, wired_walls = session(home, project, stores, args.turns, floor)
        home, project, stores = place(Path(tmp) / "session-bare", False)
        _, bare_walls = session(home, project, stores, args.turns)
    later = hooks[1:]  # the first turn also starts the session (SessionStart is timed apart by Codex)
    out = {
        "codex": VERSION,
        "runs": args.runs,
        "first_request_ms": {
            v: {"p50": pct(t, 0.5), "added_p50": pct(t, 0.5) - pct(starts[VARIANTS[0]], 0.5), "all": t}
            for v, t in starts.items()
        },
        "exec_run_cpu_ms": {
            v: {"p50": pct(c, 0.5), "added_p50": pct(c, 0.5) - pct(cpu[VARIANTS[0]], 0.5)}
            for v, c in cpu.items()
        },
        "first_turn_has_nexus_tools": {v: f"{sum(t)}/{len(t)}" for v, t in tools.items()},
        "hooks_per_turn_ms": {
            "p50": pct(later, 0.5),
            "p90": pct(later, 0.9),
            "nothing_new_p50": pct(later[1::2], 0.5),
            "one_new_entry_p50": pct(later[0::2], 0.5),
            "all": hooks,
            "two_python_starts_p50": pct(floor[1:], 0.5),
        },
        "turn_wall_ms": {"bare_p50": pct(bare_walls[1:], 0.5), "wired_p50": pct(wired_walls[1:], 0.5)},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_runtimes_codex.json").write_text(json.dumps(out, indent=2) + "\n")
    f, c = out["first_request_ms"], out["exec_run_cpu_ms"]
    h = out["hooks_per_turn_ms"]
    w = out["turn_wall_ms"]
    print(f"Codex {VERSION}, {args.runs} runs of each, interleaved (p50; added: against without nexus)")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    for v in variants:
        print(
            f"{v:27s} first model request {f[v]['p50']:4.0f} ms (+{f[v]['added_p50']:3.0f}), CPU of the "
            f"whole `codex exec` run {c[v]['p50']:4.0f} ms (+{c[v]['added_p50']:3.0f})"
            + (f", first turn has its tools {out['first_turn_has_nexus_tools'][v]}" if v in tools else "")
        )
    print(
        f"nexus hooks per turn (Codex's durationMs): p50 {h['p50']:.0f} ms, p90 {h['p90']:.0f} ms "
        f"(nothing new {h['nothing_new_p50']:.0f} ms, one new entry {h['one_new_entry_p50']:.0f} ms); "
        f"two bare `python -c pass` meanwhile: p50 {h['two_python_starts_p50']:.0f} ms"
    )
    print(f"turn wall time p50: {w['bare_p50']:.0f} ms without nexus, {w['wired_p50']:.0f} ms wired")


if __name__ == "__main__":
    main()
