"""Durable writes: the only module that writes vault files byte by byte.

Two shapes, both acknowledged only once the bytes are on disk:

* ``append`` – add bytes to the end of a file and fsync it (callers hold the file's sidecar lock);
* ``replace`` – write a temp file in the same folder, fsync it, rename it over the target, fsync the
  folder. A crash at any point leaves the old file or the new one, never a mix or a file of zeros.

If fsync reports an error the write is treated as lost (the OSError propagates); it is never retried.

Temp files are named ``.NAME.PID.XXXXXXXX.tmp``. A writer killed between creating one and renaming it
leaves it behind; the next ``replace`` of the same file removes every such temp file whose process is
gone (and an old-style one without a pid once it is a minute old), so recovery converges with no temp
file left wherever nexus writes.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries (a rename or a new file) to disk."""
    if os.name == "nt":  # pragma: no cover - Windows cannot open folders for fsync
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def append(path: Path, data: bytes) -> int:
    """Append ``data`` to ``path`` durably; return the file's size before the write.

    The caller holds the lock that serialises writers of ``path``.
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.fstat(fd).st_size
        append_fd(fd, data)
    finally:
        os.close(fd)
    return start


def append_fd(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (opened with O_APPEND) and fsync it."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    os.fsync(fd)


def replace(path: Path, data: bytes, *, durable: bool = True, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` atomically.

    ``durable=False`` skips the fsyncs; only for derived files under ``.nexus/`` that are rebuilt from
    the vault when they are missing or unreadable.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_temp_files(path)
    # what tempfile.mkstemp does (a new name, O_EXCL) without importing tempfile (random, shutil…: ~20
    # ms on a per-turn command)
    fd, tmp = -1, ""
    while fd < 0:
        tmp = os.path.join(path.parent, f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
        with contextlib.suppress(FileExistsError):
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        os.fchmod(fd, mode) if hasattr(os, "fchmod") else None
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if durable:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
        if durable:
            fsync_dir(path.parent)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def sweep_temp_files(path: Path, *, any_name: bool = False) -> list[str]:
    """Remove the temp files of ``path`` that a dead writer left (see the module docstring); with
    ``any_name``, every such temp file in the folder ``path`` (a folder whose writers hold one lock)."""
    import time

    if any_name:
        names = [n for n in _listdir(path) if n.startswith(".") and n.endswith(".tmp")]
        return [n for n in names if _sweep_one(path, n, n[1:-4].rsplit(".", 2)[-2:], time.time())]
    prefix = f".{path.name}."
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(path.parent) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return removed
    for name in names:
        middle = name[len(prefix) : -4].split(".")
        stale: bool
        if len(middle) == 2 and middle[0].isdigit():
            stale = not _alive(int(middle[0]))
        else:
            try:
                stale = time.time() - os.stat(path.parent / name).st_mtime > 60
            except OSError:
                continue
        if stale:
            with contextlib.suppress(OSError):
                os.unlink(path.parent / name)
                removed.append(name)
    return removed


def _listdir(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _sweep_one(folder: Path, name: str, middle: list[str], now: float) -> bool:
    if len(middle) == 2 and middle[0].isdigit():
        stale = not _alive(int(middle[0]))
    else:
        try:
            stale = now - os.stat(folder / name).st_mtime > 60
        except OSError:
            return False
    if stale:
        with contextlib.suppress(OSError):
            os.unlink(folder / name)
            return True
    return False


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def create_exclusive(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Create ``path`` with ``data`` durably; fail with FileExistsError if it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        fsync_dir(path.parent)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):  # a failed create leaves nothing (the caller may retry)
            os.unlink(path)
        raise


def truncate(path: Path, size: int) -> None:
    """Cut ``path`` to ``size`` bytes durably (used to remove a torn tail after quarantining it)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)
