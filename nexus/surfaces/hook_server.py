"""The warm hook server: one process per (vault, key folder, nexus code, interpreter, HOME) with nexus
and cryptography already imported, answering ``nexus-hook`` (``hook_client.py``) over a Unix socket,
so a hook costs a bare Python start plus its work instead of also importing nexus each time.

    hook_server.main([SOCKET, LOCK_FD, VAULT, LISTENER_FD])   # started by hook_client.SERVER only

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


# what the hooks import as they run, below their operations' own modules (the brief's sections, the
# coordination view, the memory snapshot, the checks of entries and claims): imported before the
# first call, which would otherwise pay them (~35-60 ms) in its child. tests/test_hook_server.py
# fails when a hook imports a nexus module this list and the operations leave out.
WARM = (
    "nexus.keys.checked",
    "nexus.keys.roster",
    "nexus.keys.trust",
    "nexus.ledger.check",
    "nexus.ledger.pairs",
    "nexus.ledger.renames",
    "nexus.memory.bank",
    "nexus.memory.bounded",
    "nexus.memory.facts",
    "nexus.memory.scan",
    "nexus.memory.scan_hints",
    "nexus.memory.snapshot",
    "nexus.project.checkpoints",
    "nexus.project.decisions",
    "nexus.records.memory",
    "nexus.records.project",
    "nexus.records.team",
    "nexus.storage.markers",
    "nexus.storage.properties",
    "nexus.team.brief",
    "nexus.team.claimlog",
    "nexus.team.claims",
    "nexus.team.coordination",
    "nexus.team.coordination_state",
    "nexus.team.heartbeat",
)


def warm() -> None:
    """Import now what each hook operation imports when first called (cryptography included) and
    what the hooks import as they run (``WARM``), so the first call pays no import either."""
    for op in BY_HOOK.values():
        op.function()
    for name in WARM:
        importlib.import_module(name)
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

    def __init__(self, path: str, lock: int, vault: str, idle: float, listener: int) -> None:
        self.path, self.lock, self.vault, self.idle = path, lock, vault, idle
        self.stamp = hook_client.code_stamp()
        self.busy = False
        self.stopping = False
        self.listener = socket.socket(fileno=listener)  # (bound by hook_client.listen as we started)
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
        try:
            conn.sendall(hook_client.TAKEN)  # (from here on, the client never runs a writer again)
        except OSError:
            return  # (the client is gone)
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
    path, lock, vault, listener = argv
    server = Server(path, int(lock), vault, idle_seconds(vault, dict(os.environ)), int(listener))
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
