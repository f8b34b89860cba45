"""`nexus watch` with the real watchdog observer, real files and real processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Env, wait_for_rescans

from nexus.ledger import log, shadow, tailstate
from nexus.storage import segments
from nexus.storage.vault import Vault
from nexus.team import acks
from nexus.watch import watcher

WAIT = 60.0  # generous: a bound so a broken watcher fails the test instead of hanging it


class WatchProcess:
    """A running `nexus watch --json`; its events are collected by a reader thread."""

    def __init__(self, env: Env, *args: str) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-W",
                "error",
                "-m",
                "nexus",
                "watch",
                "--json",
                "--rescan",
                "1",
                "--settle",
                "0.5",
                *args,
            ],
            env=env.environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=str(env.vault.root),
        )
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.wait_for(lambda e: e["event"] == "ready")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._lock:
                self.events.append(json.loads(line))

    def wait_for(self, match: Callable[[dict[str, Any]], bool], count: int = 1) -> list[dict[str, Any]]:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            with self._lock:
                found = [e for e in self.events if match(e)]
            if len(found) >= count:
                return found
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.02)
        raise AssertionError(
            f"watcher never reported it; events: {self.events}; stderr: {self.stop_and_stderr()}"
        )

    def stop_and_stderr(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        if self.proc.stderr is None or self.proc.stderr.closed:
            return ""
        return self.proc.stderr.read()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=WAIT)
        self._reader.join(timeout=WAIT)
        self.close()
        return rc

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._reader.join(timeout=WAIT)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()


@pytest.fixture
def watching(env: Env) -> Iterator[Callable[..., WatchProcess]]:
    started: list[WatchProcess] = []

    def start(*args: str) -> WatchProcess:
        w = WatchProcess(env, *args)
        started.append(w)
        return w

    yield start
    for w in started:
        w.close()


def _append(env: Env, agent: str, summary: str, *extra: str) -> str:
    return env.run(
        "log",
        "append",
        "--agent",
        agent,
        "--channel",
        "build",
        "--type",
        "note",
        "--summary",
        summary,
        *extra,
    ).stdout.strip()


def _ids(vault: Vault) -> list[str]:
    return [loc.entry.id for loc in log.iter_entries(vault)]


def _verify(env: Env) -> dict[str, Any]:
    result = env.run("verify", "--json", check=False)
    data: dict[str, Any] = result.json()
    return data


def _wait_until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError("condition never held")


@pytest.mark.parametrize("save", ["in-place", "atomic-rename"])
def test_stale_editor_save_restores_every_entry_and_signs_the_persons_line(
    env: Env, watching: Callable[..., WatchProcess], save: str
) -> None:
    first = _append(env, "ella", "before the editor opened the file")
    segment = env.vault.root / log.find_entry(env.vault, first).file
    w = watching()
    stale = segment.read_bytes()  # the editor reads the segment into its buffer
    later = [
        _append(env, agent, f"appended while the editor waited {i}")
        for i, agent in enumerate(["ella", "lyra", "ella", "lyra"])
    ]
    w.wait_for(lambda e: e["event"] == "entry" and e["id"] in later, count=len(later))  # shadowed
    # ...then the editor saves its stale buffer plus a line the person typed
    buffer = stale + b"Sam: ship it on Friday, not before.\n"
    if save == "in-place":
        with open(segment, "r+b") as f:
            f.truncate(0)
            f.write(buffer)
    else:
        tmp = segment.with_name(f".{segment.name}.obsidian-save")
        tmp.write_bytes(buffer)
        os.replace(tmp, segment)
    restored = w.wait_for(lambda e: e["event"] == "restored")[0]
    assert restored["entries"] == later
    person = w.wait_for(lambda e: e["event"] == "person")[0]
    w.wait_for(lambda e: e["event"] == "entry" and e["id"] == person["id"])

    ids = _ids(env.vault)
    assert ids == sorted(ids) and ids[:-1] == [first, *later] and ids[-1] == person["id"]
    entry = log.find_entry(env.vault, person["id"]).entry
    assert (entry.agent, entry.via, entry.body) == ("sam", "watcher", "Sam: ship it on Friday, not before.")
    report = _verify(env)
    assert report["ok"], report
    kinds = [p["kind"] for p in report["problems"]]
    assert kinds == ["notice"], report  # clean apart from the reported notice
    assert "restored 4 entries" in report["problems"][0]["message"]
    assert w.stop() == 0


def test_history_edit_is_reported_and_the_original_recovered(
    env: Env, watching: Callable[..., WatchProcess]
) -> None:
    old = _append(env, "ella", "the API listens on port 8080")
    _append(env, "lyra", "noted")
    segment = env.vault.root / log.find_entry(env.vault, old).file
    w = watching()
    original = segment.read_bytes()
    segment.write_bytes(original.replace(b"port 8080", b"port 9090"))  # someone rewrites history
    edit = w.wait_for(lambda e: e["event"] == "history-edit")[0]
    assert edit["id"] == old

    report = _verify(env)
    named = [(p["kind"], p["entry_id"]) for p in report["problems"] if p["kind"] != "notice"]
    assert named == [("edited", old)]
    notices = [p for p in report["problems"] if p["kind"] == "notice"]
    assert len(notices) == 1 and old in notices[0]["message"]
    assert "port 9090" in segment.read_text()

    shown = env.run("log", "recover", old).stdout
    assert "port 8080" in shown and "port 9090" not in shown
    env.run("log", "recover", old, "--restore")
    assert "port 9090" not in segment.read_text()
    report = _verify(env)
    assert report["ok"] and {p["kind"] for p in report["problems"]} == {"notice"}
    assert log.find_entry(env.vault, old).entry.summary == "the API listens on port 8080"
    wait_for_rescans(env.vault)  # a rescan later: the put-back text matches the shadow, so no new notice
    assert len(w.wait_for(lambda e: e["event"] == "history-edit")) == 1
    assert w.stop() == 0


def test_killed_watcher_catches_up_completely_after_restart(
    env: Env, watching: Callable[..., WatchProcess]
) -> None:
    a = _append(env, "ella", "one")
    b = _append(env, "lyra", "two")
    segment = env.vault.root / log.find_entry(env.vault, a).file
    w = watching()
    w.proc.kill()  # SIGKILL: no chance to clean up, the lock dies with it
    w.close()
    # while it is down: agents append, an editor drops entry b, a person writes below the last entry
    c = env.run(
        "log",
        "append",
        "--agent",
        "ella",
        "--channel",
        "db",
        "--type",
        "decision",
        "--summary",
        "three: sqlite",
    ).stdout.strip()
    d = _append(env, "lyra", "four")
    data = segment.read_bytes()
    b_at, c_at = segments.entry_starts(data, b)[0], segments.entry_starts(data, c)[0]
    cut = data[:b_at] + data[c_at:]
    segment.write_bytes(cut + b"A note from Sam while nobody watched.\n")
    old = time.time() - 10  # not a fresh save: the restarted watcher may act at once
    os.utime(segment, (old, old))
    assert b not in _ids(env.vault)

    w2 = watching()
    assert w2.wait_for(lambda e: e["event"] == "ready")[0]["new"] == 2  # c and d, seen for the first time
    assert w2.wait_for(lambda e: e["event"] == "restored")[0]["entries"] == [b]
    person = w2.wait_for(lambda e: e["event"] == "person")[0]
    w2.wait_for(lambda e: e["event"] == "entry" and e["id"] == person["id"])
    assert _ids(env.vault) == [a, b, c, d, person["id"]]
    assert log.find_entry(env.vault, person["id"]).entry.body == "A note from Sam while nobody watched."
    assert [e.entry.id for e in acks.owed(env.vault, "lyra")] == [c]  # derived state caught up too
    report = _verify(env)
    assert report["ok"] and [p["kind"] for p in report["problems"]] == ["notice"], report
    assert w2.stop() == 0


def test_restart_shadows_what_was_appended_while_down_and_restores_it_later(
    env: Env, watching: Callable[..., WatchProcess]
) -> None:
    a = _append(env, "ella", "one")
    w = watching()
    w.proc.kill()
    w.close()
    down = [_append(env, "lyra", f"while down {i}") for i in range(3)]
    w2 = watching()
    assert w2.wait_for(lambda e: e["event"] == "ready")[0]["new"] == 3  # caught up on start
    assert set(down) <= set(shadow.Shadow.load(env.vault).copies)
    segment = env.vault.root / log.find_entry(env.vault, a).file
    data = segment.read_bytes()
    segment.write_bytes(data[: segments.entry_starts(data, down[0])[0]])  # truncated
    assert w2.wait_for(lambda e: e["event"] == "restored")[0]["entries"] == down, (a, down, w2.events)
    assert _ids(env.vault) == [a, *down]
    assert w2.stop() == 0


def test_entries_signed_before_a_key_rotation_are_protected_too(
    env: Env, watching: Callable[..., WatchProcess]
) -> None:
    """After `nexus agent rotate`, entries signed with the old key (still pinned) are shadowed and
    restored like the others: the keeper checks them with this machine's keyring, not the key the
    identity note declares now."""
    old = [_append(env, "ella", f"before the rotation {i}") for i in range(2)]
    env.run("agent", "rotate", "ella")
    after = _append(env, "ella", "after the rotation")
    w = watching()
    w.wait_for(lambda e: e["event"] == "ready")
    everything = _ids(env.vault)
    assert set(everything) <= set(shadow.Shadow.load(env.vault).copies)
    segment = env.vault.root / log.find_entry(env.vault, old[0]).file
    data = segment.read_bytes()
    segment.write_bytes(data[: segments.entry_starts(data, old[0])[0]])  # an editor's save
    assert w.wait_for(lambda e: e["event"] == "restored")[0]["entries"] == everything
    assert _ids(env.vault) == everything and after in everything
    assert _verify(env)["ok"]
    assert w.stop() == 0


def test_deleted_segment_is_recreated(env: Env, watching: Callable[..., WatchProcess]) -> None:
    ids = [_append(env, "ella", f"n{i}") for i in range(3)]
    segment = env.vault.root / log.find_entry(env.vault, ids[0]).file
    w = watching()
    segment.unlink()
    assert w.wait_for(lambda e: e["event"] == "recreated")[0]["entries"] == ids
    assert _ids(env.vault) == ids
    report = _verify(env)
    assert report["ok"] and [p["kind"] for p in report["problems"]] == ["notice"]
    assert w.stop() == 0


def test_once_catches_up_without_events(env: Env) -> None:
    """The rescan alone (no events at all) is enough: `--once` does one pass."""
    a = _append(env, "ella", "one")
    env.run("watch", "--once")
    b = _append(env, "lyra", "two")
    env.run("watch", "--once")  # shadows b
    segment = env.vault.root / log.find_entry(env.vault, a).file
    data = segment.read_bytes()
    segment.write_bytes(data[: segments.entry_starts(data, b)[0]])
    old = time.time() - 10
    os.utime(segment, (old, old))
    out = env.run("watch", "--once", "--json").stdout
    assert any(json.loads(line)["event"] == "restored" for line in out.splitlines())
    assert _ids(env.vault) == [a, b]


def test_second_watcher_refused_and_signals_stop_cleanly(
    env: Env, watching: Callable[..., WatchProcess]
) -> None:
    w = watching()
    second = env.run("watch", "--once", check=False)
    assert second.returncode == 1
    assert "another `nexus watch` is already running" in second.stderr
    assert str(w.proc.pid) in second.stderr
    assert w.stop(signal.SIGTERM) == 0
    assert w.events[-1]["event"] == "stopped"
    w2 = watching()  # the lock is free again
    assert w2.stop(signal.SIGINT) == 0
    assert w2.events[-1]["event"] == "stopped"


def test_person_text_waits_until_it_settles(env: Env, watching: Callable[..., WatchProcess]) -> None:
    a = _append(env, "ella", "one")
    segment = env.vault.root / log.find_entry(env.vault, a).file
    w = watching("--settle", "2")
    with open(segment, "ab") as f:
        f.write(b"Half a thou")
    time.sleep(0.5)
    with open(segment, "ab") as f:
        f.write(b"ght, finished.\n")
    person = w.wait_for(lambda e: e["event"] == "person")
    assert len(person) == 1
    assert log.find_entry(env.vault, person[0]["id"]).entry.body == "Half a thought, finished."
    data = segment.read_bytes()
    start = segments.entry_starts(data, person[0]["id"])[0]
    assert b"Half a thou" not in data[:start]  # moved into the entry
    signed = log.find_entry(env.vault, person[0]["id"])
    end_line = data[: signed.end_offset].rstrip(b"\n").rsplit(b"\n", 1)[-1]
    assert end_line.startswith(b"%%w1 ") and len(end_line) <= 120  # (format 2: the watcher's flag)
    assert w.stop() == 0


def test_note_handlers_registry(env: Env) -> None:
    """The extension point other areas use: handlers run for matching notes, errors never escape."""
    seen: list[str] = []

    def broken(vault: Vault, keys_home: Path, rel: str) -> None:
        raise ValueError("a bug in a handler")

    handlers = (
        watcher.NoteHandler("seen", lambda rel: rel.startswith("state/"), lambda v, k, rel: seen.append(rel)),
        watcher.NoteHandler("broken", lambda rel: rel == "state/project.md", broken),
    )
    events: list[dict[str, Any]] = []
    (env.vault.root / "state" / "project.md").write_text("# Project\n")
    w = watcher.Watcher(
        env.vault,
        env.keys_home,
        ack_types=("decision",),
        race_window=60,
        settle_seconds=1,
        emit=events.append,
        handlers=handlers,
    )
    w.scan_notes()
    assert seen == ["state/project.md"]
    assert any(e["event"] == "error" and "a bug in a handler" in e["message"] for e in events)
    w.on_paths({str(env.vault.root / "state" / "project.md"), str(env.vault.state / "x.md")})
    assert seen == ["state/project.md", "state/project.md"]


def test_the_watcher_runs_its_own_handlers() -> None:
    """The watcher's handlers are its explicit list: the review note and the project state."""
    names = {h.name: h for h in watcher.note_handlers()}
    assert set(names) == {"review", "project-state"}
    assert names["review"].matches("memory/REVIEW.md") and not names["review"].matches("notes/a.md")
    assert names["project-state"].matches("state/project.md")


