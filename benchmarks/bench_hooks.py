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

``--against OTHER/.venv/bin/python``: another checkout's hooks too (main's, say), each case interleaved
with this one's on the same vault, in their own sessions (each of its ``prompt, one new entry`` runs
after an append of its own), named with a trailing ``[against]``.

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
from collections.abc import Callable
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
    """Each module's smallest self import time (µs) over five runs of ``command`` (a hook script) under
    -X importtime, by the interpreter beside it (its own checkout's), counting the modules every run
    imports (a run that checks a signature the machine has not seen, or compiles the scan rules, imports
    more than the steady state)."""
    python = str(Path(command[0]).parent / "python")
    smallest: dict[str, int] = {}
    seen: dict[str, int] = {}
    for _ in range(5):
        trace = subprocess.run(
            [python, "-X", "importtime", *command],
            input=event,
            text=True,
            env=env,
            capture_output=True,
            check=True,
        ).stderr
        for self_us, _, _, module in IMPORT_LINE.findall(trace):
            smallest[module] = min(smallest.get(module, 10**9), int(self_us))
            seen[module] = seen.get(module, 0) + 1
    return {module: us for module, us in smallest.items() if seen[module] == 5}


PATCH = "*** Begin Patch\n*** Update File: src/main.py\n@@\n-a\n+b\n*** End Patch\n"


def program_cases(
    program: str, quiet: str, fresh: str, hook: Callable[..., tuple[list[str], str]], file: str
) -> dict[str, Any]:
    """One program's timed cases (command and stdin; session-start's stdin is made at each run)."""
    patch = PATCH
    return {
        "session-start": (program, None),  # a new session each run
        "prompt, nothing new": hook(program, "prompt", {"session_id": quiet, "prompt": "go on"}),
        "stop --retain, nothing appended": hook(program, "stop", {"session_id": quiet}, "--retain"),
        "pre-tool, Edit of a free file": hook(
            program,
            "pre-tool",
            {"session_id": quiet, "tool_name": "Edit", "tool_input": {"file_path": file}},
        ),
        "pre-tool, apply_patch of a free file": hook(
            program,
            "pre-tool",
            {"session_id": quiet, "tool_name": "apply_patch", "tool_input": {"command": patch}},
        ),
        "session-end": hook(program, "session-end", {"session_id": quiet}),
        "prompt, one new entry": hook(program, "prompt", {"session_id": fresh, "prompt": "go on"}),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument(
        "--against",
        metavar="PYTHON",
        help="another nexus's interpreter (a checkout's .venv/bin/python): its hooks run interleaved with"
        " these on the same vault, named with a trailing [against]",
    )
    args = ap.parse_args()
    env = installed_env(dict(os.environ))
    hooks = {"": HOOK}
    if args.against:
        hooks[" [against]"] = str(Path(args.against).parent / "nexus-hook")
    with tempfile.TemporaryDirectory(prefix="nexus-bench-hooks-") as tmp:
        vault, keys, project = lived_in(Path(tmp))
        lyra = identity.load_signer(vault, keys, "lyra")
        base = ["--agent", "ella", "--vault", str(vault.root), "--home", str(keys)]

        def hook(program: str, event: str, data: dict[str, Any], *extra: str) -> tuple[list[str], str]:
            return [program, event, *base, *extra], json.dumps({"cwd": str(project), **data})

        cases: dict[str, Any] = {"python -c pass (the floor)": ([sys.executable, "-c", "pass"], "")}
        settle = []  # after the append, untimed: the quiet sessions take the news in, the claims are read
        news = []  # the cases that each follow an append of their own
        mine = {}
        for tag, program in hooks.items():
            quiet, fresh = f"quiet{tag.strip()}", f"news{tag.strip()}"  # each program's own sessions
            mine[tag] = program_cases(program, quiet, fresh, hook, str(project / "src" / "main.py"))
            settle += [mine[tag]["prompt, nothing new"], mine[tag]["pre-tool, Edit of a free file"]]
            news.append("prompt, one new entry" + tag)
            for sid in (quiet, fresh):  # the sessions the per-turn cases continue
                command, event = hook(program, "session-start", {"session_id": sid})
                subprocess.run(command, input=event, text=True, env=env, capture_output=True, check=True)
        cases.update({name + tag: mine[tag][name] for name in mine[""] for tag in hooks})
        # the cases that append last
        cases = {**{k: v for k, v in cases.items() if k not in news}, **{k: cases[k] for k in news}}
        for case in [*cases.values(), *settle]:  # bytecode written, caches warm
            if case[1] is not None:
                subprocess.run(case[0], input=case[1], text=True, env=env, capture_output=True, check=True)
        wall: dict[str, list[float]] = {name: [] for name in cases}
        cpu: dict[str, list[float]] = {name: [] for name in cases}
        for run in range(args.runs):
            for name, case in cases.items():
                if case[1] is None:
                    case = hook(
                        case[0], "session-start", {"session_id": f"run-{run}{name}", "source": "startup"}
                    )
                if name in news:
                    log.append(vault, lyra, channel="build", type="note", summary=f"news {run}")
                w, c, done = measured(case[0], input=case[1], text=True, env=env, capture_output=True)
                assert done.returncode == 0, done.stderr
                wall[name].append(w)
                cpu[name].append(c)
            for command, event in settle:
                subprocess.run(command, input=event, text=True, env=env, capture_output=True, check=True)
        imports = {
            tag: import_times(
                *hook(program, "session-start", {"session_id": f"imports{tag}", "source": "startup"}), env
            )
            for tag, program in hooks.items()
        }
    report(args.runs, cases, cpu, wall, imports)


def report(
    runs: int,
    cases: dict[str, Any],
    cpu: dict[str, list[float]],
    wall: dict[str, list[float]],
    imports: dict[str, dict[str, int]],
) -> None:
    out: dict[str, Any] = {
        "runs": runs,
        "ms": {
            name: {
                "cpu_p50": pct(cpu[name], 0.5),
                "wall_p50": pct(wall[name], 0.5),
                "wall_p90": pct(wall[name], 0.9),
            }
            for name in cases
        },
        "session_start_imports": {
            f"session-start{tag}": {
                "modules": len(smallest),
                "nexus_modules": sum(1 for m in smallest if m.startswith("nexus")),
                "self_ms_sum": sum(smallest.values()) / 1000,
                "nexus_self_ms_sum": sum(v for m, v in smallest.items() if m.startswith("nexus")) / 1000,
                "top_self_ms": {m: v / 1000 for m, v in sorted(smallest.items(), key=lambda kv: -kv[1])[:12]},
            }
            for tag, smallest in imports.items()
        },
    }
    results = ROOT / "benchmarks" / "results"
    results.mkdir(exist_ok=True)
    (results / "bench_hooks.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"each hook alone, {runs} runs interleaved (p50; CPU = user + system of the process)")
    for name, m in out["ms"].items():
        print(
            f"  {name:40} CPU {m['cpu_p50']:6.1f} ms   wall {m['wall_p50']:6.1f} ms (p90 {m['wall_p90']:.0f})"
        )
    for name, s in out["session_start_imports"].items():
        print(
            f"{name} imports {s['modules']} modules ({s['nexus_modules']} of nexus): "
            f"{s['self_ms_sum']:.1f} ms of import time ({s['nexus_self_ms_sum']:.1f} ms in nexus's own);"
            " largest: " + ", ".join(f"{m} {v:.1f}" for m, v in s["top_self_ms"].items())
        )


if __name__ == "__main__":
    main()
