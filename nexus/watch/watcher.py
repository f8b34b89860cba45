"""``nexus watch``: a watchdog observer over the vault that keeps the log whole and the derived state fresh.

This module is the plumbing: the observer's events, the periodic full rescan (the source of truth:
inotify drops events when its queue overflows, an atomic save arrives as a move, a file can vanish),
the passes over segments and notes, signals, the heartbeat and the printed events (``--json``: one
JSON object a line). What is done to log segments (new entries shadowed, dropped entries put back,
history edits, a person's text signed, torn tails) is ``keeper.py``; the search index and the verify
state are kept current by ``workers.py``; after any segment change the derived coordination state
(owed acks, races) is refreshed here and new races are printed.

Only created/modified/moved/deleted events count (opened/closed ones would let a handler that reads its
note wake itself forever), and a file written in the last ``RECENT_SECONDS`` is compared by content,
not by its stamp alone (two writes within one mtime tick can leave the stamp as it was).

Only one watcher runs per vault: it holds ``.nexus/locks/watch.lock`` (non-blocking; a second one
fails with BusyError). SIGINT and SIGTERM stop it cleanly.

Other notes: the watcher runs an explicit list of handlers (:func:`note_handlers`: the review note,
the project state). Each :class:`NoteHandler` gets the vault-relative POSIX path of a Markdown note
outside ``log/`` and ``.nexus/``; when it ``matches``, ``run(vault, keys_home, relpath)`` runs in the
watcher's thread after the note changes (and once for every matching note on each start, so handlers
must be idempotent). An exception in a handler is an ``error`` event and never stops the watcher.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BusyError
from ..settings import DEFAULTS
from ..storage.vault import Vault
from ..sync import copies
from ..team import claimlog, coordination, heartbeat
from .keeper import RECENT_SECONDS, SegmentKeeper, git_busy, now
from .workers import IndexRefresher, LogVerifier

if TYPE_CHECKING:
    from ..workspace import Workspace

# Only these change a file: watchdog's inotify observer also reports opened/closed events, and a note
# handler that reads its note would otherwise trigger itself again, forever.
CHANGE_EVENTS = frozenset({"created", "modified", "moved", "deleted"})


@dataclass(frozen=True)
class NoteHandler:
    """What the watcher does when a note changes: ``run(vault, keys_home, relpath)`` for each note
    whose vault-relative path ``matches`` (outside ``log/`` and ``.nexus/``), after it changes and
    once at every start, so it must be idempotent. An exception in it is an ``error`` event."""

    name: str
    matches: Callable[[str], bool]
    run: Callable[[Vault, Path, str], None]


def note_handlers() -> tuple[NoteHandler, ...]:
    """The watcher's handlers, all of them: ticking a fact in the review note approves it
    (``review.py``); a person's save of the project state becomes a version (``project_state.py``)."""
    from ..memory import bank, review
    from ..project import project_state

    return (
        NoteHandler("review", bank.is_review_note, review.on_change),
        NoteHandler("project-state", project_state.is_state_note, project_state.on_note_change),
    )