def test_text_left_in_front_of_its_signed_entry_is_removed_not_signed_twice(env: Env) -> None:
    """The watcher died between signing a person's text and removing it: the next pass only removes it."""
    a = _append(env, "ella", "one")
    segment = env.vault.root / log.find_entry(env.vault, a).file
    with open(segment, "ab") as f:
        f.write(b"\nSam: remember the backups.\n")
    signed = log.append(
        env.vault,
        env.signer("sam"),
        channel="obsidian",
        type="note",
        summary="Sam: remember the backups.",
        body="Sam: remember the backups.",
        via="watcher",
        agent="sam",
    ).located.entry.id
    assert [p["kind"] for p in _verify(env)["problems"]] == ["stray-text"]
    env.run("watch", "--once")
    assert _ids(env.vault) == [a, signed]
    assert _verify(env)["problems"] == []


def test_a_persons_text_too_large_is_reported_and_left_alone(env: Env) -> None:
    a = _append(env, "ella", "one")
    segment = env.vault.root / log.find_entry(env.vault, a).file
    big = ("word " * 14_000 + "\n").encode()  # over the 64 KiB body limit
    with open(segment, "ab") as f:
        f.write(big)
    old = time.time() - 10
    os.utime(segment, (old, old))
    out = env.run("watch", "--once", "--json").stdout
    errors = [json.loads(line) for line in out.splitlines() if json.loads(line)["event"] == "error"]
    assert len(errors) == 1 and "body is" in errors[0]["message"]
    assert segment.read_bytes().endswith(big)  # nothing changed
    assert _ids(env.vault) == [a]


