"""What nexus costs a user of Hermes Agent 0.19.0 and OpenClaw 2026.9.6, as installed by
``scripts/runtimes/`` and driven by the e2e suite's scripted model on 127.0.0.1.

    .venv/bin/python benchmarks/bench_hermes_openclaw.py [--runs 3] [--hooks 20] [--skip-openclaw]
                                                         [--skip-hermes]
                                                         [--against OTHER/.venv/bin/nexus]

- Hermes start-up: ``hermes chat -Q -q`` from spawn to its first chat request, with nexus wired
  (``nexus setup hermes``) and without, interleaved (each Hermes home warmed by one run first: its
  first run copies skills), with the CPU of the whole run (Hermes and ``nexus hermes-provider``);
  ``--against``: a third Hermes home whose plugin runs another checkout's ``nexus`` (a baseline).
- Hermes per turn: the provider's ``prefetch`` as Hermes' own MemoryManager calls it, through the
  plugin ``nexus setup hermes`` installs (one JSON line to ``nexus hermes-provider`` and back), in
  Hermes' Python: nothing new, and one new entry by another agent.
- OpenClaw start-up: the Gateway from spawn to "ready", and ``openclaw agent`` from spawn to its first
  chat request, with nexus wired (``nexus setup openclaw``: its hook runs on every run) and without.
- OpenClaw per turn: the hook's ``nexus-hook session-start`` as the handler runs it (a whole process).

Nothing is asserted. JSON goes to benchmarks/results/bench_hermes_openclaw.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the e2e harness is the package tests/e2e

from e2e.model_chat import ModelServer  # noqa: E402
from e2e.runtime_hermes import Hermes, hermes_command  # noqa: E402
from e2e.runtime_openclaw import OpenClaw, remove_new, shared_tmp  # noqa: E402
from harness import children_cpu_ms, measured, pct  # noqa: E402

from nexus.keys import identity  # noqa: E402
from nexus.ledger import log  # noqa: E402
from nexus.storage.vault import Vault, init  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
NEXUS = str(Path(sysconfig.get_path("scripts")) / "nexus")
HOOK = str(Path(sysconfig.get_path("scripts")) / "nexus-hook")

PREFETCH = r"""
import json, subprocess, sys, time
from plugins.memory import load_memory_provider
from agent.memory_manager import MemoryManager
vault, keys, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
provider = load_memory_provider("nexus")
manager = MemoryManager()
manager.add_provider(provider)
t0 = time.perf_counter()
manager.initialize_all(session_id="bench", platform="cli")
start_ms = (time.perf_counter() - t0) * 1000
quiet, news = [], []
for i in range(runs):
    t0 = time.perf_counter()
    manager.prefetch_all("continue")
    quiet.append((time.perf_counter() - t0) * 1000)
    subprocess.run(["nexus", "--vault", vault, "log", "append", "--agent", "lyra", "--channel", "ops",
                    "--type", "note", "--summary", f"news {i}"], env={**__import__("os").environ,
                    "NEXUS_HOME": keys}, check=True, capture_output=True)
    t0 = time.perf_counter()
    text = manager.prefetch_all("continue")
    news.append((time.perf_counter() - t0) * 1000)
    assert f"news {i}" in text, text
