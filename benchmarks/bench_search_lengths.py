"""Search latency by query length, on realistic text, side by side with another checkout.

    .venv/bin/python benchmarks/bench_search_lengths.py --keep DIR [--entries 100000] [--queries 200]
        [--before /work/main [--before-python /work/main/.venv/bin/python]] [--json]

The vault is bench_meaning's (``--keep DIR``: made under DIR/ENTRIES once, with both indexes, and
reused): signed entries, decisions and notes whose words are drawn from this project's documentation
with Zipf frequencies, so a few words are in most documents and most words in few.

Queries: one, two and three words drawn with the same frequencies (stop words left out: the index
drops them), ``--queries`` of each; and, reported apart as the worst case, the most common indexed
words (the first alone, the first two, the first three) and the most common word added to each
one-word query: a query that matches most of the vault. Each query runs in text and hybrid mode.

With ``--before PATH`` the same queries go to a process of that checkout and one of this one, on the
same vault, alternately (the order alternating), one at a time, so both run under the same load;
it reports p50/p99 wall time and p50 CPU time (the process's user+sys) of each, and how many queries'
top 10 differ between them. Without it, this checkout alone. Each process searches as the CLI does
(``fresh=True``: the freshness check included) and keeps its caches between queries, as the MCP
server does; every query is timed the first time it is asked.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_meaning
import bench_search

from nexus import search
from nexus.search import engine, manifest, vector_writer
from nexus.search.engine import STOP
from nexus.search.language import analysis
from nexus.storage.vault import Vault
from nexus.trust import Trust

WORKER = r"""
import json, resource, sys, time
from pathlib import Path
from nexus import search
from nexus.storage.vault import Vault
from nexus.trust import Trust

def cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime

vault, trust = Vault(Path(sys.argv[1])), Trust(Path(sys.argv[2]))  # as the CLI: this machine's pins
for line in sys.stdin:
    mode, q = json.loads(line)
    c, t = cpu(), time.perf_counter()
    hits = search.search(vault, q, limit=10, mode=mode, trust=trust)
    dt, dc = time.perf_counter() - t, cpu() - c
    print(json.dumps([dt, dc, [[h.path, h.line_start, round(h.score, 6)] for h in hits]]), flush=True)
"""
MODES = ("text", "hybrid")
Times = dict[tuple[str, str, str], list[tuple[float, float]]]


def vault_at(folder: Path, entries: int) -> Vault:
    """bench_meaning's vault under ``folder``, made (with both indexes) when missing; its text index
    built once with the pins and seal secret of ``folder/home`` (what the workers search with), so
    hits are proven by their seals as the CLI's are."""
    if (folder / "v").is_dir():
        vault = Vault(folder / "v")
    else:
        folder.mkdir(parents=True, exist_ok=True)
        bench_search.vocabulary = bench_meaning.real_vocabulary
        vault, _, _ = bench_search.make_vault(folder / "v", folder / "k", entries, random.Random(7))
    trust = Trust(folder / "home")
    if not (folder / "home" / "sealed").exists():
        (folder / "home").mkdir(exist_ok=True)
        search.rebuild(vault, trust=trust)
        (folder / "home" / "sealed").touch()
    search.refresh(vault, trust=trust)
    vector_writer.refresh(vault, trust=trust)
    return vault


def query_sets(vault: Vault, n: int) -> tuple[dict[str, list[str]], dict[str, float]]:
    """Realistic queries by length, and the worst case (see the module); the share of documents the
    most common words are in."""
    words, cum = bench_meaning.real_vocabulary(random.Random(7))
    weights = [b - a for a, b in zip([0.0, *cum], cum, strict=False)]
    kept = [(w, x) for w, x in zip(words, weights, strict=True) if w not in STOP]
    pool, pw = [w for w, _ in kept], [x for _, x in kept]
    rng = random.Random(13)
    sets = {
        f"{length} word{'s' if length > 1 else ''}": [
            " ".join(rng.choices(pool, weights=pw, k=length)) for _ in range(n)
        ]
        for length in (1, 2, 3)
    }
    current = manifest.load(vault)
    assert current is not None
    searcher = engine.Index.open(manifest.index_dir(vault) / current.dir).searcher()
    stems = analysis(("en",))
    try:
        total = searcher.doc_count_all()
        df = {w: max(searcher.doc_frequency("text", s) for s in stems.stems(w)) for w in pool[:200]}
    finally:
        searcher.close()
    common = sorted(df, key=lambda w: -df[w])[:3]
    shares = {w: round(df[w] / total, 3) for w in common}
    sets["worst: the most common words"] = [" ".join(common[:i]) for i in (1, 2, 3)] * 10
    sets["worst: the most common word + one word"] = [f"{common[0]} {q}" for q in sets["1 word"][:50]]
    return sets, shares


