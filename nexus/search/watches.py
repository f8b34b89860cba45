"""The kernel's word that nothing in a vault changed, so the freshness check need not look again.

Before every search the vault's files are compared with the index (``documents``: a ``stat`` per
folder and per Markdown file, ~1 ms at 422 files, the largest fixed cost of a search in a
long-running process). On Linux, for a vault on a local filesystem, a process that lists the same
vault a second time watches it with inotify (one instance per process, IN_CLOEXEC and non-blocking):
each folder (files created, deleted, renamed in or out; itself deleted or moved) and each Markdown
file (written, truncated, its attributes or mtime changed, deleted or moved: by any path, so a hard
link from outside the vault is covered too). The kernel queues an event before the call that caused
it returns to its caller, so a later search that finds no event queued for the vault since a listing
made with every one of its paths already watched knows the listing still holds, and skips it.
Anything else means list again: any event, an overflowed queue, a watch the kernel dropped, a path
first seen in that listing or with a new inode (watched now, so the next listing can be trusted).

Not used (every search lists as before): off Linux; on a filesystem inotify cannot speak for
(network and FUSE mounts, virtual machines' shared folders, overlays: only local disk filesystems
are trusted, read from ``/proc/self/mountinfo``); a vault with a folder on another device; more than
``MAX_WATCHES`` paths; when the kernel refuses a watch; in a child process after ``fork``
(it shares the instance; reading it would take the parent's events). The one write the kernel does
not report is through a shared ``mmap`` (a ``stat`` would see its new mtime): editors, sync tools
and nexus write with ``write`` and ``rename``.
"""

from __future__ import annotations

import errno
import os
import struct
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED = 0x4000, 0x8000
IN_DONT_FOLLOW = 0x2000000
IN_NONBLOCK, IN_CLOEXEC = 0o4000, 0o2000000
FILE_MASK = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_DONT_FOLLOW
FOLDER_MASK = FILE_MASK | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
EVENT = struct.Struct("iIII")  # wd, mask, cookie, length of the name that follows

MAX_WATCHES = 8_192  # paths watched for one vault (past it, the vault is listed at every search)
MAX_VAULTS = 4  # vaults watched at once by a process (the least recently listed one is let go)
# local disk filesystems, where every write goes through this kernel's VFS (not overlay: a write to
# its upper layer from outside the overlay raises no event on it)
LOCAL = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "zfs", "jfs", "reiserfs", "bcachefs"}
    | {"nilfs2", "ramfs"}
)


@dataclass
class _Vault:
    """One vault's watches: path -> (watch descriptor, inode); trusted while no event came."""

    device: int
    paths: dict[str, tuple[int, int]] = field(default_factory=dict)
    quiet: bool = False


class Listing:
    """One listing of a vault while it is watched: each path is reported as it is listed (a folder
    before its files, a file before its stat is used); trusted afterwards only if every one of them
    was watched before the listing began."""

    def __init__(self, owner: Watches, root: str, state: _Vault | None) -> None:
        self.owner, self.root, self.state = owner, root, state
        self.complete = state is not None
        self.listed: set[str] = set()

    @property
    def watched(self) -> bool:
        return self.state is not None

    def seen(self, path: str, st: os.stat_result, folder: bool) -> None:
        state = self.state
        if state is None:
            return
        self.listed.add(path)
        known = state.paths.get(path)
        if known is not None and known[1] == st.st_ino:
            return
        self.complete = False  # (watched from now on: the next listing can be trusted)
        if st.st_dev != state.device or len(state.paths) >= MAX_WATCHES:
            self._give_up()
            return
        with self.owner.lock:
            if known is not None:
                self.owner.forget(self.root, path, known[0])
            wd = self.owner.add(path, FOLDER_MASK if folder else FILE_MASK)
            if wd == -errno.ENOENT:  # (gone since its stat: the next listing sees it gone)
                return
            if wd >= 0:
                state.paths[path] = (wd, st.st_ino)
                self.owner.users.setdefault(wd, set()).add((self.root, path))
                return
        self._give_up()

    def _give_up(self) -> None:
        self.owner.release(self.root, unwatchable=True)
        self.state = None

    def end(self) -> None:
        """The listing is done: paths no longer listed are let go, and the vault is trusted until
        the next event when every path listed was watched before the listing began."""
        state = self.state
        if state is None:
            return
        with self.owner.lock:
            for path in [p for p in state.paths if p not in self.listed]:
                self.owner.forget(self.root, path, state.paths.pop(path)[0])
            if self.complete:
                state.quiet = True


