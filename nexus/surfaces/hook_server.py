"""The warm hook server: one process per (vault, key folder, nexus code, interpreter, HOME) with nexus
and cryptography already imported, answering ``nexus-hook`` (``hook_client.py``) over a Unix socket,
so a hook costs a bare Python start plus its work instead of also importing nexus each time.

    hook_server.main([SOCKET, LOCK_FD, VAULT])     # started by the client only (hook_client.SERVER)

Each call is ``hooks.answer`` with the client's argv, environment (settings and keys come from it),
working folder and event JSON, run in a child forked from the warm process for that call (a few
milliseconds), one call at a time. The child is what a hook process of its own would be, once its
imports are done: its own file locks (they are per open file, never tested against threads of one
process), nothing kept from an earlier call (every call reads the vault afresh, and what a process
keeps, such as the log writer's derived state, is flushed at the child's exit as at a hook's).

It stops, removing its socket, after ``hook_server_idle_minutes`` without a call (setting; 15), when
its vault folder is gone (looked at every 2 seconds), on SIGTERM or SIGINT, and when a client's code
stamp is not its own (the code changed: it lets go of its socket and lock before answering "stale",
so that client starts a fresh one). It holds the key's lock file, handed to it by the client that
started it, until it exits: a second server for the same key is never started.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import marshal
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from .. import settings, workspace
from ..keys import signatures
from ..operations import BY_HOOK, edits
from ..storage.vault import Vault
from ..team import session
from . import hook_client, hooks

TICK = 2.0  # seconds between looks at the vault folder and the idle time
BACKLOG = 16


def warm() -> None:
    """Import now what each hook operation imports when first called (cryptography included), so
    the first call pays no import either."""
    for op in BY_HOOK.values():
        op.function()
    assert signatures and session and edits and workspace  # (imported for their import cost)


def idle_seconds(vault: str, env: dict[str, str]) -> float:
    """The idle time from the settings (environment, then the vault's nexus.md, then the default)."""
    try:
        config = Vault(Path(vault)).config()
    except Exception:  # an unreadable nexus.md: the hook calls will say so; the default here
        config = {}
    try:
        minutes = settings.resolve({}, env, config).hook_server_idle_minutes
    except Exception:
        minutes = settings.DEFAULTS.hook_server_idle_minutes
    return minutes * 60


class Server:
    """The listening socket, its lock, and the loop answering one call at a time."""

    def __init__(self, path: str, lock: int, vault: str, idle: float) -> None:
        self.path, self.lock, self.vault, self.idle = path, lock, vault, idle
        self.stamp = hook_client.code_stamp()
        self.busy = False
        self.stopping = False
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # (a socket left by a server that died: ours to replace, we hold the lock)
        mask = os.umask(0o177)
        try:
            self.listener.bind(path)  # 0600
        finally:
            os.umask(mask)
        self.listener.listen(BACKLOG)
        self.listener.settimeout(TICK)
        self.status = path + ".pid"
        temporary = f"{self.status}.{os.getpid()}"
        Path(temporary).write_text(f"{os.getpid()}\n")
        os.replace(temporary, self.status)

    def signalled(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True
        if not self.busy:
            raise SystemExit(0)  # (between calls: at once; during one, after it)

    def serve(self) -> None:
        last = time.monotonic()
        while not self.stopping and os.path.isdir(self.vault) and time.monotonic() - last < self.idle:
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            with conn:
                self.answer(conn)
            last = time.monotonic()

    def answer(self, conn: socket.socket) -> None:
        conn.settimeout(hook_client.TIMEOUT)
        try:
            chunks = []
            while chunk := conn.recv(65536):
                chunks.append(chunk)
            request = marshal.loads(b"".join(chunks))
            if request.get("stamp") != self.stamp:
                self.stopping = True
                self.release()  # before answering: the client starts the next server at once
                conn.sendall(marshal.dumps({"stale": "1"}))
                return
            argv, raw, env, cwd = request["argv"], request["stdin"], request["env"], request["cwd"]
        except (OSError, ValueError, EOFError, KeyError, TypeError, AttributeError):
            return  # (a client gone, or not one of ours: it runs its hook itself)
        self.busy = True
        try:
            reader, writer = os.pipe()
            child = os.fork()
            if child == 0:  # (the child holds neither the listening socket nor the lock)
                self.listener.close()
                os.close(self.lock)
                os.close(reader)
                hook(conn, writer, argv, raw, env, cwd)  # (never returns)
            os.close(writer)
            with open(reader, "rb") as pipe:
                imported = pipe.read().decode().split()
            os.waitpid(child, 0)
        finally:
            self.busy = False
        learn(imported)

    def release(self) -> None:
        """Let go of the socket and the lock (the socket removed first: while we hold the lock, the
        path is ours)."""
        if self.lock < 0:
            return
        for name in (self.path, self.status):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
        self.listener.close()
        os.close(self.lock)
        self.lock = -1


def hook(conn: socket.socket, pipe: int, argv: list[str], raw: str, env: dict[str, str], cwd: str) -> None:
    """In a child forked for this call, as a hook process of its own would: the hook, then what that
    process does at its exit (``atexit``: derived state flushed), then the answer; and exit. The
    modules it had to import go back to the server on ``pipe``, so the next call finds them imported."""
    code = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        known = set(sys.modules)
        out, err = hooks.answer(argv, raw, env, cwd)
        atexit._run_exitfuncs()
        conn.sendall(marshal.dumps({"stdout": out, "stderr": err}))
        code = 0
        os.write(pipe, " ".join(sorted(set(sys.modules) - known)).encode())
    finally:
        os._exit(code)


def learn(modules: list[str]) -> None:
    """Import, between calls, what a call imported (what ``warm`` did not foresee: a module an
    operation imports in a function), and keep it out of the collector's way."""
    for name in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    if modules:
        gc.freeze()


def main(argv: list[str]) -> int:
    path, lock, vault = argv
    server = Server(path, int(lock), vault, idle_seconds(vault, dict(os.environ)))
    handler: Callable[[int, FrameType | None], None] = server.signalled
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    try:
        warm()
        gc.freeze()  # (what is imported stays shared with each call's child, never copied by the collector)
        server.serve()
    finally:
        server.release()
    return 0