class Watcher(SegmentKeeper):
    """The segment keeper (``keeper.py``) plus the passes that drive it, the derived coordination
    state it refreshes, and the note handlers it runs."""

    def __init__(
        self,
        vault: Vault,
        keys_home: Path,
        *,
        ack_types: tuple[str, ...],
        race_window: float,
        settle_seconds: float,
        emit: Callable[[dict[str, Any]], None],
        handlers: tuple[NoteHandler, ...] | None = None,
    ) -> None:
        super().__init__(
            vault,
            keys_home,
            ack_types=ack_types,
            race_window=race_window,
            settle_seconds=settle_seconds,
            emit=emit,
        )
        self.handlers = note_handlers() if handlers is None else handlers
        # note -> (mtime_ns, size, sha256 of its bytes, whether its mtime was old when it was read)
        self.note_stamps: dict[str, tuple[int, int, str | None, bool]] = {}
        self.races_known: dict[tuple[str, str], str | None] = {}

    # ------------------------------------------------------------ passes
    def full_pass(self) -> None:
        """The periodic rescan: every segment whose bytes changed in a way events did not explain."""
        self.import_copies()
        changed = False
        for path in self.segment_paths():
            full = not self.verify_prefix(path)
            changed |= self.check_segment(path, full=full)
        self.refresh()
        self.expire_claims()
        self.scan_notes()

    def expire_claims(self) -> None:
        """``Claims.md`` again once a claim it lists has expired (no read writes it: the watcher's
        rescan does, under the log lock, as a claim's write does); said even on the quiet first pass."""
        if claimlog.expire_note(self.vault):
            self.emit({"event": "claims", "file": claimlog.NOTE})

    def refresh(self) -> None:
        """Refresh the derived state; report races and resolutions not reported before (a rebuild
        finds every race again)."""
        if self.last_full:
            return  # a segment waits to be restored: refresh once it is whole, not from a stale save
        update = coordination.refresh(self.vault, self.ack_types, self.race_window)
        for race in update.state.races:
            a, b, by = race.a, race.b, race.resolved_by
            key = (a.id, b.id)
            if key not in self.races_known:
                self.races_known[key] = None
                if not self.quiet_emit:
                    self.emit({"event": "race", "a": a.id, "b": b.id, "agents": [a.agent, b.agent]})
            if by is not None and self.races_known.get(key) is None:
                self.races_known[key] = by
                if not self.quiet_emit:
                    self.emit({"event": "resolved", "a": a.id, "b": b.id, "by": by})

    def on_paths(self, paths: set[str]) -> bool:
        """Handle changed paths; True when any was a Markdown note or segment (what search indexes)."""
        changed = False
        notes = False
        for raw in sorted(paths):
            path = Path(raw)
            rel = _rel(self.vault, path)
            if rel is None:
                continue
            notes |= rel.endswith(".md")
            if rel.startswith("log/") and rel.count("/") == 1 and copies.is_copy(rel[4:]):
                changed |= self.import_copies()  # a file-sync tool's conflict copy
            elif rel.startswith("log/") and rel.count("/") == 1 and rel.endswith(".md"):
                changed |= self.check_segment(self.vault.root / rel)
            elif rel.endswith(".md") and self.handlers and not git_busy(self.vault):  # (else: the rescan)
                mark = _note_mark(str(path))
                if mark is None:
                    self.note_stamps.pop(rel, None)
                else:
                    self.note_stamps[rel] = mark  # the rescan need not repeat it
                self._dispatch(rel)
        if changed:
            self.refresh()
        return notes

    def due(self) -> None:
        now = time.monotonic()
        for rel, when in list(self.deadlines.items()):
            if when <= now:
                del self.deadlines[rel]
                if copies.is_copy(rel.rsplit("/", 1)[-1]):
                    if self.import_copies():
                        self.refresh()
                elif self.check_segment(self.vault.root / rel, full=True):
                    self.refresh()

    # ------------------------------------------------------------ other notes
    def _dispatch(self, rel: str) -> None:
        for handler in self.handlers:
            try:
                if handler.matches(rel):
                    handler.run(self.vault, self.keys_home, rel)
            except Exception as err:  # a handler's bug must not stop the watcher
                self.emit({"event": "error", "file": rel, "message": f"{type(err).__name__}: {err}"})

    def scan_notes(self) -> None:
        if not self.handlers or git_busy(self.vault):  # git is writing notes: look once it is done
            return
        for folder, dirs, files in os.walk(self.vault.root):
            dirs[:] = [
                d
                for d in dirs
                if not d.startswith(".") and not (folder == str(self.vault.root) and d == "log")
            ]
            for name in files:
                if not name.endswith(".md"):
                    continue
                full = os.path.join(folder, name)
                rel = Path(full).relative_to(self.vault.root).as_posix()
                known = self.note_stamps.get(rel)
                if known is not None and known[3]:  # read when its mtime was old: the stamp suffices
                    try:
                        st = os.stat(full)
                    except FileNotFoundError:
                        continue
                    if known[:2] == (st.st_mtime_ns, st.st_size):
                        continue
                # Two writes a few ms apart can share an mtime: a note changed recently is compared
                # by content too, so a same-size edit is not missed.
                mark = _note_mark(full)
                if mark is None:
                    continue
                self.note_stamps[rel] = mark
                if known is None or known[:3] != mark[:3]:
                    self._dispatch(rel)


