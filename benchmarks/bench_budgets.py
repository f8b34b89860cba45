"""The budgets a user feels, this code beside another checkout, in one run, on one vault.

    .venv/bin/python benchmarks/bench_budgets.py --before PATH [--n 100000] [--vaults DIR]
        [--verify-runs 2] [--runs 15] [--queries 100] [--mcp-rounds 5]

``--before`` is another checkout of nexus (``git worktree add --detach /tmp/base main``): both sides
run with this interpreter, each with ``PYTHONPATH`` set to its own tree, taking turns (the order
alternating each round) on one copy of a generated vault (``bench_costs.prepare``: three agents,
signed and chained, kept under ``--vaults``), so both see the same disk and the same load. A fourth
agent, nova, is added to the copy for the MCP round. What is measured, in this order:

* ``nexus verify --full`` as a process: wall and CPU seconds (the process and its pool), entries per
  second and per CPU-second;
* search, p50 and p90 (wall and CPU) in text mode (the budget's: one term, an entry's number or a
  word every entry holds; two terms) and in the default hybrid mode (one term), in one long-lived
  process per side (as the MCP server and ``nexus watch`` search) on the kept vault itself, after
  one untimed index build (none when it holds an index and a file ``indexed`` beside it);
* ``nexus brief --agent lyra --peek`` and ``nexus log append`` as processes (``python -c pass`` beside
  them in the same loop): p50 wall and CPU milliseconds;
* four ``nexus mcp --agent A`` servers spawned at once through the official MCP client (stdio), each
  session's first call a ``log_append``: per server, spawn to the append's answer (p50 and the slowest
  of the four), and the CPU the four servers used together.

Machine load moves absolute figures; compare the two sides (CPU above all). Nothing is asserted beyond
the answers being right. JSON goes to benchmarks/results/bench_budgets.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_costs  # noqa: E402
from harness import pct  # noqa: E402

from nexus.keys import identity  # noqa: E402
from nexus.storage.vault import Vault  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
SIDES = ("before", "after")
MCP_AGENTS = ("ella", "lyra", "mira", "nova")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU milliseconds of one run of ``cmd`` (it must succeed)."""
    c0, t0 = children_cpu(), time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1000, (children_cpu() - c0) * 1000


def turns(rounds: int) -> list[tuple[str, ...]]:
    """The order of the sides in each round: alternating, so neither always goes first."""
    return [SIDES if i % 2 == 0 else SIDES[::-1] for i in range(rounds)]


def full_verify(n: int, envs: dict[str, dict[str, str]], trees: dict[str, Path], runs: int) -> dict[str, Any]:
    got: dict[str, list[tuple[float, float]]] = {side: [] for side in SIDES}
    for order in turns(runs):
        for side in order:
            wall, _rss, text = bench_costs.measure(
                [sys.executable, "-m", "nexus", "verify", "--full", "--json"], envs[side], trees[side]
            )
            report = json.loads(text)
            assert report["ok"] and report["full"] and report["entries"] == n, report["problems"][:3]
            got[side].append((wall, bench_costs.CPU[0]))
    row: dict[str, Any] = {}
    for side, runs_ in got.items():
        wall, cpu = statistics.median(w for w, _ in runs_), statistics.median(c for _, c in runs_)
        row[side] = {
            "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2),
            "entries_per_s": round(n / wall),
            "entries_per_cpu_s": round(n / cpu),
            "runs_cpu_s": [round(c, 2) for _, c in runs_],
        }
    row["ratio_cpu"] = round(row["after"]["cpu_s"] / row["before"]["cpu_s"], 3)
    return row


SEARCHER = r"""
import json, os, resource, sys, time
from pathlib import Path
from nexus import search
from nexus.storage.vault import Vault
from nexus.trust import Trust

def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

vault, trust = Vault(Path(sys.argv[1])), Trust(Path(os.environ["NEXUS_HOME"]))  # (the CLI's pins)
for line in sys.stdin:
    mode, q = json.loads(line)
    c, t = cpu(), time.perf_counter()
    if mode == "build":
        hits = [None] * search.rebuild(vault, trust=trust).documents_added
    else:
        hits = search.search(vault, q, mode=mode, trust=trust)
    dt, dc = time.perf_counter() - t, cpu() - c
    top = len(hits) if mode == "build" else [[h.path, h.line_start, h.verified] for h in hits[:10]]
    print(json.dumps([dt, dc, top]), flush=True)
"""


