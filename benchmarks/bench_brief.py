"""`nexus brief` as a whole process on a vault whose log holds 100k entries, against `python -c pass`.

    .venv/bin/python benchmarks/bench_brief.py [--n 100000] [--runs 30]

The vault is generated fast: signed, chained entries rendered straight into monthly segments (no 100k
appends). Agents ella, lyra and mira take turns; each entry's ``seen`` is the entry before it (its
author had read everything) except every 997th (a race); every 50th entry is a decision, acked by the
other agents except every 7th (so lyra owes some). lyra's cursor and the tail state are set at the end.

Timed, each run interleaved with a ``python -c pass`` run so both see the same load:

* **steady**: ``nexus brief --agent lyra --peek`` with nothing new (the derived view is current);
* **one new**: ella appends one entry first (untimed), then the brief (catches up from the saved
  offsets: reads only the new bytes);
* **cold**: ``.nexus/coord/`` deleted first: the brief rebuilds the derived state from the whole log
  (what happens once, or after an editor rewrote a segment with no watcher running).

Target (issue 3): steady and one-new p50 within 10x of ``python -c pass``.
JSON goes to benchmarks/results/bench_brief.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import pct  # noqa: E402

from nexus.keys import identity  # noqa: E402
from nexus.ledger import log  # noqa: E402
from nexus.records import Entry  # noqa: E402
from nexus.storage import entries, segments  # noqa: E402
from nexus.storage.vault import Vault, init  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
STEP_MS = 27_000  # 27 s between entries: fewer than 100k entries in a month
AGENTS = ("ella", "lyra", "mira")


def generate(vault: Vault, keys: Path, n: int, version: int = entries.WRITTEN_VERSION) -> dict[str, int]:
    """``n`` signed entries by three agents in the entry format ``version`` (default: the one nexus
    writes; 1: the older one, which nexus still reads), with the tail state and lyra's cursor."""
    signers = {name: identity.load_signer(vault, keys, name) for name in AGENTS}
    heads: dict[str, tuple[int, str]] = {}
    start_ms = int(time.time() * 1000) - (n + 10) * STEP_MS
    out: dict[str, list[bytes]] = {}
    sizes: dict[str, int] = {}
    lines: dict[str, int] = {}
    marks: dict[str, list[object]] = {}
    prev_id: str | None = None
    waiting: dict[str, tuple[str, set[str]]] = {}  # decision id -> (author, agents yet to ack it)
    skip: dict[str, bool] = {}
    counts = {"decisions": 0}
    for i in range(n):
        ms = start_ms + i * STEP_MS
        ts = entries.utc_ts(ms)
        seg = entries.segment_name(ts)
        if seg not in out:
            pre = segments.preamble(seg).encode()
            out[seg], sizes[seg], lines[seg] = [pre], len(pre), pre.count(b"\n")
        agent = AGENTS[i % 3]
        ack: tuple[str, ...] = ()
        for d_id in list(waiting):  # ack the decisions by others (lyra leaves every 7th)
            _author, todo = waiting[d_id]
            if agent in todo:
                todo.discard(agent)
                if not (agent == "lyra" and skip.get(d_id)):
                    ack += (d_id,)
                if not todo:
                    del waiting[d_id]
        type_ = "decision" if i % 50 == 0 else "note"
        seen = None if i % 997 == 0 else prev_id
        head = heads.get(agent)
        e = Entry(
            id=entries.encode_id(ms, int.from_bytes(os.urandom(10), "big")),
            ts=ts,
            agent=agent,
            channel="bench",
            type=type_,
            summary=f"synthetic entry {i} of {n}",
            body=f"Body of entry {i}.\nA second line." if i % 2 else None,
            ack=ack,
            seen=seen,
            seq=head[0] + 1 if head else 1,
            prev=(head[1] if head else None) if version == 1 else None,
            key=signers[agent].key_id if version == 1 else "",
            v=version,
        )
        canonical = entries.canonical(e)
        e = replace(e, sig=signers[agent].sign(entries.sign_context(e) + canonical))
        heads[agent] = (e.seq, entries.hash_canonical(canonical, e.sig))
        if type_ == "decision":
            waiting[e.id] = (agent, set(AGENTS) - {agent})
            skip[e.id] = counts["decisions"] % 7 == 0
            counts["decisions"] += 1
        data = entries.render(e).encode()
        out[seg].append(data)
        sizes[seg] += len(data)
        lines[seg] += data.count(b"\n")
        marks[seg] = [sizes[seg] - 1, lines[seg], e.id]  # end of the end line (before the blank line)
        prev_id = e.id
    for seg, chunks in out.items():
        with open(vault.log_dir / f"{seg}.md", "wb") as f:
            f.writelines(chunks)
    newest = max(out)
    state = {
        "segment": newest,
        "size": sizes[newest],
        "lines": lines[newest],
        "last_id": prev_id,
        "seg_last": [sizes[newest], lines[newest] + 1, prev_id, sizes[newest]],  # (a mark)
        "heads": {a: list(h) for a, h in heads.items()},
    }
    (vault.state / "tail.json").write_text(json.dumps(state), encoding="utf-8")
    cursor = {"seen": prev_id, "segments": {seg: [*mark, sizes[seg]] for seg, mark in marks.items()}}
    (vault.state / "cursors" / "lyra.json").write_text(json.dumps(cursor), encoding="utf-8")
    return counts


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} failed: {proc.stderr}")
    return elapsed, proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--cold-runs", type=int, default=3)
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-brief-", dir=RESULTS))
    try:
        keys = tmp / "keys"
        vault, _ = init(tmp / "vault")
        for name in AGENTS:
            identity.add(vault, keys, name)
        identity.add(vault, keys, "sam", human=True)
        t0 = time.perf_counter()
        counts = generate(vault, keys, args.n)
        gen_s = time.perf_counter() - t0
        env = dict(os.environ, NEXUS_VAULT=str(vault.root), NEXUS_HOME=str(keys))
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its .pyc files
        py = sys.executable
        brief_cmd = [py, "-m", "nexus", "brief", "--agent", "lyra", "--peek"]
        base_cmd = [py, "-c", "pass"]
        _t_cold, first = timed(brief_cmd, env, ROOT)  # builds the derived state once
        owed = json.loads(timed([*brief_cmd, "--json"], env, ROOT)[1])
        ella = identity.load_signer(vault, keys, "ella")
        base, steady, one_new = [], [], []
        for i in range(args.runs):
            base.append(timed(base_cmd, env, ROOT)[0])
            steady.append(timed(brief_cmd, env, ROOT)[0])
            log.append(vault, ella, channel="bench", type="note", summary=f"new {i}")
            base.append(timed(base_cmd, env, ROOT)[0])
            elapsed, text = timed(brief_cmd, env, ROOT)
            assert f"new {i}" in text, text[-500:]
            one_new.append(elapsed)
        cold = []
        for _ in range(args.cold_runs):
            shutil.rmtree(vault.state / "coord", ignore_errors=True)
            cold.append(timed(brief_cmd, env, ROOT)[0])
        b50 = statistics.median(base)
        row = {
            "entries": args.n,
            "log_mb": round(sum(p.stat().st_size for _, p in log.segment_files(vault)) / 1e6, 1),
            "generate_s": round(gen_s, 1),
            "decisions": counts["decisions"],
            "owed_by_lyra": len(owed["owed"]),
            "races_of_lyra": len(owed["races"]),
            "python_pass_p50_ms": round(b50 * 1000, 1),
            "brief_steady_p50_ms": round(statistics.median(steady) * 1000, 1),
            "brief_steady_p99_ms": round(pct(steady, 0.99) * 1000, 1),
            "brief_one_new_p50_ms": round(statistics.median(one_new) * 1000, 1),
            "brief_one_new_p99_ms": round(pct(one_new, 0.99) * 1000, 1),
            "brief_cold_p50_ms": round(statistics.median(cold) * 1000, 1),
            "steady_ratio": round(statistics.median(steady) / b50, 1),
            "one_new_ratio": round(statistics.median(one_new) / b50, 1),
            "brief_chars": len(first),
        }
        print(json.dumps(row, indent=2))
        (RESULTS / "bench_brief.json").write_text(json.dumps(row, indent=2) + "\n")
        ok = row["steady_ratio"] <= 10 and row["one_new_ratio"] <= 10
        print(f"target p50 <= 10x python -c pass: {'met' if ok else 'NOT met'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
