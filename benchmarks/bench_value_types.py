"""What creating the frozen dataclasses of ``nexus/records/`` costs at import (every hook that reads the
log pays for the families it loads), and what the ways of making it cheaper would save:

    .venv/bin/python benchmarks/bench_value_types.py [--runs 40]

The families' classes, put in one source, are compiled once and executed ``--runs`` times in this
process (the smallest CPU time is kept: class creation is pure CPU), as they are and rewritten: without
``frozen``, with ``slots=True``, with ``repr=False``, with only the families the session-start hook
loads (entries, memory, project, team), and with only the classes the session-start and prompt hooks create
(found by counting ``__init__`` calls in a run of each). Nothing is changed in nexus; JSON goes
to benchmarks/results/bench_value_types.json.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = sorted((ROOT / "nexus" / "records").glob("[!_]*.py"))
HEADER = (
    "from __future__ import annotations\n\n"
    "from dataclasses import asdict, dataclass, field\nfrom typing import Any\n"
)
# a family's classes (the module's imports left out: one header serves them all), entries first
BLOCKS = {
    path.stem: re.split(r"\n(?=@dataclass)", path.read_text(), maxsplit=1)[1]
    for path in sorted(FAMILIES, key=lambda p: p.stem != "entries")
}
SOURCE = HEADER + "".join("\n" + block for block in BLOCKS.values())
ON_THE_HOOKS_FAMILIES = ("entries", "memory", "project", "team")  # the session-start hook's
# what the session-start and prompt hooks construct, plus what the per-entry check can (Problem)
ON_THE_HOOK_PATH = {
    "Brief",
    "BriefSection",
    "Checkpoint",
    "Claim",
    "Decision",
    "Entry",
    "Located",
    "Race",
    "Problem",
}


def cost(source: str, runs: int) -> float:
    """The smallest CPU ms of executing ``source`` as a module."""
    code = compile(source, "records_variant", "exec")
    best = float("inf")
    for _ in range(runs):
        t0 = time.process_time()
        exec(code, {"__name__": "__main__"})  # (dataclasses resolves the module's globals by name)
        best = min(best, time.process_time() - t0)
    return best * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    head, *blocks = re.split(r"\n(?=@dataclass)", SOURCE)
    named = [(re.search(r"class (\w+)", b).group(1), b) for b in blocks]  # type: ignore[union-attr]
    kept = [b for name, b in named if name in ON_THE_HOOK_PATH]
    variants = {
        f"as it is ({len(blocks)} frozen classes)": SOURCE,
        "not frozen": SOURCE.replace("@dataclass(frozen=True)", "@dataclass"),
        "frozen, slots=True": SOURCE.replace(
            "@dataclass(frozen=True)", "@dataclass(frozen=True, slots=True)"
        ),
        "frozen, repr=False": SOURCE.replace(
            "@dataclass(frozen=True)", "@dataclass(frozen=True, repr=False)"
        ),
        "the families the session-start hook loads": HEADER
        + "".join("\n" + BLOCKS[family] for family in ON_THE_HOOKS_FAMILIES),
        f"only the {len(kept)} the hooks create, frozen": head + "".join("\n" + b for b in kept),
    }
    out = {name: cost(source, args.runs) for name, source in variants.items()}
    results = ROOT / "benchmarks" / "results"
    results.mkdir(exist_ok=True)
    (results / "bench_value_types.json").write_text(
        json.dumps({"runs": args.runs, "cpu_ms": out}, indent=2) + "\n"
    )
    print(f"creating nexus/records/'s classes, smallest CPU of {args.runs} runs")
    for name, ms in out.items():
        print(f"  {name:45} {ms:6.2f} ms")


if __name__ == "__main__":
    main()
