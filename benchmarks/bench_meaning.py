"""Search by meaning: speed and size next to text search on the same synthetic vault, in one run.

    .venv/bin/python benchmarks/bench_meaning.py [--entries 100000] [--queries 200] [--keep DIR] [--json]
    .venv/bin/python benchmarks/bench_meaning.py --store-only 1000000

Builds the vault of benchmarks/bench_search.py (signed entries in month segments, decisions and
notes) with words drawn from this project's own documentation (so the model sees real words), then
measures: the text index's first build and the vector store's (every entry embedded, in as many
processes as there are cores), their sizes on disk; query latency p50/p99 in text, meaning and
hybrid modes, the modes alternating query by query; the added memory of a searching process (a
fresh process's resident size after 20 queries by text, then after the same 20 in hybrid
mode); how many of the exact
top 10 by cosine the store's two-stage ranking (Hamming distance of the signs, then int8) returns;
and the time from an append until a search that does not refresh (``fresh=False``) finds the entry by
meaning while a watchdog observer refreshes both indexes as ``nexus watch`` does.

``--keep DIR`` makes the vault under DIR and reuses it (indexes included) on later runs: a first
embedding of 100,000 entries takes minutes. ``--store-only N`` measures a store of N random vectors
alone (what a searching process adds for it, the CPU time of ranking with it): the figure at sizes
no vault here is built for.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_search
import numpy as np

from nexus import search
from nexus.keys import identity
from nexus.ledger import log
from nexus.search import embedding, vector_writer, vectors
from nexus.storage.vault import Vault
from nexus.trust import NO_PINS

ROOT = Path(__file__).resolve().parent.parent


def real_vocabulary(rng: random.Random, size: int = 8000) -> tuple[list[str], list[float]]:
    """Words of the project's docs, most frequent first (Zipf weights, as bench_search draws)."""
    text = " ".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))
    counts: dict[str, int] = {}
    for w in re.findall(r"[a-z]{2,}", text.lower()):
        counts[w] = counts.get(w, 0) + 1
    words = sorted(counts, key=lambda w: -counts[w])[:size]
    cum = list(itertools.accumulate(1 / (r + 1) for r in range(len(words))))
    return words, cum


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def latencies(vault: Vault, qs: list[str]) -> dict[str, list[float]]:
    """Each mode's wall time a query, and its CPU time (``MODE_cpu``: this process's, which on a
    shared machine says what a query costs when others' load stretches the wall time)."""
    out: dict[str, list[float]] = {}
    for q in qs:
        for mode in ("text", "meaning", "hybrid"):
            t, c = time.perf_counter(), time.process_time()
            search.search(vault, q, limit=10, mode=mode)
            out.setdefault(mode, []).append(time.perf_counter() - t)
            out.setdefault(f"{mode}_cpu", []).append(time.process_time() - c)
    return out


def two_stage_recall(vault: Vault, qs: list[str]) -> float:
    """Of the exact top 10 by cosine over every live row, the share the store's ranking returns."""
    meta = vectors.load_meta(vault)
    assert meta is not None
    store = vectors.OPENED.open(vault, meta)
    live = np.flatnonzero(store.keys["alive"] == 1)
    every = store.rows["vec"][live].astype(np.float32) * store.rows["scale"][live][:, None]
    found = 0
    for q in qs:
        v = vectors.embed_query(vault, q)
        assert v is not None
        exact = set(live[np.argsort(-(every @ v))[:10]].tolist())
        found += len(exact & {row for _, row in store.top(v, 10)})
    return found / (10 * len(qs))


MEMORY = """
import json, sys
from pathlib import Path
from nexus import search
from nexus.storage.vault import Vault
from nexus.trust import NO_PINS
def rss():
    return int(next(l for l in open('/proc/self/status') if l.startswith('VmRSS')).split()[1]) / 1024
vault = Vault(Path(sys.argv[1]))
for q in sys.argv[2:]:
    search.search(vault, q, mode='text')
text = rss()
for q in sys.argv[2:]:
    search.search(vault, q, mode='hybrid')
print(json.dumps({'after_text': text, 'after_hybrid': rss()}))
"""


def memory(vault: Vault, qs: list[str]) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY, str(vault.root), *qs[:20]], capture_output=True, text=True, check=True
    )
    got: dict[str, float] = json.loads(proc.stdout)
    got["added"] = got["after_hybrid"] - got["after_text"]
    return got


STORE_MEMORY = """
import json, sys, time
from pathlib import Path
import numpy as np
from nexus.search import vectors
def rss():
    return int(next(l for l in open('/proc/self/status') if l.startswith('VmRSS')).split()[1]) / 1024
path, n = Path(sys.argv[1]), int(sys.argv[2])
before = rss()
store = vectors.Store(path, vectors.Meta(path.name, "synthetic", n))
rng = np.random.default_rng(3)
took = []
for _ in range(50):
    q = rng.standard_normal(512).astype(np.float32)
    q /= np.linalg.norm(q)
    t = time.process_time()
    store.top(q, 30)
    took.append(time.process_time() - t)
print(json.dumps({"added_mb": rss() - before, "top_cpu_ms_p50": 1000 * sorted(took)[25]}))
"""


