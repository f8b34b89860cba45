"""The watcher's heartbeat: how ``brief``, ``verify`` and ``index status`` notice a watcher that died.

A running ``nexus watch`` writes ``.nexus/team/heartbeat.json`` when it is ready and after every
periodic rescan: its pid, host, start time, the time of the beat, the rescan interval and how many
rescans it has made (``passes``: a program that changed the vault waits for that count to move on by
two to know a whole rescan has seen its change). A watcher that
stops cleanly (SIGINT, SIGTERM) marks the record ``stopped``. A record that is not stopped but whose
process is gone (same host) or that has not beaten for four rescan intervals (at least a minute) means
the watcher that should be running is not: :func:`problem` says so in one line. No record: no watcher
was ever started, nothing to say. Reading costs one small JSON file and, on the same host, one
``kill(pid, 0)``: fine for the brief's hot path (standard library only).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from ..storage import durable
from ..storage.vault import Vault

FILE = "heartbeat.json"
MIN_SILENCE = 60.0


def _path(vault: Vault) -> Any:
    return vault.state / "watch" / FILE


def _host() -> str:
    return os.uname().nodename


def beat(vault: Vault, *, started: float, every: float, passes: int = 0) -> None:
    """Record that this process's watcher is alive now, after ``passes`` rescans (not fsynced: losing
    a beat is harmless)."""
    record = {
        "pid": os.getpid(),
        "host": _host(),
        "started": started,
        "beat": time.time(),
        "every": every,
        "passes": passes,
        "stopped": None,
    }
    durable.replace(_path(vault), json.dumps(record).encode(), durable=False)


def stopped(vault: Vault) -> None:
    """Mark the record of this process's watcher as stopped cleanly."""
    try:
        record = json.loads(_path(vault).read_bytes())
    except (OSError, ValueError):
        return
    if isinstance(record, dict) and record.get("pid") == os.getpid():
        record["stopped"] = time.time()
        durable.replace(_path(vault), json.dumps(record).encode(), durable=False)


def passes(vault: Vault) -> int:
    """How many rescans the watcher that wrote the record has made (0 when there is no record)."""
    try:
        record = json.loads(_path(vault).read_bytes())
        return int(record.get("passes") or 0) if isinstance(record, dict) else 0
    except (OSError, ValueError, TypeError):
        return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(ts))


def problem(vault: Vault, now: float | None = None) -> str | None:
    """One line when the watcher that should be running is not (dead or silent), else None."""
    try:
        record = json.loads(_path(vault).read_bytes())
        pid, beat_at = int(record["pid"]), float(record["beat"])
        every = float(record.get("every") or 5.0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if record.get("stopped"):
        return None
    now = time.time() if now is None else now
    restart = "start it again with `nexus watch`"
    if record.get("host") == _host() and not _alive(pid):
        return (
            f"the watcher (pid {pid}) is no longer running: it died without stopping after its "
            f"last check at {_when(beat_at)}; {restart}"
        )
    silence = now - beat_at
    if silence > max(MIN_SILENCE, 4 * every):
        return (
            f"the watcher (pid {pid}) has not checked in for {silence / 60:.0f} minute(s) "
            f"(last at {_when(beat_at)}): it is stuck or gone; {restart}"
        )
    return None