def test_restore_happens_while_agents_keep_appending(env: Env, watching: Callable[..., WatchProcess]) -> None:
    """Appends every few milliseconds keep the file's mtime fresh; the restore must not starve."""
    first = _append(env, "ella", "first")
    segment = env.vault.root / log.find_entry(env.vault, first).file
    w = watching()
    stale = segment.read_bytes()
    dropped = [env.append("lyra", f"dropped {i}").located.entry.id for i in range(3)]
    w.wait_for(lambda e: e["event"] == "entry" and e["id"] in dropped, count=3)
    with open(segment, "r+b") as f:  # the editor's stale in-place save
        f.truncate(0)
        f.write(stale)
    during: list[dict[str, Any]] = []
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and not any(e["event"] == "restored" for e in list(w.events)):
        during.append(env.append("ella", f"busy {len(during)}").located.entry.id)
        time.sleep(0.05)
    restored = w.wait_for(lambda e: e["event"] == "restored")[0]
    assert set(dropped) <= set(restored["entries"])
    ids = _ids(env.vault)
    assert set(dropped) | set(during) | {first} <= set(ids) and ids == sorted(ids)
    report = _verify(env)
    assert report["ok"], report
    assert w.stop() == 0


def test_watcher_keeps_the_derived_state_brief_reads(env: Env, watching: Callable[..., WatchProcess]) -> None:
    """With the watcher running, the view `nexus brief` reads is already current after an append."""
    import json as _json

    from nexus.settings import DEFAULT_ACK_TYPES
    from nexus.team import coordination, coordination_state

    w = watching()
    d = env.run(
        "log", "append", "--agent", "ella", "--channel", "db", "--type", "decision", "--summary", "sqlite"
    ).stdout.strip()
    w.wait_for(lambda e: e["event"] == "owed" and e["id"] == d)
    view_file = coordination_state.view_path(env.vault, "lyra", DEFAULT_ACK_TYPES, 60.0)
    _wait_until(lambda: view_file.exists() and d in view_file.read_text())
    view = coordination_state.View.from_json(_json.loads(view_file.read_text()))
    assert view is not None
    assert coordination.marks_current(env.vault, view.marks)  # brief will not need to refresh
    assert [ref.id for ref in view.owed] == [d]
    assert w.stop() == 0