def _note_mark(path: str) -> tuple[int, int, str | None, bool] | None:
    """(mtime_ns, size, sha256, settled) of a note, or None when it is gone. ``settled``: its mtime
    was already ``RECENT_SECONDS`` old when it was read, so a later write must move the mtime."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            now = time.time()
            data = f.read()
    except (FileNotFoundError, IsADirectoryError):
        return None
    settled = now - st.st_mtime_ns / 1e9 > RECENT_SECONDS
    return (st.st_mtime_ns, st.st_size, hashlib.sha256(data).hexdigest(), settled)


def _rel(vault: Vault, path: Path) -> str | None:
    try:
        rel = path.relative_to(vault.root).as_posix()
    except ValueError:
        return None
    if rel.startswith(".") or "/." in rel:
        return None
    return rel


# ------------------------------------------------------------------ running


def _printer(as_json: bool) -> Callable[[dict[str, Any]], None]:
    lock = threading.Lock()

    def emit(event: dict[str, Any]) -> None:
        event.setdefault("at", round(time.time(), 6))  # when the watcher noticed it (epoch seconds)
        if as_json:
            line = json.dumps(event, ensure_ascii=False)
        else:
            kind = event.get("event")
            rest = " ".join(f"{k}={v}" for k, v in event.items() if k not in ("event", "at"))
            line = f"{now()} {kind} {rest}"
        with lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    return emit


@dataclass(frozen=True)
class Options:
    """How ``nexus watch`` runs: rescan period, how long a person's text settles, the coordination
    settings, one pass only (``--once``), and the note handlers (default :func:`note_handlers`)."""

    rescan_seconds: float = DEFAULTS.rescan_seconds
    settle_seconds: float = 3.0
    ack_types: tuple[str, ...] = DEFAULTS.ack_types
    race_window: float = DEFAULTS.race_window_seconds
    once: bool = False
    handlers: tuple[NoteHandler, ...] | None = None
    # the environment of the `nexus verify` processes it starts (the entry point's); None: only
    # NEXUS_HOME, the keys folder
    verify_env: Mapping[str, str] | None = None


def run(
    ws: Workspace,
    *,
    settle_seconds: float = 3.0,
    once: bool = False,
    as_json: bool = False,
    child_env: Mapping[str, str] | None = None,
) -> None:
    """Watch ``ws.vault`` until SIGINT/SIGTERM (or one pass with ``once``), with its settings (rescan
    period, ack types, race window). BusyError if another watcher holds the vault. ``child_env``: the
    environment of the ``nexus verify`` processes it starts (the entry point's)."""
    from ..storage.locks import exclusive

    vault, keys_home, st = ws.vault, ws.keys_home, ws.settings
    options = Options(
        float(st.rescan_seconds),
        settle_seconds,
        st.ack_types,
        float(st.race_window_seconds),
        once,
        verify_env={**(child_env or {}), "NEXUS_HOME": os.fspath(keys_home)},
    )
    lock = vault.lock("watch")
    pid_file = vault.state / "watch" / "pid"
    try:
        with exclusive(lock, wait=False):
            pid_file.parent.mkdir(parents=True, exist_ok=True)
            pid_file.write_text(str(os.getpid()))
            _run_locked(vault, keys_home, options, _printer(as_json))
    except BusyError:
        try:
            other = pid_file.read_text().strip()
        except OSError:
            other = "?"
        raise BusyError(f"another `nexus watch` is already running on {vault.root} (pid {other})") from None


def _run_locked(
    vault: Vault, keys_home: Path, options: Options, emit: Callable[[dict[str, Any]], None]
) -> None:
    stop = threading.Event()
    wake = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()
        wake.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        watch(vault, keys_home, options, emit, stop, wake)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def watch(
    vault: Vault,
    keys_home: Path,
    options: Options,
    emit: Callable[[dict[str, Any]], None],
    stop: threading.Event,
    wake: threading.Event,
) -> None:
    """The watcher's life in this thread until ``stop`` is set (``wake`` interrupts its sleep): a
    first pass, then (unless ``options.once``) the observer's events and the periodic rescan."""
    watcher = Watcher(
        vault,
        keys_home,
        ack_types=options.ack_types,
        race_window=options.race_window,
        settle_seconds=options.settle_seconds,
        emit=emit,
        handlers=options.handlers,
    )
    watcher.quiet_emit = True
    watcher.full_pass()
    watcher.quiet_emit = False
    if options.once:
        _ready(watcher)
        _finish_once(watcher, stop)
        return
    _observe(watcher, options, stop, wake)


def _ready(watcher: Watcher) -> None:
    watcher.emit(
        {
            "event": "ready",
            "shadowed": len(watcher.shadow.copies),
            "new": watcher.new_count,
            "pid": os.getpid(),
        }
    )


def _finish_once(watcher: Watcher, stop: threading.Event) -> None:
    """``--once``: wait (a few times at most) for a restore waiting for its file to be quiet, or a
    person's text settling."""
    for _ in range(10):
        if not watcher.deadlines or stop.is_set():
            break
        time.sleep(max(0.0, max(watcher.deadlines.values()) - time.monotonic()))
        watcher.due()


def _event_handler(vault: Vault, changed: queue.SimpleQueue[str], wake: threading.Event) -> Any:
    """A watchdog handler that queues every changed path outside ``.nexus/`` and wakes the loop (and
    records a note renamed in Obsidian: links to it will move)."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler

    state_dir = str(vault.state)

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.event_type not in CHANGE_EVENTS:
                return  # opened/closed: nothing changed (a handler reading its note would loop)
            dest = os.fsdecode(getattr(event, "dest_path", ""))
            if event.event_type == "moved":
                _record_rename(vault, os.fsdecode(event.src_path), dest)
            for p in (os.fsdecode(event.src_path), dest):
                if p and not p.startswith(state_dir):
                    changed.put(p)
                    wake.set()

    return Handler()


def _record_rename(vault: Vault, src: str, dest: str) -> None:
    from ..ledger import renames

    old, new = _rel(vault, Path(src)), _rel(vault, Path(dest))
    if old and new and renames.is_note_rename(old, new):
        renames.record(vault, old, new)


def _observe(watcher: Watcher, options: Options, stop: threading.Event, wake: threading.Event) -> None:
    """Run the observer and the workers around the event loop; stop them all, whatever happens."""
    import warnings

    from watchdog.observers import Observer

    # watchdog warns when a folder is made again under a watch it still holds ("Callback with id …
    # already exists … It will be Overwritten.") and replaces the watch, which is right; under
    # `-W error` that warning killed the observer's thread (its lock held: stopping then hung)
    warnings.filterwarnings("ignore", message=r"Callback with id .* already exists", category=RuntimeWarning)
    vault, emit = watcher.vault, watcher.emit
    changed: queue.SimpleQueue[str] = queue.SimpleQueue()
    indexer = IndexRefresher(vault, emit, watcher.trust)
    indexer.start()
    env = options.verify_env or {"NEXUS_HOME": os.fspath(watcher.keys_home)}
    verifier = LogVerifier(vault, env, emit)
    verifier.start()
    verifier.poke()  # what was appended while no watcher ran

    def observing() -> Any:
        observer = Observer()
        observer.schedule(_event_handler(vault, changed, wake), str(vault.root), recursive=True)
        observer.start()
        return observer

    observers = [observing()]

    def check_observer() -> None:
        """A dead observer (any error in its thread) is named and replaced; the rescan that calls
        this catches up on what it missed."""
        if not observers[-1].is_alive():
            emit({"event": "error", "file": ".", "message": "the file observer stopped; started again"})
            observers.append(observing())

    try:
        watcher.full_pass()  # changes made between the first pass and the observer starting
        indexer.poke()  # and what changed while no watcher ran
        _loop(watcher, options, changed, stop, wake, indexer, verifier, check_observer)
    finally:
        for observer in observers:
            observer.stop()
        for observer in observers:
            observer.join(timeout=10)
        indexer.close()
        verifier.close()
        heartbeat.stopped(vault)
        emit({"event": "stopped", "pid": os.getpid()})


def _drain(changed: queue.SimpleQueue[str]) -> set[str]:
    paths: set[str] = set()
    while True:
        try:
            paths.add(changed.get_nowait())
        except queue.Empty:
            return paths


def _loop(
    watcher: Watcher,
    options: Options,
    changed: queue.SimpleQueue[str],
    stop: threading.Event,
    wake: threading.Event,
    indexer: IndexRefresher,
    verifier: LogVerifier,
    check_observer: Callable[[], None] = lambda: None,
) -> None:
    """Handle changed paths as they come, deadlines as they fall due, and a full rescan (with a
    heartbeat, and ``check_observer``) every ``rescan_seconds``, until ``stop``."""
    vault, every = watcher.vault, options.rescan_seconds
    log_dir = os.fspath(vault.log_dir) + os.sep
    started = time.time()
    heartbeat.beat(vault, started=started, every=every)  # (brief and verify notice a death)
    _ready(watcher)
    next_rescan = time.monotonic() + every
    passes = 0
    while not stop.is_set():
        wake.wait(max(0.0, min([next_rescan, *watcher.deadlines.values()]) - time.monotonic()))
        wake.clear()
        if stop.is_set():
            break
        paths = _drain(changed)
        if paths and watcher.on_paths(paths):
            indexer.poke()
        if any(p.startswith(log_dir) for p in paths):
            verifier.poke()
        watcher.due()
        if time.monotonic() >= next_rescan:
            check_observer()
            watcher.full_pass()
            indexer.poke()  # (cheap when nothing changed: a stat per file)
            passes += 1
            heartbeat.beat(vault, started=started, every=every, passes=passes)
            next_rescan = time.monotonic() + every