class Watches:
    """This process's inotify instance and the vaults it watches (see the module)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.fd: int | None = None
        self.libc: Any = None
        self.vaults: dict[str, _Vault] = {}  # root -> watches (least recently listed first)
        self.users: dict[int, set[tuple[str, str]]] = {}  # watch descriptor -> (root, path) using it
        self.listed: set[str] = set()  # roots listed once (a vault is watched from its second listing)
        self.refused: set[str] = set()  # roots that cannot be watched

    def unchanged(self, root: str) -> bool:
        """Whether nothing changed in the vault since its last listing (read from the queue)."""
        with self.lock:
            state = self.vaults.get(root)
            if state is None or not state.quiet:
                return False
            self._drain()
            return state.quiet

    def listing(self, root: str) -> Listing:
        """A listing of ``root`` beginning now (the events before it are of no more use)."""
        with self.lock:
            state: _Vault | None = self.vaults.get(root)
            if state is None and root not in self.refused and root in self.listed:
                state = self._watch(root)
            self.listed.add(root)
            if state is not None:
                self._drain()
                state.quiet = False
                self.vaults[root] = self.vaults.pop(root)  # (most recently listed last)
            return Listing(self, root, state)

    def _watch(self, root: str) -> _Vault | None:
        if not _local(root) or not self._open():
            self.refused.add(root)
            return None
        while len(self.vaults) >= MAX_VAULTS:
            self.release(next(iter(self.vaults)))
        try:
            state = _Vault(os.stat(root).st_dev)
        except OSError:
            return None
        self.vaults[root] = state
        return state

    def _open(self) -> bool:
        if self.fd is not None:
            return True
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = int(libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
        except (OSError, AttributeError):
            return False
        if fd < 0:
            return False
        self.libc, self.fd = libc, fd
        return True

    def add(self, path: str, mask: int) -> int:
        """A watch descriptor, or minus the error number."""
        import ctypes

        wd = int(self.libc.inotify_add_watch(self.fd, os.fsencode(path), mask))
        return wd if wd >= 0 else -ctypes.get_errno()

    def forget(self, root: str, path: str, wd: int) -> None:
        """``root``'s ``path`` no longer uses watch ``wd`` (removed once nothing does: a hard link
        within a vault, or in two vaults, is one inode and one watch)."""
        users = self.users.get(wd)
        if users is None:
            return
        users.discard((root, path))
        if not users:
            del self.users[wd]
            self.libc.inotify_rm_watch(self.fd, wd)

    def release(self, root: str, unwatchable: bool = False) -> None:
        """Stop watching ``root`` (its watches removed)."""
        with self.lock:
            state = self.vaults.pop(root, None)
            if unwatchable:
                self.refused.add(root)
            if state is not None:
                for path, (wd, _) in state.paths.items():
                    self.forget(root, path, wd)

    def _drain(self) -> None:
        """Read every queued event: each marks its vaults changed (an overflow: every vault)."""
        while self.fd is not None:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            except InterruptedError:
                continue
            except OSError:  # trust nothing
                for state in self.vaults.values():
                    state.quiet = False
                return
            self._events(data)

    def _events(self, data: bytes) -> None:
        at = 0
        while at + EVENT.size <= len(data):
            wd, mask, _, length = EVENT.unpack_from(data, at)
            at += EVENT.size + length
            if mask & IN_Q_OVERFLOW:
                for each in self.vaults.values():
                    each.quiet = False
                continue
            users = self.users.pop(wd, set()) if mask & IN_IGNORED else self.users.get(wd, set())
            for root, path in users:
                state = self.vaults.get(root)
                if state is None:
                    continue
                state.quiet = False
                if mask & IN_IGNORED and state.paths.get(path, (None,))[0] == wd:
                    del state.paths[path]  # (the kernel dropped the watch: its inode is gone)

    def after_fork(self) -> None:
        """In a child: the instance is the parent's; never read it (a child lists every time)."""
        self.lock = threading.RLock()
        self.fd, self.libc = None, None
        self.vaults.clear()
        self.users.clear()
        self.listed.clear()


def _unescape(field_: str) -> str:
    """A path as ``/proc/self/mountinfo`` writes it (space, tab, newline, backslash as octal)."""
    for code, ch in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field_ = field_.replace(code, ch)
    return field_


def filesystem(path: str) -> str | None:
    """The type of the filesystem ``path`` is on (the longest mount point above it), or None."""
    real = os.path.realpath(path)
    best, kind = "", None
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                left, sep, right = line.partition(" - ")
                parts = left.split()
                if not sep or len(parts) < 5 or not right.split():
                    continue
                mount = _unescape(parts[4])
                inside = real == mount or real.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, kind = mount, right.split()[0]
    except OSError:
        return None
    return kind


def _local(root: str) -> bool:
    return sys.platform.startswith("linux") and filesystem(root) in LOCAL


WATCHES = Watches()  # this process's
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=WATCHES.after_fork)