def test_a_restore_moves_the_derived_state_instead_of_rebuilding_it(
    env: Env, watching: Callable[..., WatchProcess]
) -> None:
    from nexus.settings import DEFAULT_ACK_TYPES
    from nexus.team import coordination, coordination_state

    d = env.append("ella", "a decision", type="decision").located.entry.id
    segment = env.vault.root / log.find_entry(env.vault, d).file
    w = watching()
    stale = segment.read_bytes()
    later = env.append("lyra", "a question", type="question").located.entry.id
    w.wait_for(lambda e: e["event"] == "owed" and e["id"] == later)
    state_file = coordination_state.state_path(env.vault, DEFAULT_ACK_TYPES, 60.0)

    def state() -> coordination_state.State:
        found = coordination.load(env.vault, DEFAULT_ACK_TYPES, 60.0)  # (the head; its months as read)
        assert found is not None
        return found

    _wait_until(lambda: state_file.exists() and later in state().pending)
    segment.write_bytes(stale + b"\n")  # a stale save (one extra byte, so offsets move)
    w.wait_for(lambda e: e["event"] == "restored")

    try:
        _wait_until(lambda: coordination.marks_current(env.vault, state().marks))
    except AssertionError:
        raise AssertionError((state_file.read_text()[:600], segment.stat().st_size, w.events)) from None
    assert state().pending[later].ref.offset == log.find_entry(env.vault, later).offset  # the new place
    assert [e.entry.id for e in acks.owed(env.vault, "ella")] == [later]
    assert [e.entry.id for e in acks.owed(env.vault, "lyra")] == [d]
    assert w.stop() == 0


