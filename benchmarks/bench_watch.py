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

from nexus.keys import identity  # noqa: E402
from nexus.keys.identity import Signer  # noqa: E402
from nexus.ledger import log  # noqa: E402
from nexus.storage.vault import Vault, init  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Watch:
    """`nexus watch --json` as a real process, its events timed as they arrive (perf_counter)."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.events: dict[tuple[str, str], float] = {}
        self.emitted: dict[tuple[str, str], float] = {}  # the watcher's own clock (time.time) per event
        self.restored_at: list[float] = []
        self.lock = threading.Lock()
        self.ready = threading.Event()
        self.err_path = tmp / "watch.err"
        self._err = open(self.err_path, "w")  # noqa: SIM115 - open for the watcher's lifetime
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nexus", "watch", "--json", "--rescan", "5"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(300):
            raise SystemExit("the watcher never became ready")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            now = time.perf_counter()
            e: dict[str, Any] = json.loads(line)
            key = str(e.get("id") or e.get("b") or e.get("file") or "")
            with self.lock:
                self.events.setdefault((e["event"], key), now)
                self.emitted.setdefault((e["event"], key), e["at"])
                if e["event"] == "restored":
                    self.restored_at.append(now)
            if e["event"] == "ready":
                self.ready.set()

    def wait(self, kind: str, key: str, timeout: float = 30) -> float:
        """When the event ``kind`` for ``key`` arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if (kind, key) in self.events:
                    return self.events[(kind, key)]
            time.sleep(0.0002)
        raise SystemExit(f"no {kind} event for {key}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self._err.close()


class BareObserver:
    """A bare watchdog observer on the log folder: the first modification after each ``arm``."""

    def __init__(self, folder: Path) -> None:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        self.seen: list[float] = []
        self.flag = threading.Event()
        outer = self

        class Bare(FileSystemEventHandler):
            def on_modified(self, event: FileSystemEvent) -> None:
                if not outer.flag.is_set():
                    outer.seen.append(time.perf_counter())
                    outer.flag.set()

        self.observer = Observer()
        self.observer.schedule(Bare(), str(folder), recursive=False)
        self.observer.start()

    def arm(self) -> None:
        self.seen.clear()
        self.flag.clear()

    def stop(self) -> None:
        self.observer.stop()
        self.observer.join()


def time_appends(vault: Vault, signers: dict[str, Signer], watch: Watch, n: int) -> dict[str, list[float]]:
    """``n`` appends, each timed to the bare observer and to the watcher's entry/owed/race events."""
    bare = BareObserver(vault.log_dir)
    got: dict[str, list[float]] = {
        k: [] for k in ("bare", "noticed", "owed", "races", "in_watcher", "append")
    }
    for i in range(n):
        bare.arm()
        agent = "ella" if i % 2 else "lyra"
        kind = "decision" if i % 10 == 0 else "note"
        if i % 50 != 49:  # most appends by an agent that has read everything: no race
            log.unread(vault, agent)
        start = time.perf_counter()
        res = log.append(vault, signers[agent], channel="bench", type=kind, summary=f"timed {i}")
        done, done_wall = time.perf_counter(), time.time()
        eid = res.located.entry.id
        got["noticed"].append(watch.wait("entry", eid) - done)
        with watch.lock:
            got["in_watcher"].append(watch.emitted[("entry", eid)] - done_wall)
        got["append"].append(done - start)
        if bare.flag.wait(10):
            got["bare"].append(bare.seen[0] - start)
        if kind == "decision":
            got["owed"].append(watch.wait("owed", eid) - done)
        if i % 50 == 49:
            got["races"].append(watch.wait("race", eid) - done)
        time.sleep(0.01)
    bare.stop()
    return got


def time_searchable(vault: Vault, signer: Signer, rounds: int) -> list[float]:
    """From ``append`` returning until the index's manifest records the segment indexed past the entry."""
    from nexus.search import manifest

    searchable = []
    for i in range(rounds):
        res = log.append(vault, signer, channel="bench", type="note", summary=f"searchable {i}")
        done = time.perf_counter()
        loc = res.located
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            current = manifest.load(vault)  # read directly: a query would refresh the index itself
            record = current.files.get(loc.file) if current else None
            if record is not None and record.mark is not None and (record.mark.last or "") >= loc.entry.id:
                break  # indexing reached this entry (ids only grow)
            time.sleep(0.002)
        else:
            raise SystemExit("the watcher never made an entry searchable")
        searchable.append(time.perf_counter() - done)
        time.sleep(0.2)
    return searchable


def time_restores(vault: Vault, signer: Signer, watch: Watch, saves: int) -> list[float]:
    """An editor's stale in-place save, timed to the watcher's ``restored`` event."""
    segment = max(p for _, p in log.segment_files(vault))
    restore = []
    for s in range(saves):
        stale = segment.read_bytes()
        lost = log.append(vault, signer, channel="bench", type="note", summary=f"lost? {s}")
        watch.wait("entry", lost.located.entry.id)  # shadowed: what the editor drops can come back
        with open(segment, "r+b") as f:  # the editor's in-place save of its stale buffer
            f.truncate(0)
            f.write(stale)
        done = time.perf_counter()
        deadline = time.monotonic() + 60
        while len(watch.restored_at) <= s and time.monotonic() < deadline:
            time.sleep(0.001)
        if len(watch.restored_at) <= s:
            raise SystemExit(f"the stale save was never restored: {watch.err_path.read_text()[-2000:]}")
        restore.append(watch.restored_at[s] - done)
    return restore


def ms(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    return {
        "p50_ms": round(statistics.median(values) * 1000, 2),
        "p99_ms": round(pct(values, 0.99) * 1000, 2),
        "n": len(values),
    }


def prepare(tmp: Path, entries: int, searchable: bool) -> tuple[Vault, Path]:
    """A vault with ``entries`` old entries (and its search index, when it will be timed)."""
    keys = tmp / "keys"
    vault, _ = init(tmp / "vault")
    for name in AGENTS:
        identity.add(vault, keys, name)
    identity.add(vault, keys, "sam", human=True)
    generate(vault, keys, entries)  # an old log, rendered straight into its segments
    if searchable:
        from nexus import search

        search.rebuild(vault)  # the watcher refreshes an index that exists
    return vault, keys


def main() -> int:
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
    watch = None
    try:
        vault, keys = prepare(tmp, args.entries, bool(args.searchable))
        signers = {n: identity.load_signer(vault, keys, n) for n in ("ella", "lyra")}
        watch = Watch(tmp, dict(os.environ, NEXUS_VAULT=str(vault.root), NEXUS_HOME=str(keys)))
        got = time_appends(vault, signers, watch, args.n)
        searchable = time_searchable(vault, signers["ella"], args.searchable) if args.searchable else []
        restore = time_restores(vault, signers["ella"], watch, args.saves)
        row = {
            "log_entries": args.entries,
            "append_call": ms(got["append"]),
            "bare_observer_from_append_start": ms(got["bare"]),
            "entry_noticed": ms(got["noticed"]),
            "entry_printed_by_watcher": ms(got["in_watcher"]),
            "owed_noticed": ms(got["owed"]),
            "race_noticed": ms(got["races"]),
            "stale_save_restored": ms(restore),
            "searchable_with_watcher": ms(searchable),
        }
        print(json.dumps(row, indent=2))
        (RESULTS / "bench_watch.json").write_text(json.dumps(row, indent=2) + "\n")
    finally:
        if watch is not None:
            watch.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
