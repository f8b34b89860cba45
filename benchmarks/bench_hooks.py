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

Each case runs twice from this checkout: in its own process (``NEXUS_HOOK_SERVER=off``, as every hook
ran before the warm hook server) and ``[served]`` by the warm server (started by the untimed runs
before; its sockets in a folder of the benchmark's own, stopped at the end). A served hook's CPU is
the client's (p50) plus the server's for the call: the server's user + system time, its forked
children's included, over all runs of the case divided by the runs (``/proc``: 10 ms ticks, so a mean).

``--against OTHER/.venv/bin/python``: another checkout's hooks too (main's, say), each case interleaved
with this one's on the same vault, in their own sessions (each of its ``prompt, one new entry`` runs
after an append of its own), named with a trailing ``[against]``.

Then where ``session-start``'s time goes at import (``python -X importtime``, each module's smallest
self time over five runs). Bytecode is written and reused, as in an installed nexus. Nothing is
asserted. JSON goes to benchmarks/results/bench_hooks.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
from harness import installed_env, measured, pct, server_cpu_ms  # noqa: E402

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
    runtime = tempfile.mkdtemp(prefix="nx-", dir="/tmp")  # (short: socket paths hold ~107 bytes)
    env = {**installed_env(dict(os.environ)), "NEXUS_HOOK_SERVER": "off", "XDG_RUNTIME_DIR": runtime}
    envs = {"": env, " [served]": {k: v for k, v in env.items() if k != "NEXUS_HOOK_SERVER"}}
    hooks = {"": HOOK, " [served]": HOOK}
    if args.against:
        hooks[" [against]"] = str(Path(args.against).parent / "nexus-hook")
        envs[" [against]"] = env
    try:
        run_all(args.runs, env, envs, hooks)
    finally:
        for pid_file in Path(runtime).glob("nexus/*.pid"):
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
        shutil.rmtree(runtime, ignore_errors=True)


def tag_of(name: str) -> str:
    return next((t for t in (" [served]", " [against]") if name.endswith(t)), "")


def run_all(runs: int, env: dict[str, str], envs: dict[str, dict[str, str]], hooks: dict[str, str]) -> None:
    runtime = Path(env["XDG_RUNTIME_DIR"])
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
            settle += [(tag, mine[tag][n]) for n in ("prompt, nothing new", "pre-tool, Edit of a free file")]
            news.append("prompt, one new entry" + tag)
            for sid in (quiet, fresh):  # the sessions the per-turn cases continue
                command, event = hook(program, "session-start", {"session_id": sid})
                subprocess.run(
                    command, input=event, text=True, env=envs[tag], capture_output=True, check=True
                )
        cases.update({name + tag: mine[tag][name] for name in mine[""] for tag in hooks})
        # the cases that append last
        cases = {**{k: v for k, v in cases.items() if k not in news}, **{k: cases[k] for k in news}}
        for name, case in [*cases.items(), *settle]:  # bytecode written, caches warm, the server up
            if case[1] is not None:
                run_env = envs[tag_of(name)]
                subprocess.run(
                    case[0], input=case[1], text=True, env=run_env, capture_output=True, check=True
                )
        wall: dict[str, list[float]] = {name: [] for name in cases}
        cpu: dict[str, list[float]] = {name: [] for name in cases}
        served: dict[str, float] = {name: 0.0 for name in cases}
        for run in range(runs):
            for name, case in cases.items():
                if case[1] is None:
                    case = hook(
                        case[0], "session-start", {"session_id": f"run-{run}{name}", "source": "startup"}
                    )
                if name in news:
                    log.append(vault, lyra, channel="build", type="note", summary=f"news {run}")
                before = server_cpu_ms(runtime)
                run_env = envs[tag_of(name)]
                w, c, done = measured(case[0], input=case[1], text=True, env=run_env, capture_output=True)
                assert done.returncode == 0, done.stderr
                wall[name].append(w)
                cpu[name].append(c)
                served[name] += sum(server_cpu_ms(runtime, before).values())
            for name, (command, event) in settle:
                subprocess.run(
                    command, input=event, text=True, env=envs[tag_of(name)], capture_output=True, check=True
                )
        imports = {
            tag: import_times(
                *hook(program, "session-start", {"session_id": f"imports{tag}", "source": "startup"}), env
            )
            for tag, program in hooks.items()
            if tag != " [served]"
        }
    report(runs, cases, cpu, wall, imports, {n: served[n] / runs for n in cases if tag_of(n) == " [served]"})


def report(
    runs: int,
    cases: dict[str, Any],
    cpu: dict[str, list[float]],
    wall: dict[str, list[float]],
    imports: dict[str, dict[str, int]],
    server: dict[str, float],
) -> None:
    out: dict[str, Any] = {
        "runs": runs,
        "load": os.getloadavg(),
        "ms": {
            name: {
                "cpu_p50": pct(cpu[name], 0.5) + server.get(name, 0.0),
                "client_cpu_p50": pct(cpu[name], 0.5),
                "server_cpu_mean": server.get(name),
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
    print(
        f"each hook alone, {runs} runs interleaved (p50; CPU = user + system of the process; [served]: the"
        f" client's p50 + the server's mean), load {out['load'][0]:.1f}"
    )
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
