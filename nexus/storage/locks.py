"""Exclusive locks on sidecar lock files.

Writers of a file ``X`` lock ``.nexus/locks/X.lock`` (never ``X`` itself, so readers and editors are
never blocked). On POSIX this calls ``fcntl.flock(fd, LOCK_EX)`` – a blocking lock, which is exactly what
portalocker's POSIX backend does – because importing portalocker costs ~60 ms on the hot path (it
resolves its own version through package metadata). On Windows portalocker provides the same lock.
The kernel drops the lock when the holder dies, so a SIGKILLed writer never leaves a stale lock.

``exclusive`` opens the lock file for one ``with`` block. ``FileLock`` keeps the lock file open between
uses (a long-lived writer saves an open and a close per append); it is safe across ``fork`` (a child
reopens the file instead of sharing the parent's lock) and across threads (a thread lock is taken
first, because ``flock`` does not exclude threads sharing one descriptor).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import IO

from ..errors import BusyError


@contextmanager
def exclusive(lock_path: Path, *, wait: bool = True) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` (created if needed) for the ``with`` block.

    ``wait=False`` raises :class:`BusyError` at once when another process holds it.
    """
    fd = _open(lock_path)
    try:
        holder = _lock(fd, wait, lock_path)
        try:
            yield
        finally:
            _unlock(fd, holder)
    finally:
        os.close(fd)  # closing the descriptor releases the lock in any case


class FileLock:
    """A blocking exclusive lock on ``lock_path`` whose file stays open between ``with`` blocks."""

    def __init__(self, lock_path: Path) -> None:
        self.path = lock_path
        self._fd = -1
        self._pid = -1
        self._holder: IO[bytes] | None = None
        self._thread_lock = threading.Lock()

    def __enter__(self) -> FileLock:
        self._thread_lock.acquire()
        try:
            if self._pid != os.getpid():  # first use, or a forked child: never share a parent's lock
                self._fd, self._pid = _open(self.path), os.getpid()
            self._holder = _lock(self._fd, True, self.path)
        except BaseException:
            self._thread_lock.release()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            _unlock(self._fd, self._holder)
        finally:
            self._holder = None
            self._thread_lock.release()

    def close(self) -> None:
        with self._thread_lock:
            if self._fd >= 0 and self._pid == os.getpid():
                os.close(self._fd)
            self._fd, self._pid = -1, -1


def _open(lock_path: Path) -> int:
    try:
        return os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except FileNotFoundError:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)


if os.name == "nt":  # pragma: no cover - exercised on Windows only

    def _lock(fd: int, wait: bool, lock_path: Path) -> IO[bytes] | None:
        import portalocker

        flags = portalocker.LOCK_EX if wait else portalocker.LOCK_EX | portalocker.LOCK_NB
        # The lock belongs to this file object's handle: keep the object until _unlock, or the
        # garbage collector closes the handle and the lock goes with it.
        holder = os.fdopen(os.dup(fd), "rb")
        try:
            portalocker.lock(holder, flags)
        except portalocker.LockException as err:
            holder.close()
            raise BusyError(f"{lock_path} is held by another process") from err
        return holder

    def _unlock(fd: int, holder: IO[bytes] | None) -> None:
        import portalocker

        if holder is not None:
            try:
                portalocker.unlock(holder)
            finally:
                holder.close()

else:
    import fcntl

    def _lock(fd: int, wait: bool, lock_path: Path) -> IO[bytes] | None:
        flags = fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB
        try:
            fcntl.flock(fd, flags)
        except BlockingIOError as err:
            raise BusyError(f"{lock_path} is held by another process") from err
        return None

    def _unlock(fd: int, holder: IO[bytes] | None) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