def test_an_append_becomes_searchable_while_the_watcher_runs(
    env: Env, watching: Callable[..., WatchProcess]
) -> None:
    """With `nexus watch` running, the index takes in an append (and a note) by itself: polled here
    through `search.status`, which reads the index and never refreshes it."""
    from nexus import search

    env.append("ella", "warm up")
    search.rebuild(env.vault)  # someone searched before: the index exists
    w = watching()
    eid = env.append("lyra", "the zebracorn migration is done").located.entry.id
    (env.vault.root / "zebracorn.md").write_text("# Zebracorn\n\nA note about the migration.\n")

    def indexed() -> bool:
        st = search.status(env.vault)
        return st.entries == 2 and not st.stale_files

    deadline = time.monotonic() + WAIT  # a bound, not a speed claim (benchmarks/bench_watch.py times it)
    while not indexed() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert indexed(), (search.status(env.vault), w.events)
    assert any(e["event"] == "indexed" for e in w.events)
    hits = search.search(env.vault, "zebracorn")
    assert eid in {h.entry_id for h in hits} and len(hits) == 2
    assert w.stop() == 0


def test_the_watcher_goes_on_when_the_index_cannot_be_refreshed(
    env: Env, watching: Callable[..., WatchProcess]
) -> None:
    from nexus import search

    env.append("ella", "warm up")
    search.rebuild(env.vault)
    lock = env.vault.lock("index")
    lock.unlink(missing_ok=True)
    lock.mkdir()  # every refresh now fails to take the index lock
    w = watching()
    first = env.append("lyra", "noticed").located.entry.id
    error = w.wait_for(lambda e: e["event"] == "error" and "search index" in e["message"])[0]
    assert error["file"] == ".nexus/index"
    later = env.append("lyra", "still noticed").located.entry.id
    w.wait_for(lambda e: e["event"] == "entry" and e["id"] in (first, later), count=2)
    assert w.proc.poll() is None
    lock.rmdir()
    assert w.stop() == 0


