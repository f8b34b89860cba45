"""Exclusive locks on sidecar lock files.

Writers of a file ``X`` lock ``.nexus/locks/X.lock`` (never ``X`` itself, so readers and editors are
never blocked). On POSIX this calls ``fcntl.flock(fd, LOCK_EX)`` – a blocking lock, which is exactly what
portalocker's POSIX backend does – because importing portalocker costs ~60 ms on the hot path (it
resolves its own version through package metadata). On Windows portalocker provides the same lock.
The kernel drops the lock when the holder dies, so a SIGKILLed writer never leaves a stale lock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import BusyError


@contextmanager
def exclusive(lock_path: Path, *, wait: bool = True) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` (created if needed) for the ``with`` block.

    ``wait=False`` raises :class:`BusyError` at once when another process holds it.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock(fd, wait, lock_path)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


if os.name == "nt":  # pragma: no cover - exercised on Windows only

    def _lock(fd: int, wait: bool, lock_path: Path) -> None:
        import portalocker

        flags = portalocker.LOCK_EX if wait else portalocker.LOCK_EX | portalocker.LOCK_NB
        try:
            portalocker.lock(os.fdopen(os.dup(fd), "rb"), flags)
        except portalocker.LockException as err:
            raise BusyError(f"{lock_path} is held by another process") from err

else:
    import fcntl

    def _lock(fd: int, wait: bool, lock_path: Path) -> None:
        flags = fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB
        try:
            fcntl.flock(fd, flags)
        except BlockingIOError as err:
            raise BusyError(f"{lock_path} is held by another process") from err
