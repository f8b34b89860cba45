"""Write-to-noticed latency with `nexus watch` running, next to a bare watchdog observer.

    .venv/bin/python benchmarks/bench_watch.py [--n 200] [--entries 100000]

A vault is prepared with ``--entries`` older entries (rendered straight into the segments, as in
bench_brief.py: a log of a realistic size, with decisions, acks and a few races), then
``nexus watch --json`` runs as a real process (its start verifies and shadows the whole log once).
In this process a bare watchdog observer watches the same log folder (the baseline: the least any
watcher can take to notice a write).
``--n`` times, an agent appends one entry (``log.append``: durable, fsynced) and we time, from the
moment ``append`` returned:

* **bare**: the bare observer's callback for the segment (timed from the start of the append call);
* **noticed**: the watcher's ``entry`` event for that id on its stdout (verified, shadowed durably,
  derived state refreshed, line printed);
* every 10th append is a decision: the ``owed`` event; every 25th pair of appends races: ``race``.

Then, with the search index built before the watcher started (``--searchable`` rounds, 0 to skip):
**searchable**, from ``append`` returning until the index's manifest records the segment indexed past
the new entry (the watcher's own ``search.refresh``; the manifest is read directly, so no query-time
refresh is triggered). Issue 5's target: within 1 s.

Then an editor's stale in-place save is timed to the ``restored`` event (the watcher waits for the file
to be quiet for 0.5 s first, on purpose). JSON goes to benchmarks/results/bench_watch.json.
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
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_brief import AGENTS, generate  # noqa: E402

from nexus import identity, log  # noqa: E402
from nexus.vault import init  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:  # noqa: C901
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--saves", type=int, default=5)
    parser.add_argument("--searchable", type=int, default=20)
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-watch-", dir=RESULTS))
    proc = None
    try:
        keys = tmp / "keys"
        vault, _ = init(tmp / "vault")
        for name in AGENTS:
            identity.add(vault, keys, name)
        identity.add(vault, keys, "sam", human=True)
        generate(vault, keys, args.entries)  # an old log, rendered straight into its segments
        signers = {n: identity.load_signer(vault, keys, n) for n in ("ella", "lyra")}
        env = dict(os.environ, NEXUS_VAULT=str(vault.root), NEXUS_HOME=str(keys))
        if args.searchable:
            from nexus import search

            search.rebuild(vault)  # the watcher refreshes an index that exists
        events: dict[tuple[str, str], float] = {}
        restored_at: list[float] = []
        emitted: dict[tuple[str, str], float] = {}  # the watcher's own clock (time.time) per event
        lock = threading.Lock()
        ready = threading.Event()
        err_path = tmp / "watch.err"
        err_file = open(err_path, "w")  # noqa: SIM115 - open for the watcher's lifetime
        proc = subprocess.Popen(
            [sys.executable, "-m", "nexus", "watch", "--json", "--rescan", "5"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
        )

        def reader() -> None:
            assert proc is not None and proc.stdout is not None
            for line in proc.stdout:
                now = time.perf_counter()
                e: dict[str, Any] = json.loads(line)
                key = e.get("id") or e.get("b") or e.get("file") or ""
                with lock:
                    events.setdefault((e["event"], str(key)), now)
                    emitted.setdefault((e["event"], str(key)), e["at"])
                    if e["event"] == "restored":
                        restored_at.append(now)
                if e["event"] == "ready":
                    ready.set()

        threading.Thread(target=reader, daemon=True).start()
        if not ready.wait(300):
            raise SystemExit("the watcher never became ready")

        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        bare: list[float] = []
        bare_flag = threading.Event()

        class Bare(FileSystemEventHandler):
            def on_modified(self, event: FileSystemEvent) -> None:
                if not bare_flag.is_set():
                    bare.append(time.perf_counter())
                    bare_flag.set()

        observer = Observer()
        observer.schedule(Bare(), str(vault.log_dir), recursive=False)
        observer.start()

        def wait_event(kind: str, key: str, timeout: float = 30) -> float:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                with lock:
                    if (kind, key) in events:
                        return events[(kind, key)]
                time.sleep(0.0002)
            raise SystemExit(f"no {kind} event for {key}")

        bare_lat, noticed, owed, races = [], [], [], []
        in_watcher: list[float] = []  # append returned -> the watcher printed the event (its clock)
        append_lat: list[float] = []
        for i in range(args.n):
            bare.clear()
            bare_flag.clear()
            agent = "ella" if i % 2 else "lyra"
            kind = "decision" if i % 10 == 0 else "note"
            if i % 50 != 49:  # most appends by an agent that has read everything: no race
                log.unread(vault, agent)
            start = time.perf_counter()
            res = log.append(vault, signers[agent], channel="bench", type=kind, summary=f"timed {i}")
            done, done_wall = time.perf_counter(), time.time()
            eid = res.located.entry.id
            noticed.append(wait_event("entry", eid) - done)
            with lock:
                in_watcher.append(emitted[("entry", eid)] - done_wall)
            append_lat.append(done - start)
            if bare_flag.wait(10):
                bare_lat.append(bare[0] - start)
            if kind == "decision":
                owed.append(wait_event("owed", eid) - done)
            if i % 50 == 49:
                races.append(wait_event("race", eid) - done)
            time.sleep(0.01)
        observer.stop()
        observer.join()

        searchable = []
        if args.searchable:
            from nexus import search

            manifest_path = search.index_dir(vault) / search.MANIFEST
            for i in range(args.searchable):
                res = log.append(
                    vault, signers["ella"], channel="bench", type="note", summary=f"searchable {i}"
                )
                done = time.perf_counter()
                loc = res.located
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    try:
                        record = json.loads(manifest_path.read_bytes())["files"].get(loc.file, {})
                    except (ValueError, OSError):
                        record = {}
                    if record.get("offset", 0) >= loc.end_offset:
                        break
                    time.sleep(0.002)
                else:
                    raise SystemExit("the watcher never made an entry searchable")
                searchable.append(time.perf_counter() - done)
                time.sleep(0.2)

        segment = max(p for _, p in log.segment_files(vault))
        restore = []
        for s in range(args.saves):
            stale = segment.read_bytes()
            lost = log.append(vault, signers["ella"], channel="bench", type="note", summary=f"lost? {s}")
            wait_event("entry", lost.located.entry.id)  # shadowed: what the editor drops can come back
            with open(segment, "r+b") as f:  # the editor's in-place save of its stale buffer
                f.truncate(0)
                f.write(stale)
            done = time.perf_counter()
            deadline = time.monotonic() + 60
            while len(restored_at) <= s and time.monotonic() < deadline:
                time.sleep(0.001)
            if len(restored_at) <= s:
                raise SystemExit(f"the stale save was never restored: {err_path.read_text()[-2000:]}")
            restore.append(restored_at[s] - done)

        def ms(values: list[float]) -> dict[str, float]:
            if not values:
                return {"n": 0}
            return {
                "p50_ms": round(statistics.median(values) * 1000, 2),
                "p99_ms": round(pct(values, 0.99) * 1000, 2),
                "n": len(values),
            }

        row = {
            "log_entries": args.entries,
            "append_call": ms(append_lat),
            "bare_observer_from_append_start": ms(bare_lat),
            "entry_noticed": ms(noticed),
            "entry_printed_by_watcher": ms(in_watcher),
            "owed_noticed": ms(owed),
            "race_noticed": ms(races),
            "stale_save_restored": ms(restore),
            "searchable_with_watcher": ms(searchable),
        }
        print(json.dumps(row, indent=2))
        (RESULTS / "bench_watch.json").write_text(json.dumps(row, indent=2) + "\n")
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