def _run_in_thread(
    env: Env,
    events: list[dict[str, Any]],
    handlers: tuple[watcher.NoteHandler, ...],
    rescan_seconds: float = 60.0,
) -> tuple[threading.Thread, Callable[[], None]]:
    """The real watcher loop (real watchdog observer) in a thread of this process, with ``handlers``
    as its note handlers."""
    stop, wake = threading.Event(), threading.Event()
    options = watcher.Options(
        rescan_seconds=rescan_seconds,
        ack_types=("decision",),
        handlers=handlers,
        verify_env=dict(os.environ, NEXUS_HOME=str(env.keys_home)),
    )
    t = threading.Thread(
        target=watcher.watch,
        daemon=True,
        args=(env.vault, env.keys_home, options, events.append, stop, wake),
    )
    t.start()
    _wait_until(lambda: any(e["event"] == "ready" for e in list(events)))

    def halt() -> None:
        stop.set()
        wake.set()
        t.join(timeout=WAIT)

    return t, halt


def test_a_handler_that_reads_its_note_does_not_wake_itself(env: Env) -> None:
    """Opening and closing a file are not changes: a handler reading its note must not loop."""
    calls: list[str] = []

    def reader(vault: Vault, keys_home: Path, rel: str) -> None:
        calls.append((vault.root / rel).read_text())

    note = env.vault.root / "notes" / "loop.md"
    note.parent.mkdir(exist_ok=True)
    note.write_text("one\n")
    events: list[dict[str, Any]] = []
    _t, halt = _run_in_thread(
        env,
        events,
        (watcher.NoteHandler("loop", lambda rel: rel == "notes/loop.md", reader),),
        rescan_seconds=0.5,
    )
    try:
        wait_for_rescans(env.vault, 1)  # whatever the start read has been handled
        before = len(calls)
        note.write_text("two\n")
        _wait_until(lambda: "two\n" in calls)
        wait_for_rescans(env.vault, 4)  # two seconds and more, four whole passes over the note
        after = len(calls) - before
    finally:
        halt()
    assert 1 <= after <= 3, after