manager.shutdown_all()
print(json.dumps({"initialize_ms": start_ms, "quiet_ms": quiet, "news_ms": news}))
"""


def _vault(root: Path) -> tuple[Vault, Path]:
    keys = root / "keys"
    vault, _ = init(root / "vault")
    for name in ("ella", "lyra"):
        identity.add(vault, keys, name)
    log.append(vault, identity.load_signer(vault, keys, "lyra"), channel="ops", type="note", summary="hello")
    return vault, keys


def _first_request(model: ModelServer, since: float) -> float:
    return min((r.at for r in model.chats() if r.at >= since), default=float("nan")) - since


def hermes(
    root: Path, vault: Vault, keys: Path, runs: int, hooks: int, against: str | None
) -> dict[str, Any]:
    hermes_command()
    homes = {"with_nexus_s": Hermes(root / "with-nexus"), "without_s": Hermes(root / "without")}
    if against:
        homes["with_baseline_nexus_s"] = Hermes(root / "baseline")
    wired = homes["with_nexus_s"]
    with ModelServer() as model:
        for key, h in homes.items():
            h.configure(model.base_url)
            if key == "without_s":
                continue
            env = {**h.env(), "NEXUS_HOME": str(keys)}
            command = against if key == "with_baseline_nexus_s" and against else NEXUS
            subprocess.run(
                [command, "--vault", str(vault.root), "setup", "hermes", "--agent", "ella"],
                env=env,
                check=True,
                capture_output=True,
            )
            h.configure(model.base_url)
            if key == "with_baseline_nexus_s":  # its plugin runs the other checkout's nexus
                path = h.hermes_home / "config.yaml"
                config = yaml.safe_load(path.read_text())
                config["plugins"]["nexus"]["command"] = command
                path.write_text(yaml.safe_dump(config, sort_keys=False))
        for h in homes.values():
            h.chat("warm up")
        start: dict[str, list[float]] = {k: [] for k in homes}
        cpu: dict[str, list[float]] = {k: [] for k in homes}
        for _ in range(runs):
            for key, h in homes.items():
                used, t0 = children_cpu_ms(), time.monotonic()
                h.chat("hello")
                start[key].append(_first_request(model, t0))
                cpu[key].append(children_cpu_ms() - used)
        python = hermes_command().parent / "python"
        proc = subprocess.run(
            [str(python), "-c", PREFETCH, str(vault.root), str(keys), str(hooks)],
            capture_output=True,
            text=True,
            env=wired.env(),
            cwd=wired.project,
            check=True,
        )
        turn = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "first_request_s": {k: {"p50": pct(v, 0.5), "all": v} for k, v in start.items()},
        "added_s_p50": pct(start["with_nexus_s"], 0.5) - pct(start["without_s"], 0.5),
        "run_cpu_ms_p50": {k: pct(v, 0.5) for k, v in cpu.items()},
        "initialize_ms": turn["initialize_ms"],
        "prefetch_quiet_ms": {"p50": pct(turn["quiet_ms"], 0.5), "p90": pct(turn["quiet_ms"], 0.9)},
        "prefetch_news_ms": {"p50": pct(turn["news_ms"], 0.5), "p90": pct(turn["news_ms"], 0.9)},
    }


def openclaw(root: Path, vault: Vault, keys: Path, runs: int, hooks: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    before = shared_tmp()
    try:
        for key, wire in (("with_nexus", True), ("without", False)):
            oc = OpenClaw(root / key)
            oc.home.mkdir(parents=True)
            with ModelServer() as model:
                if wire:
                    env = {**oc.env(), "NEXUS_HOME": str(keys)}
                    subprocess.run(
                        [NEXUS, "--vault", str(vault.root), "setup", "openclaw", "--agent", "ella"],
                        env=env,
                        check=True,
                        capture_output=True,
                    )
                oc.configure(model.base_url)
                ready = oc.start()
                try:
                    oc.agent("warm up")
                    firsts = []
                    for _ in range(runs):
                        t0 = time.monotonic()
                        oc.agent("hello")
                        firsts.append(_first_request(model, t0))
                finally:
                    oc.stop()
            out[key] = {"gateway_ready_s": ready, "first_request_s": {"p50": pct(firsts, 0.5), "all": firsts}}
    finally:
        remove_new(before)
    event = json.dumps({"session_id": "bench", "hook_event_name": "SessionStart", "source": "startup"})
    command = [HOOK, "session-start", "--agent", "ella", "--vault", str(vault.root), "--home", str(keys)]
    times, cpu = [], []
    for _ in range(hooks):
        wall, used, _ = measured(command, input=event, capture_output=True, text=True, check=True)
        times.append(wall)
        cpu.append(used)
    out["hook_session_start_ms"] = {"p50": pct(times, 0.5), "p90": pct(times, 0.9), "cpu_p50": pct(cpu, 0.5)}
    out["added_s_p50"] = (
        out["with_nexus"]["first_request_s"]["p50"] - out["without"]["first_request_s"]["p50"]
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hooks", type=int, default=20)
    parser.add_argument("--skip-openclaw", action="store_true")
    parser.add_argument("--skip-hermes", action="store_true")
    parser.add_argument("--against", help="another checkout's nexus command, run by a third Hermes home")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nexus-bench-rt-") as tmp:
        root = Path(tmp)
        vault, keys = _vault(root)
        results: dict[str, Any] = {"load_average_before": os.getloadavg()}
        if not args.skip_hermes:
            results["hermes"] = hermes(root / "hermes", vault, keys, args.runs, args.hooks, args.against)
            print(json.dumps({"hermes": results["hermes"]}, indent=2), flush=True)
        if not args.skip_openclaw:
            results["openclaw"] = openclaw(root / "openclaw", vault, keys, args.runs, args.hooks)
            print(json.dumps({"openclaw": results["openclaw"]}, indent=2), flush=True)
    results["load_average_after"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bench_hermes_openclaw.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    os.environ.pop(
        "PYTHONDONTWRITEBYTECODE", None
    )  # an installed nexus has its bytecode: no compiling per run
    main()