def synthetic_store(n: int) -> dict[str, float]:
    """A store of ``n`` random unit vectors in the store's own files, and what a process that opens
    it and ranks 50 queries with it adds to its resident memory (the model is measured apart)."""
    with tempfile.TemporaryDirectory(prefix="nexus-bench-store-") as tmp:
        path = Path(tmp) / "v-synthetic"
        path.mkdir()
        rng = np.random.default_rng(1)
        with (
            open(path / "codes.bin", "wb") as codes,
            open(path / "keys.bin", "wb") as keys,
            open(path / "rows.bin", "wb") as rows,
        ):
            for start in range(0, n, 50_000):
                m = min(50_000, n - start)
                v = rng.standard_normal((m, embedding.DIMS)).astype(np.float32)
                v /= np.linalg.norm(v, axis=1, keepdims=True)
                q, scale = vector_writer._quantised(v)
                codes.write(np.packbits(v > 0, axis=1).tobytes())
                k = np.zeros(m, dtype=vectors.KEYS)
                k["key"], k["alive"] = np.arange(start, start + m, dtype=np.uint64), 1
                keys.write(k.tobytes())
                r = np.zeros(m, dtype=vectors.ROWS)
                r["vec"], r["scale"] = q, scale
                rows.write(r.tobytes())
        (path / "rows.jsonl").write_bytes(b"")
        proc = subprocess.run(
            [sys.executable, "-c", STORE_MEMORY, str(path), str(n)],
            capture_output=True,
            text=True,
            check=True,
        )
        got: dict[str, float] = json.loads(proc.stdout)
    return {k: round(v, 1) for k, v in got.items()}


def watcher_latency(vault: Vault, signer: identity.Signer, rounds: int) -> list[float]:
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if str(event.src_path).endswith(".md"):
                search.refresh(vault)
                search.refresh_vectors(vault, NO_PINS)

    observer = Observer()
    observer.schedule(Handler(), str(vault.log_dir), recursive=False)
    observer.start()
    out = []
    try:
        for i in range(rounds):
            animal = ("zebras", "penguins", "otters", "falcons", "walruses")[i % 5]
            e = log.append(
                vault, signer, channel="ops", type="note", summary=f"The {animal} migrated south in round {i}"
            ).located.entry
            t = time.perf_counter()
            while e.id not in [
                h.entry_id
                for h in search.search(
                    vault, f"{animal} moving away in round {i}", mode="meaning", fresh=False
                )
            ]:
                if time.perf_counter() - t > 10:
                    raise AssertionError("not found by meaning within 10 s")
                time.sleep(0.005)
            out.append(time.perf_counter() - t)
    finally:
        observer.stop()
        observer.join()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--store-only",
        type=int,
        metavar="N",
        help="only measure a synthetic store of N random vectors: the memory a searching process "
        "adds for it and the CPU time of ranking with it (no vault, no model)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="make the vault in this folder and keep it; a later run given the same folder reuses it "
        "(and its indexes, so the build times are then those of a refresh)",
    )
    args = parser.parse_args()
    if args.store_only:
        print(json.dumps({"rows": args.store_only, **synthetic_store(args.store_only)}, indent=2))
        return 0
    rng = random.Random(7)
    bench_search.vocabulary = real_vocabulary
    with tempfile.TemporaryDirectory(prefix="nexus-bench-meaning-") as scratch:
        tmp = args.keep / str(args.entries) if args.keep else Path(scratch)
        t = time.perf_counter()
        if (tmp / "v").is_dir():
            vault = Vault(tmp / "v")
            words, cum = real_vocabulary(rng)
        else:
            tmp.mkdir(parents=True, exist_ok=True)
            vault, words, cum = bench_search.make_vault(tmp / "v", tmp / "k", args.entries, rng)
        made = time.perf_counter() - t
        t = time.perf_counter()
        search.refresh(vault)
        text_build = time.perf_counter() - t
        shown = [0.0]

        def progress(done: int, total: int) -> None:
            if time.perf_counter() - shown[0] > 10:
                shown[0] = time.perf_counter()
                print(f"  embedded {done:,} of {total:,}", file=sys.stderr, flush=True)

        t, c = time.perf_counter(), time.process_time()
        cpu_before = _children_cpu()
        meta = vector_writer.refresh(vault, progress=progress)
        vector_build = time.perf_counter() - t
        vector_cpu = time.process_time() - c + _children_cpu() - cpu_before
        qrng = random.Random(11)  # the same queries whether the vault was made now or kept
        qs = [
            " ".join(qrng.choices(words, cum_weights=cum, k=qrng.randint(3, 8))) for _ in range(args.queries)
        ]
        search.search(vault, qs[0], mode="hybrid")  # model loaded, store opened
        lat = latencies(vault, qs)
        result = {
            "entries": args.entries,
            "documents_embedded": meta.rows,
            "vault_made_s": round(made, 1),
            "text_build_s": round(text_build, 1),
            "vector_build_s": round(vector_build, 1),
            "texts_per_s": round(meta.rows / vector_build),
            "texts_per_cpu_s": round(meta.rows / vector_cpu),
            "text_index_mb": round(folder_size(search.index_dir(vault)) / 1e6, 1),
            "vector_store_mb": round(folder_size(vectors.folder(vault)) / 1e6, 1),
            **{
                f"{mode}_ms": {
                    "p50": round(bench_search.pct(v, 0.5), 2),
                    "p99": round(bench_search.pct(v, 0.99), 2),
                }
                for mode, v in lat.items()
            },
            "two_stage_recall_at_10": round(two_stage_recall(vault, qs[:50]), 3),
            "memory_mb": {k: round(v, 1) for k, v in memory(vault, qs).items()},
        }
        signer = identity.load_signer(vault, Path(tmp) / "k", "ella")
        w = watcher_latency(vault, signer, 10)
        result["append_to_found_by_meaning_s"] = {
            "p50": round(sorted(w)[len(w) // 2], 3),
            "max": round(max(w), 3),
        }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for k, v in result.items():
            print(f"{k:32} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