def test_the_rescan_notices_a_same_size_edit_that_kept_its_mtime(env: Env) -> None:
    """Two writes within one mtime tick look the same by (mtime, size): recent files are hashed."""
    seen: list[str] = []
    same = watcher.NoteHandler(
        "same",
        lambda rel: rel == "notes/same.md",
        lambda vault, k, rel: seen.append((vault.root / rel).read_text()),
    )
    note = env.vault.root / "notes" / "same.md"
    note.parent.mkdir(exist_ok=True)
    note.write_text("status: green\n")
    eid = env.append("ella", "the API listens on port 8080").located.entry.id
    segment = env.vault.root / log.find_entry(env.vault, eid).file
    events: list[dict[str, Any]] = []
    w = watcher.Watcher(
        env.vault,
        env.keys_home,
        ack_types=("decision",),
        race_window=60,
        settle_seconds=1,
        emit=events.append,
        handlers=(same,),
    )
    w.full_pass()
    assert seen == ["status: green\n"]
    for path, old, new in ((note, b"green", b"amber"), (segment, b"8080", b"9090")):
        st = path.stat()
        path.write_bytes(path.read_bytes().replace(old, new))  # same size, in place
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # as if in the same mtime tick
        assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    w.full_pass()
    assert seen == ["status: green\n", "status: amber\n"]
    assert [e["id"] for e in events if e["event"] == "history-edit"] == [eid]
    w.full_pass()  # noticed once, not on every rescan
    assert len(seen) == 2 and len([e for e in events if e["event"] == "history-edit"]) == 1


class _Rebuilds:
    """Counts full rebuilds of the log's tail state (a spy around the real function)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = tailstate.rebuild

        def spy(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(tailstate, "rebuild", spy)


def test_after_a_restore_the_next_append_does_not_rebuild_the_tail_state(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent appended between an editor's stale save and the restore: its entry moves when the
    dropped one is put back before it; the watcher moves tail.json with it."""
    rebuilds = _Rebuilds(monkeypatch)
    a = env.append("ella", "one").located.entry.id
    env.run("watch", "--once")
    b = env.append("lyra", "two").located.entry.id
    env.run("watch", "--once")  # b is shadowed
    segment = env.vault.root / log.find_entry(env.vault, a).file
    data = segment.read_bytes()
    segment.write_bytes(data[: segments.entry_starts(data, b)[0]])  # the stale save drops b
    c = env.append("ella", "three, after the save").located.entry.id
    old = time.time() - 10
    os.utime(segment, (old, old))
    out = env.run("watch", "--once", "--json").stdout
    assert any(json.loads(line)["event"] == "restored" for line in out.splitlines())
    assert _ids(env.vault) == [a, b, c]
    rebuilds.count = 0
    d = env.append("lyra", "four").located.entry.id
    assert rebuilds.count == 0
    assert _ids(env.vault) == [a, b, c, d]
    assert log.find_entry(env.vault, d).entry.seq == 2  # lyra's chain: b, d
    report = _verify(env)
    assert report["ok"] and [p["kind"] for p in report["problems"]] == ["notice"], report


def _before_entry(data: bytes, entry_id: str) -> bytes:
    """The segment's bytes before the line that opens entry ``entry_id`` (all of them if none does)."""
    starts = segments.entry_starts(data, entry_id)
    return data[: starts[0]] if starts else data


