"""Read-since-cursor on logs of 10k, 100k and 1M entries: the cost stays flat.

    .venv/bin/python benchmarks/bench_read.py [--sizes 10000,100000,1000000] [--runs 50]

For each size a vault is generated fast by rendering signed, chained entries straight into monthly
segments (at most 100k entries a month; no 1M appends), with lyra's cursor and the tail state set at
the end, as they would be after lyra had read everything. Then, ``--runs`` times: ella appends one
entry, and ``log.unread(lyra)`` is timed (it must return exactly that entry). Also timed: ``log.tail``
of 10 entries, and ``nexus log read`` as a whole process. The ratio 1M / 10k of the read p50 shows
whether reading stays flat. JSON goes to benchmarks/results/bench_read.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
PER_MONTH = 100_000
STEP_MS = 27_000  # 27 s between entries: at most 99.2k entries in a 31-day month (< PER_MONTH)


def generate(vault: Vault, keys: Path, n: int) -> float:
    """Render n signed entries (ella, lyra, sam in turn) into month segments; set cursors and tail."""
    t0 = time.perf_counter()
    signers = {name: identity.load_signer(vault, keys, name) for name in ("ella", "lyra", "sam")}
    names = list(signers)
    heads: dict[str, tuple[int, str]] = {}
    start_ms = int(time.time() * 1000) - (n + 10) * STEP_MS
    files: dict[str, tuple[int, int, int, str]] = {}  # segment -> (size, lines, last start, last id)
    cur_name: str | None = None
    out: list[bytes] = []
    size = lines = 0
    month_count = 0
    last_end: dict[str, tuple[int, int, str]] = {}
    last_id = ""

    def flush() -> None:
        if cur_name is not None:
            with open(vault.log_dir / f"{cur_name}.md", "wb") as f:
                f.writelines(out)

    for i in range(n):
        ms = start_ms + i * STEP_MS
        ts = entries.utc_ts(ms)
        seg = entries.segment_name(ts)
        if seg != cur_name or month_count >= PER_MONTH:
            if seg == cur_name:  # too many for one month: compress time instead
                raise SystemExit("STEP_MS too small for PER_MONTH")
            flush()
            cur_name, out, month_count = seg, [], 0
            pre = segments.preamble(seg).encode()
            out.append(pre)
            size, lines = len(pre), pre.count(b"\n")
        agent = names[i % 3]
        head = heads.get(agent)
        e = Entry(
            id=entries.encode_id(ms, int.from_bytes(os.urandom(10), "big")),
            ts=ts,
            agent=agent,
            channel="bench",
            type="note",
            summary=f"synthetic entry {i} of {n}",
            body=f"Body of entry {i}.\nA second line." if i % 2 else None,
            ack=(),
            seen=None,
            seq=int(head[0]) + 1 if head else 1,
            prev=None,  # (the entry format nexus writes: no prev, no key id)
            key="",
            v=entries.WRITTEN_VERSION,
        )
        canonical = entries.canonical(e)
        e = replace(e, sig=signers[agent].sign(entries.sign_context(e) + canonical))
        heads[agent] = (e.seq, entries.hash_canonical(canonical, e.sig))
        data = entries.render(e).encode()
        start, first_line = size, lines + 1
        out.append(data)
        size += len(data)
        lines += data.count(b"\n")
        month_count += 1
        last_end[seg] = (start + len(data) - 1, first_line + data.count(b"\n") - 1, e.id)
        files[seg] = (size, lines, start, e.id)
        last_id = e.id
    flush()
    assert cur_name is not None
    size, lines, start, lid = files[cur_name]
    state = {
        "segment": cur_name,
        "size": size,
        "lines": lines,
        "last_id": last_id,
        "seg_last": [size, lines + 1, lid, size],  # (a mark: after the last entry and its blank line)
        "heads": heads,
    }
    (vault.state / "tail.json").write_text(json.dumps(state), encoding="utf-8")
    marks = {seg: [end, line, eid, files[seg][0]] for seg, (end, line, eid) in last_end.items()}
    cursor = {"seen": last_id, "segments": marks}
    (vault.state / "cursors" / "lyra.json").write_text(json.dumps(cursor), encoding="utf-8")
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--cli-runs", type=int, default=10)
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        tmp = Path(tempfile.mkdtemp(prefix=f"bench-read-{n}-", dir=RESULTS))
        try:
            keys = tmp / "keys"
            vault, _ = init(tmp / "vault")
            for name in ("ella", "lyra", "sam"):
                identity.add(vault, keys, name)
            gen_s = generate(vault, keys, n)
            mb = sum(p.stat().st_size for _, p in log.segment_files(vault)) / 1e6
            ella = identity.load_signer(vault, keys, "ella")
            reads, peeks, tails = [], [], []
            for i in range(args.runs):
                new = log.append(vault, ella, channel="bench", type="note", summary=f"new {i}").located
                t0 = time.perf_counter()
                got = log.unread(vault, "lyra", advance=False)
                peeks.append(time.perf_counter() - t0)
                assert [g.entry.id for g in got] == [new.entry.id], (n, len(got))
                t0 = time.perf_counter()
                got = log.unread(vault, "lyra")
                reads.append(time.perf_counter() - t0)
                assert [g.entry.id for g in got] == [new.entry.id], (n, len(got))
                t0 = time.perf_counter()
                last = log.tail(vault, 10)
                tails.append(time.perf_counter() - t0)
                assert last[-1].entry.id == new.entry.id
            env = dict(os.environ, NEXUS_VAULT=str(vault.root), NEXUS_HOME=str(keys))
            cli = []
            for _ in range(args.cli_runs):
                log.append(vault, ella, channel="bench", type="note", summary="for the cli")
                t0 = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-m", "nexus", "log", "read", "--agent", "lyra"],
                    env=env,
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
                cli.append(time.perf_counter() - t0)
            rows.append(
                {
                    "entries": n,
                    "segments": len(log.segment_files(vault)),
                    "mb": round(mb, 1),
                    "generate_s": round(gen_s, 1),
                    "peek_p50_ms": round(pct(peeks, 0.5) * 1000, 3),
                    "peek_p99_ms": round(pct(peeks, 0.99) * 1000, 3),
                    "read_p50_ms": round(pct(reads, 0.5) * 1000, 3),
                    "read_p99_ms": round(pct(reads, 0.99) * 1000, 3),
                    "tail_p50_ms": round(pct(tails, 0.5) * 1000, 3),
                    "cli_read_p50_ms": round(pct(cli, 0.5) * 1000, 1),
                }
            )
            print(f"generated {n} entries in {gen_s:.1f} s", file=sys.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print("peek: unread without moving the cursor; read: unread that saves the cursor durably (fsync)")
    print(
        f"{'entries':>9} {'segs':>5} {'MB':>7} {'peek p50':>9} {'peek p99':>9} {'read p50':>9} "
        f"{'read p99':>9} {'tail p50':>9} {'cli read p50':>13}   (ms)"
    )
    for r in rows:
        print(
            f"{r['entries']:>9} {r['segments']:>5} {r['mb']:>7} {r['peek_p50_ms']:>9.3f} "
            f"{r['peek_p99_ms']:>9.3f} {r['read_p50_ms']:>9.3f} {r['read_p99_ms']:>9.3f} "
            f"{r['tail_p50_ms']:>9.3f} {r['cli_read_p50_ms']:>13.1f}"
        )
    if len(rows) > 1:
        for key in ("peek_p50_ms", "read_p50_ms", "tail_p50_ms", "cli_read_p50_ms"):
            print(f"{key[:-3]} ratio, largest / smallest log: {rows[-1][key] / rows[0][key]:.2f}")
    (RESULTS / "bench_read.json").write_text(
        json.dumps({"rows": rows, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=2),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
