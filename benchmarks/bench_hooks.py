"""What each `nexus-hook` command costs alone, as a whole process (what a runtime pays for it), in CPU
and wall time, beside the floor of any Python hook (`python -c pass`, the same interpreter):

    .venv/bin/python benchmarks/bench_hooks.py [--runs 20]

The runtimes' own benchmarks (bench_runtimes.py, bench_runtimes_codex.py, bench_hermes_openclaw.py)
measure what a person feels in the real program; on a shared machine their wall times move with the
load, so this one also gives each hook's CPU (user + system of the process, from ``getrusage``), which
moves far less. A lived-in vault: 50 entries by another agent, a decision, a checkpoint and a claim.
Cases, interleaved run by run:

- ``session-start``: the whole brief, a new session each run (SessionStart; OpenClaw's every run);
- ``prompt, nothing new`` and ``prompt, one new entry`` (UserPromptSubmit; an entry by another agent
  appended before each run, untimed);
- ``stop --retain, nothing appended`` (Codex's Stop, every turn);
- ``pre-tool``: an Edit and an apply_patch of a free file (Claude Code's and Codex's claims check);
- ``session-end`` (retain, at the session's end).

Then where ``session-start``'s time goes at import (``python -X importtime``, each module's smallest
self time over five runs). Bytecode is written and reused, as in an installed nexus. Nothing is
asserted. JSON goes to benchmarks/results/bench_hooks.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
from harness import installed_env, measured, pct  # noqa: E402

from nexus.keys import identity  # noqa: E402
from nexus.ledger import log  # noqa: E402
from nexus.storage.vault import Vault, init  # noqa: E402

BIN = Path(sys.executable).parent
HOOK = str(BIN / "nexus-hook")
IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def lived_in(root: Path) -> tuple[Vault, Path, Path]:
    """A vault with history, a decision, a checkpoint and a claim; its keys; a project folder."""
    vault, _ = init(root / "vault")
    keys = root / "keys"
    for name in ("ella", "lyra"):
        identity.add(vault, keys, name)
    lyra = identity.load_signer(vault, keys, "lyra")
    for i in range(50):
        log.append(vault, lyra, channel="build", type="note", summary=f"note {i}", body=f"what happened {i}")
    project = root / "project"
    (project / "src").mkdir(parents=True)
    env = {**installed_env(dict(os.environ)), "NEXUS_VAULT": str(vault.root), "NEXUS_HOME": str(keys)}
    for args in (
        [
            "decide",
            "--title",
            "Parser",
            "--agent",
            "lyra",
            "--decision",
            "a PEG parser",
            "--rationale",
            "errors",
        ],
        [
            "checkpoint",
            "save",
            "--agent",
            "ella",
            "--task",
            "the lexer",
            "--step",
            "tokens",
            "--next",
            "tests",
        ],
        ["claim", "docs/**", "--agent", "lyra", "--reason", "rewrite", "--project", str(project)],
    ):
        subprocess.run([str(BIN / "nexus"), *args], env=env, check=True, capture_output=True)
    return vault, keys, project


def import_times(command: list[str], event: str, env: dict[str, str]) -> dict[str, int]:
    """Each module's smallest self import time (µs) over five runs of ``command`` under -X importtime."""
    smallest: dict[str, int] = {}
    for _ in range(5):
        trace = subprocess.run(
            [sys.executable, "-X", "importtime", *command],
            input=event,
            text=True,
            env=env,
            capture_output=True,
            check=True,
        ).stderr
        for self_us, _, _, module in IMPORT_LINE.findall(trace):
            smallest[module] = min(smallest.get(module, 10**9), int(self_us))
    return smallest


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    env = installed_env(dict(os.environ))
    with tempfile.TemporaryDirectory(prefix="nexus-bench-hooks-") as tmp:
        vault, keys, project = lived_in(Path(tmp))
        lyra = identity.load_signer(vault, keys, "lyra")
        base = ["--agent", "ella", "--vault", str(vault.root), "--home", str(keys)]

        def hook(event: str, data: dict[str, Any], *extra: str) -> tuple[list[str], str]:
            return [HOOK, event, *base, *extra], json.dumps({"cwd": str(project), **data})

        patch = "*** Begin Patch\n*** Update File: src/main.py\n@@\n-a\n+b\n*** End Patch\n"
        file = str(project / "src" / "main.py")
        cases: dict[str, Any] = {
            "python -c pass (the floor)": ([sys.executable, "-c", "pass"], ""),
            "session-start": None,  # a new session each run
            "prompt, nothing new": hook("prompt", {"session_id": "quiet", "prompt": "go on"}),
            "stop --retain, nothing appended": hook("stop", {"session_id": "quiet"}, "--retain"),
            "pre-tool, Edit of a free file": hook(
                "pre-tool", {"session_id": "quiet", "tool_name": "Edit", "tool_input": {"file_path": file}}
            ),
            "pre-tool, apply_patch of a free file": hook(
                "pre-tool",
                {"session_id": "quiet", "tool_name": "apply_patch", "tool_input": {"command": patch}},
            ),
            "session-end": hook("session-end", {"session_id": "quiet"}),
            "prompt, one new entry": hook(
                "prompt", {"session_id": "news", "prompt": "go on"}
            ),  # last: it appends
        }
        # after the append, untimed: the quiet session takes the news in, the claims are read again
        settle = [cases["prompt, nothing new"], cases["pre-tool, Edit of a free file"]]
        for sid in ("quiet", "news"):  # the sessions the per-turn cases continue
            command, event = hook("session-start", {"session_id": sid})
            subprocess.run(command, input=event, text=True, env=env, capture_output=True, check=True)
        for case in [*cases.values(), *settle]:  # bytecode written, caches warm
            if case is not None:
                subprocess.run(case[0], input=case[1], text=True, env=env, capture_output=True, check=True)
        wall: dict[str, list[float]] = {name: [] for name in cases}
        cpu: dict[str, list[float]] = {name: [] for name in cases}
        for run in range(args.runs):
            for name, case in cases.items():
                if case is None:
                    case = hook("session-start", {"session_id": f"run-{run}", "source": "startup"})
                if name == "prompt, one new entry":
                    log.append(vault, lyra, channel="build", type="note", summary=f"news {run}")
                w, c, done = measured(case[0], input=case[1], text=True, env=env, capture_output=True)
                assert done.returncode == 0, done.stderr
                wall[name].append(w)
                cpu[name].append(c)
            for command, event in settle:
                subprocess.run(command, input=event, text=True, env=env, capture_output=True, check=True)
        smallest = import_times(*hook("session-start", {"session_id": "imports", "source": "startup"}), env)
    out = {
        "runs": args.runs,
        "ms": {
            name: {
                "cpu_p50": pct(cpu[name], 0.5),
                "wall_p50": pct(wall[name], 0.5),
                "wall_p90": pct(wall[name], 0.9),
            }
            for name in cases
        },
        "session_start_imports": {
            "modules": len(smallest),
            "nexus_modules": sum(1 for m in smallest if m.startswith("nexus")),
            "self_ms_sum": sum(smallest.values()) / 1000,
            "nexus_self_ms_sum": sum(v for m, v in smallest.items() if m.startswith("nexus")) / 1000,
            "top_self_ms": {m: v / 1000 for m, v in sorted(smallest.items(), key=lambda kv: -kv[1])[:12]},
        },
    }
    results = ROOT / "benchmarks" / "results"
    results.mkdir(exist_ok=True)
    (results / "bench_hooks.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"each hook alone, {args.runs} runs interleaved (p50; CPU = user + system of the process)")
    for name, m in out["ms"].items():
        print(
            f"  {name:40} CPU {m['cpu_p50']:6.1f} ms   wall {m['wall_p50']:6.1f} ms (p90 {m['wall_p90']:.0f})"
        )
    s = out["session_start_imports"]
    print(
        f"session-start imports {s['modules']} modules ({s['nexus_modules']} of nexus): "
        f"{s['self_ms_sum']:.1f} ms of import time ({s['nexus_self_ms_sum']:.1f} ms in nexus's own);"
        " largest: " + ", ".join(f"{m} {v:.1f}" for m, v in s["top_self_ms"].items())
    )


if __name__ == "__main__":
    main()