def test_after_a_persons_text_is_signed_the_next_append_does_not_rebuild_the_tail_state(
    env: Env, watching: Callable[..., WatchProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    rebuilds = _Rebuilds(monkeypatch)
    a = env.append("ella", "one").located.entry.id
    segment = env.vault.root / log.find_entry(env.vault, a).file
    w = watching()
    with open(segment, "ab") as f:
        f.write(b"\nSam: a thought of mine.\n")
    person = w.wait_for(lambda e: e["event"] == "person")[0]
    _wait_until(lambda: b"Sam: a thought" not in _before_entry(segment.read_bytes(), person["id"]))
    rebuilds.count = 0
    b = env.append("lyra", "two").located.entry.id
    assert rebuilds.count == 0
    assert _ids(env.vault) == [a, person["id"], b]
    report = _verify(env)
    assert report["ok"] and report["problems"] == [], report
    assert w.stop() == 0


@pytest.mark.parametrize("drop", [(1,), (0,), (2, 4, 5), (0, 1, 2, 3, 4, 5)])
@pytest.mark.parametrize(
    "trailing", [b"", b"Sam: a line of my own.\n", b"\nSam: after a blank line\n\nmore\n"]
)
def test_a_restores_new_offsets_are_computed_exactly_without_parsing_again(
    env: Env, drop: tuple[int, ...], trailing: bytes
) -> None:
    """The restore shifts its scan by what it inserted instead of scanning the segment again: the
    result must equal a full scan of the new bytes, whatever was dropped and whatever follows."""
    from nexus.records import ShadowCopy
    from nexus.storage import segments

    ids = [
        env.append(
            "ella" if i % 2 else "lyra", f"entry {i}", body="two\nlines" if i % 3 else None
        ).located.entry.id
        for i in range(6)
    ]
    segment = env.vault.root / log.find_entry(env.vault, ids[0]).file
    rel = f"log/{segment.name}"
    full = segment.read_bytes()
    scan = segments.scan(full, rel)
    copies = [
        ShadowCopy(loc.entry.id, loc.entry.agent, rel, "", full[loc.offset : loc.end_offset].decode())
        for loc in scan.entries
    ]
    data = full
    for i in sorted(drop, reverse=True):  # an editor's save without these entries
        loc = scan.entries[i]
        cut_to = loc.end_offset + (1 if data[loc.end_offset : loc.end_offset + 1] == b"\n" else 0)
        data = data[: loc.offset] + data[cut_to:]
    data += trailing
    old = segments.scan(data, rel)
    missing = [copies[i] for i in drop]
    inserts = shadow.insertions(data, old, missing, shadow.render_notice("01KBNOTICE", "t", ["x"]))
    new = shadow.splice(data, inserts)
    assert new == shadow.insert_entries(data, old, missing, shadow.render_notice("01KBNOTICE", "t", ["x"]))
    assert [loc.entry.id for loc in segments.scan(new, rel).entries] == ids
    assert shadow.shifted_scan(data, old, inserts, rel) == segments.scan(new, rel)


def test_folders_made_again_and_again_never_stop_the_observer(
    env: Env, watching: Callable[..., WatchProcess]
) -> None:
    """A folder removed and made again while watched (what git does to `state/history` on a merge)
    makes watchdog warn that it replaces a watch; under `-W error` that warning once killed the
    observer's thread, so later changes went unseen and stopping hung. The watcher still sees an
    editor's save afterwards and stops at once, with no traceback or warning on stderr."""
    w = watching()
    folder = env.vault.root / "state" / "churn"
    for _ in range(60):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "x.md").write_text("x\n")
        shutil.rmtree(folder)
    a = _append(env, "ella", "after the churn")
    wait_for_rescans(env.vault)  # a whole rescan since the append: the watcher has shadowed the entry
    segment = env.vault.root / log.find_entry(env.vault, a).file
    segment.write_bytes(segment.read_bytes()[: segments.entry_starts(segment.read_bytes(), a)[0]])
    assert w.wait_for(lambda e: e["event"] == "restored")[0]["entries"] == [a]
    w.proc.send_signal(signal.SIGTERM)
    _out, err = w.proc.communicate(timeout=30)
    assert w.proc.returncode == 0 and "Traceback" not in err and "Warning" not in err, err
    assert not [e for e in w.events if e["event"] == "error"], w.events