def start(tree: Path, python: str, vault: Vault, home: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.Popen(
        [python, "-c", WORKER, str(vault.root), str(home)],
        env=env,
        cwd=str(tree),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def ask(proc: subprocess.Popen[str], mode: str, q: str) -> tuple[float, float, object]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps([mode, q]) + "\n")
    proc.stdin.flush()
    dt, dc, top = json.loads(proc.stdout.readline())
    return float(dt), float(dc), top


def run(
    sides: dict[str, subprocess.Popen[str]], sets: dict[str, list[str]]
) -> tuple[Times, dict[tuple[str, str], int]]:
    """Every query in every mode, sent to each side in turn (the order alternating): each side's
    (wall, CPU) seconds, and how many queries' top 10 differ between the sides."""
    names = sorted(sides)
    for name in names:  # models loaded, stores opened, a few words decoded
        for mode in MODES:
            ask(sides[name], mode, "warm up the search")
    times: Times = {}
    differ: dict[tuple[str, str], int] = {}
    j = 0
    for kind, qs in sets.items():
        for q in qs:
            for mode in MODES:
                got = {}
                j += 1
                for name in names if j % 2 else names[::-1]:
                    dt, dc, got[name] = ask(sides[name], mode, q)
                    times.setdefault((kind, mode, name), []).append((dt, dc))
                if len(got) == 2:
                    differ[(kind, mode)] = differ.get((kind, mode), 0) + (got["after"] != got["before"])
    return times, differ


def report(
    times: Times, differ: dict[tuple[str, str], int], sets: dict[str, list[str]], names: list[str]
) -> dict[str, object]:
    result: dict[str, object] = {}
    for kind, qs in sets.items():
        for mode in MODES:
            row: dict[str, object] = {"queries": len(qs)}
            for name in names:
                walls = [t for t, _ in times[(kind, mode, name)]]
                cpus = [c for _, c in times[(kind, mode, name)]]
                row[f"{name}_p50_ms"] = round(bench_search.pct(walls, 0.5), 2)
                row[f"{name}_p99_ms"] = round(bench_search.pct(walls, 0.99), 2)
                row[f"{name}_cpu_p50_ms"] = round(bench_search.pct(cpus, 0.5), 2)
            if "before" in names:
                row["top_10_differ"] = differ.get((kind, mode), 0)
            result[f"{kind} ({mode})"] = row
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", type=Path, required=True, help="the folder bench_meaning --keep uses")
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200, help="queries of each length")
    ap.add_argument("--before", type=Path, help="an earlier checkout to run side by side with this one")
    ap.add_argument("--before-python", default=sys.executable, help="the Python of --before's checkout")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    folder = args.keep / str(args.entries)
    vault = vault_at(folder, args.entries)
    sets, shares = query_sets(vault, args.queries)
    here = Path(__file__).resolve().parent.parent
    sides = {"after": start(here, sys.executable, vault, folder / "home")}
    if args.before is not None:
        sides["before"] = start(args.before.resolve(), args.before_python, vault, folder / "home")
    load = [os.getloadavg()[0]]
    try:
        times, differ = run(sides, sets)
    finally:
        for proc in sides.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=60)
    load.append(os.getloadavg()[0])
    result: dict[str, object] = {
        "entries": args.entries,
        "load_average_start_end": load,
        "most_common_words_share_of_documents": shares,
        **report(times, differ, sets, sorted(sides)),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:48} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