def search_p50(
    vault: Path, envs: dict[str, dict[str, str]], trees: dict[str, Path], n: int, count: int, built: bool
) -> dict[str, Any]:
    """Queries sent to one search process per side (``SEARCHER``), alternately, in text mode (the
    budget's) and in the default hybrid mode;
    ``built``: the vault holds its index already (else it is built first, untimed)."""
    procs = {
        side: subprocess.Popen(
            [sys.executable, "-c", SEARCHER, str(vault)],
            env=envs[side],
            cwd=trees[side],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for side in SIDES
    }

    def ask(side: str, kind: str, q: str) -> tuple[float, float, Any]:
        proc = procs[side]
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps([kind, q]) + "\n")
        proc.stdin.flush()
        dt, dc, top = json.loads(proc.stdout.readline())
        return float(dt), float(dc), top

    try:
        rows: dict[str, Any] = {}
        if not built:  # (both sides query the index this builds)
            t0 = time.perf_counter()
            rows["documents"] = ask("after", "build", "")[2]
            rows["index_build_s"] = round(time.perf_counter() - t0, 1)
        rng = random.Random(7)
        one = [str(rng.randrange(n)) if i % 4 else "synthetic" for i in range(count)]
        two = [f"entry {rng.randrange(n)}" if i % 4 else "second line" for i in range(count)]
        qs = {"text: one term": one, "text: two terms": two, "hybrid: one term": one}
        for side in SIDES:
            ask(side, "text", "warmup")
            ask(side, "hybrid", "warmup")
        differ = 0
        for kind, items in qs.items():
            got: dict[str, list[tuple[float, float]]] = {side: [] for side in SIDES}
            for order, q in zip(turns(len(items)), items, strict=True):
                tops = {}
                for side in order:
                    dt, dc, tops[side] = ask(side, kind.split(":")[0], q)
                    got[side].append((dt * 1000, dc * 1000))
                differ += tops["before"] != tops["after"]
            rows[kind] = {
                side: {
                    "p50_ms": round(pct([w for w, _ in v], 0.5), 2),
                    "p90_ms": round(pct([w for w, _ in v], 0.9), 2),
                    "cpu_p50_ms": round(pct([c for _, c in v], 0.5), 2),
                }
                for side, v in got.items()
            }
        rows["queries_whose_top_10_differ"] = differ
        return rows
    finally:
        for proc in procs.values():
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=120)


def processes(envs: dict[str, dict[str, str]], trees: dict[str, Path], runs: int) -> dict[str, Any]:
    """``python -c pass``, ``nexus brief`` and ``nexus log append`` as processes, in one loop."""
    commands = {
        "python -c pass": ["-c", "pass"],
        "brief": ["-m", "nexus", "brief", "--agent", "lyra", "--peek"],
        "log append": ["-m", "nexus", "log", "append", "--agent", "ella", "--channel", "bench", "--type"],
    }
    got: dict[str, dict[str, list[tuple[float, float]]]] = {k: {s: [] for s in SIDES} for k in commands}
    for i, order in enumerate(turns(runs)):
        for side in order:
            for name, args in commands.items():
                cmd = [sys.executable, *args]
                if name == "log append":
                    cmd += ["note", "--summary", f"side by side {side} {i}"]
                got[name][side].append(timed(cmd, envs[side], trees[side]))
    return {
        name: {
            side: {
                "p50_ms": round(statistics.median(w for w, _ in v), 1),
                "cpu_p50_ms": round(statistics.median(c for _, c in v), 1),
            }
            for side, v in by_side.items()
        }
        for name, by_side in got.items()
    }


