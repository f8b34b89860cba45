"""A scripted agent session for the demo: works through a task step by step, checkpointing as it goes.

    python agents/worker.py --agent ella [--resume] [--pause SECONDS]

Every step: read what the others wrote (``nexus log read``), do the step (here: pretend), append what
was done, save a checkpoint. With ``--resume`` it first asks ``nexus checkpoint resume`` where the last
session stopped and continues from the step after it. Every call is a real ``python -m nexus``
process, so a SIGKILL of this session at any moment is exactly what a crashed agent leaves behind.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

TASK = "Port the parser to the new grammar"
STEPS = ["lexer ported", "grammar rules ported", "error messages ported", "parser tests green"]


def nexus(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "nexus", *args], capture_output=True, text=True, check=True)
    return proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agent", required=True)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--pause", type=float, default=0.4, help="seconds each step 'works'")
    args = parser.parse_args()
    start = 0
    if args.resume:
        nexus("brief", "--agent", args.agent)  # a new session reads the live context first
        got = json.loads(nexus("checkpoint", "resume", "--agent", args.agent, "--json"))
        done = got["checkpoint"]["step"]
        start = STEPS.index(done) + 1 if done in STEPS else 0
        print(
            f"[{args.agent}] resuming after “{done}”: {len(got['since'])} log entries since the checkpoint",
            flush=True,
        )
    for i in range(start, len(STEPS)):
        time.sleep(args.pause)  # the work itself
        nexus("log", "read", "--agent", args.agent)
        last = i == len(STEPS) - 1
        nexus(
            "log",
            "append",
            "--agent",
            args.agent,
            "--channel",
            "parser",
            "--type",
            "progress",
            "--summary",
            f"{STEPS[i]} ({i + 1}/{len(STEPS)})",
        )
        nexus(
            "checkpoint",
            "save",
            "--agent",
            args.agent,
            "--task",
            TASK,
            "--step",
            STEPS[i],
            "--next",
            "hand over for review" if last else STEPS[i + 1],
            "--status",
            "done" if last else "in-progress",
            "--files",
            f"parser/step{i + 1}.py",
        )
        print(f"[{args.agent}] checkpoint: {STEPS[i]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
