"""The watcher's background workers: the search index and the verify state kept current, each in a
thread of its own, so a slow refresh never delays a restore.

``poke`` a worker after a change; a burst of pokes within its delay makes one call of its work.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..storage.vault import Vault
from ..trust import Trust

INDEX_DELAY = 0.1  # after a change, wait this long for more before refreshing the search index
VERIFY_DELAY = 1.0  # after a segment changes, wait this long for more before verifying what is new


class _Debounced:
    """A worker thread for the watcher: ``poke`` after a change; a burst of pokes within ``delay``
    seconds makes one call of ``work``. ``close`` stops it (and ``_stop_work`` ends a call in flight)."""

    delay = 0.0
    name = "nexus-worker"
    emit: Callable[[dict[str, Any]], None]  # set by the subclass before ``__init__`` runs here

    def __init__(self) -> None:
        self.wanted = threading.Event()
        self.stopping = threading.Event()
        self.last_error: str | None = None
        self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def poke(self) -> None:
        self.wanted.set()

    def close(self) -> None:
        self.stopping.set()
        self.wanted.set()
        self._stop_work()
        self.thread.join(timeout=60)

    def _stop_work(self) -> None:
        pass

    def work(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self.stopping.is_set():
            if not self.wanted.wait(0.5):  # (a timeout: ``close`` is seen even if a poke was cleared)
                continue
            time.sleep(self.delay)  # let a burst of appends land: one call for all of them
            self.wanted.clear()
            if not self.stopping.is_set():
                self.work()

    def _error_once(self, file: str, message: str) -> None:
        """An ``error`` event, once per distinct message."""
        if message != self.last_error:
            self.last_error = message
            self.emit({"event": "error", "file": file, "message": message})


class IndexRefresher(_Debounced):
    """Keeps the search index current while the watcher runs, in a thread of its own (a slow refresh
    never delays a restore). ``poke`` after a change; a burst of changes within ``INDEX_DELAY`` makes
    one refresh. Only an index that exists is refreshed: building one (tens of seconds on a large
    vault) is left to the first search. Errors (Whoosh failing, a damaged index) are reported as
    ``error`` events, once per distinct message, and never stop the watcher."""

    delay = INDEX_DELAY
    name = "nexus-index"

    def __init__(self, vault: Vault, emit: Callable[[dict[str, Any]], None], trust: Trust) -> None:
        self.vault = vault
        self.emit = emit
        self.trust = trust  # the machine's pins and seal secret: what a refresh seals
        super().__init__()

    def work(self) -> None:
        self.refresh_once()

    def refresh_once(self) -> None:
        try:
            from .. import search

            if not (search.index_dir(self.vault) / search.MANIFEST).exists():
                return  # never searched: the first search builds the index
            stats = search.refresh(self.vault, trust=self.trust)
        except Exception as err:  # Whoosh missing or failing must not stop the watcher
            self._error_once(".nexus/index", f"search index refresh failed: {type(err).__name__}: {err}")
            return
        self.last_error = None
        if stats.files_indexed or stats.files_removed or stats.rebuilt:
            self.emit(
                {
                    "event": "indexed",
                    "files": stats.files_indexed,
                    "removed": stats.files_removed,
                    "documents": stats.documents_added,
                    "rebuilt": stats.rebuilt,
                    "seconds": round(stats.seconds, 4),
                }
            )
        try:  # then the vectors by meaning, when a search has made them
            search.refresh_vectors(self.vault, self.trust)
        except Exception as err:  # a failing model or store must not stop the watcher
            self._error_once(".nexus/vectors", f"search vectors refresh failed: {type(err).__name__}: {err}")


class LogVerifier(_Debounced):
    """Keeps ``nexus verify``'s remembered state current while the watcher runs, in a thread
    of its own: ``poke`` after a segment changes; a burst within ``VERIFY_DELAY`` makes one incremental
    verify, which checks only the new entries, so a morning ``nexus verify`` has almost nothing left.
    The verify runs as a ``nexus verify --json`` process: it may use every core (a pool is never forked
    from this threaded process) and never holds this process's GIL while the watcher restores entries.
    When the number of integrity problems changes it prints an ``integrity`` event; a failure is an
    ``error`` event."""

    delay = VERIFY_DELAY
    name = "nexus-verify"

    def __init__(self, vault: Vault, env: Mapping[str, str], emit: Callable[[dict[str, Any]], None]) -> None:
        self.vault = vault
        self.env = dict(env)  # the verify process's environment (NEXUS_HOME: the keys this machine pins)
        self.emit = emit
        self.problems: int | None = None
        self.proc: Any = None
        super().__init__()

    def _stop_work(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()  # (the state it would have saved is derived: the next verify redoes it)

    def work(self) -> None:
        self.verify_once()

    def verify_once(self) -> None:
        import subprocess

        from ..ledger.check import WARNING_KINDS

        cmd = [sys.executable, "-m", "nexus", "--vault", os.fspath(self.vault.root), "verify", "--json"]
        err = b""
        try:
            self.proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env, stdin=subprocess.DEVNULL
            )
            out, err = self.proc.communicate()
            report = json.loads(out)
            errors = [p for p in report["problems"] if p["kind"] not in WARNING_KINDS]
        except (OSError, ValueError, KeyError, TypeError) as error:
            if self.stopping.is_set():
                return
            lines = err.decode(errors="replace").strip().splitlines()
            self._error_once("log", f"verify failed: {lines[-1] if lines else error}")
            return
        finally:
            self.proc = None
        self.last_error = None
        if len(errors) != self.problems:
            if errors or self.problems:
                self.emit(
                    {
                        "event": "integrity",
                        "problems": len(errors),
                        "entries": report["entries"],
                        "kinds": sorted({p["kind"] for p in errors}),
                    }
                )
            self.problems = len(errors)