async def _one_server(env: dict[str, str], tree: Path, agent: str, tag: str) -> float:
    """Spawn ``nexus mcp --agent A`` through the official client; its first call is a ``log_append``.
    Milliseconds from spawn to the append's answer."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "nexus", "mcp", "--agent", agent], env=env, cwd=str(tree)
    )
    t0 = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool(
            "log_append", {"channel": "bench", "type": "note", "summary": f"four at once {tag} {agent}"}
        )
        elapsed = (time.perf_counter() - t0) * 1000
        assert not result.is_error, result.content
    return elapsed


def four_mcp_servers(envs: dict[str, dict[str, str]], trees: dict[str, Path], rounds: int) -> dict[str, Any]:
    """Four servers (one per agent) spawned at once, each appending as its session's first call."""
    got: dict[str, dict[str, list[float]]] = {
        s: {"each_ms": [], "slowest_ms": [], "cpu_ms": []} for s in SIDES
    }
    for i, order in enumerate(turns(rounds)):
        for side in order:
            env = {k: v for k, v in envs[side].items() if k in ("NEXUS_VAULT", "NEXUS_HOME", "PYTHONPATH")}

            async def together(side: str = side, env: dict[str, str] = env, i: int = i) -> list[float]:
                return list(
                    await asyncio.gather(
                        *(_one_server(env, trees[side], a, f"{side}{i}") for a in MCP_AGENTS)
                    )
                )

            c0 = children_cpu()
            each = asyncio.run(together())
            got[side]["cpu_ms"].append((children_cpu() - c0) * 1000)
            got[side]["each_ms"] += each
            got[side]["slowest_ms"].append(max(each))
    return {
        side: {
            "each_p50_ms": round(pct(v["each_ms"], 0.5), 1),
            "each_p90_ms": round(pct(v["each_ms"], 0.9), 1),
            "slowest_of_four_p50_ms": round(pct(v["slowest_ms"], 0.5), 1),
            "cpu_of_four_p50_ms": round(pct(v["cpu_ms"], 0.5), 1),
        }
        for side, v in got.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, required=True, help="another checkout of nexus")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--vaults", type=Path, default=bench_costs.VAULTS[0])
    parser.add_argument("--verify-runs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--mcp-rounds", type=int, default=5)
    args = parser.parse_args()
    bench_costs.VAULTS[0] = args.vaults
    source = bench_costs.prepare(args.n)
    work = Path(tempfile.mkdtemp(prefix="bench-budgets-", dir=args.vaults))
    try:
        shutil.copytree(source / "vault", work / "vault", symlinks=True)
        shutil.copytree(source / "keys", work / "keys")
        vault, keys = Vault(work / "vault"), work / "keys"
        identity.add(vault, keys, "nova")  # (a fourth agent for the MCP round)
        trees = {"before": args.before.resolve(), "after": ROOT}
        base = dict(os.environ, NEXUS_VAULT=str(vault.root), NEXUS_HOME=str(keys))
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        envs = {side: dict(base, PYTHONPATH=str(tree)) for side, tree in trees.items()}
        for side in SIDES:  # (bytecode written before anything is timed)
            subprocess.run(
                [sys.executable, "-m", "nexus", "--help"],
                env=envs[side],
                cwd=trees[side],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        result: dict[str, Any] = {
            "entries": args.n,
            "before": str(trees["before"]),
            "load_start": os.getloadavg()[0],
        }
        result["verify_full"] = full_verify(args.n, envs, trees, args.verify_runs)
        print(json.dumps({"verify_full": result["verify_full"]}), flush=True)
        # Search reads the kept vault itself (queries change nothing; a copy would be indexed again,
        # minutes at 100k): its index is built once (`nexus index rebuild`, then a file `indexed`).
        kept = {
            side: dict(env, NEXUS_VAULT=str(source / "vault"), NEXUS_HOME=str(source / "keys"))
            for side, env in envs.items()
        }
        indexed = (source / "indexed").exists()
        result["search"] = search_p50(source / "vault", kept, trees, args.n, args.queries, indexed)
        print(json.dumps({"search": result["search"]}), flush=True)
        result["processes"] = processes(envs, trees, args.runs)
        print(json.dumps({"processes": result["processes"]}), flush=True)
        result["four_mcp_servers"] = four_mcp_servers(envs, trees, args.mcp_rounds)
        print(json.dumps({"four_mcp_servers": result["four_mcp_servers"]}), flush=True)
        result["load_end"] = os.getloadavg()[0]
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "bench_budgets.json").write_text(json.dumps(result, indent=2) + "\n")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
