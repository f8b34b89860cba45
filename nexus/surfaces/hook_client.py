"""``nexus-hook``, the entry point runtimes start at every session start and every turn: a thin client
of a warm hook server (``hook_server.py``) that already has nexus imported.

A hook run in its own process pays Python's start plus importing nexus and cryptography (~70 ms) for
5-20 ms of work. Served, it pays Python's start, this module (~7 ms of CPU: its imports, the code
stamp, the socket) and the work in a child the server forks: on a loaded 2-core machine
(``benchmarks/bench_hooks.py``, CPU p50, ``python -c pass`` 13 ms) a session start 42 ms instead of
138, a prompt with one new entry 45 instead of 125, one with nothing new 28 instead of 42, a
session end 26 instead of 102 (``docs/performance.md``).

When a vault is named (``--vault`` or ``NEXUS_VAULT``, an absolute path) and ``NEXUS_HOOK_SERVER`` is
not ``off``, the hook is sent to the server of its (vault, key folder, nexus code, interpreter, HOME):
argv, environment, working folder, the event JSON and the code's stamp. What comes back is printed
exactly as the in-process hook (``hooks.py``) prints it. With no server to answer, the client starts
one (detached, in its own session, its standard streams on /dev/null) and waits for it: one server per
key, started by the client that takes the key's lock file (``flock``), which hands it the lock it then
holds while it lives. A server listens before it imports nexus (:func:`listen`), so a hook that comes
while it starts waits for it rather than import nexus beside it on the same cores; only when none can
start or none listens within ``STARTING_SECONDS`` does the hook run in this process. ``nexus mcp``,
which every runtime but Hermes starts as a session opens, starts the server of its vault right after
its first answer (:func:`prime`), so that a session's first hook finds it ready or nearly.

The server says it took a call (one byte, ``+``) before it runs it. If it stops before that, the hook
is sent to the next server or run here; after it, a session start or a prompt is run again here
(they only move the session's cursors) and a writer (stop, pre-compact, session-end, pre-tool)
prints its one failure line instead of risking doing its work twice. It always exits 0, like
``hooks.py``.

The socket lives in a per-user folder (``$XDG_RUNTIME_DIR/nexus``, else ``$TMPDIR/nexus-UID``), made
0700 and used only if it is ours with no group or other bits. This module imports only the standard
library's smallest parts (the request and answer are ``marshal`` data: the server runs on the same
interpreter): it runs before anything of nexus is imported.
"""

from __future__ import annotations

import _socket  # (socket.py's own core: the module adds enums and imports that cost a hook ~2 ms)
import fcntl
import hashlib
import marshal  # (built in; both ends are the same interpreter: json would import ~5 ms of modules)
import os
import stat
import sys
import time
from collections.abc import Mapping

SWITCH = "NEXUS_HOOK_SERVER"  # "off": every hook runs in its own process
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # nexus's code, the server's too
EVENTS = ("session-start", "prompt", "pre-tool", "pre-compact", "stop", "session-end")  # hooks.EVENTS
REPLAYABLE = ("session-start", "prompt")  # safe to run again after a server failed mid-call
STARTING_SECONDS = 5.0  # how long a hook waits for a server that is starting to listen
POLL_SECONDS = 0.003  # between its tries
TIMEOUT = 60.0  # seconds a served hook may take (the runtimes' own hook timeouts are about this)
MAX_PATH = 100  # AF_UNIX socket paths hold about 107 bytes
# the server's program: the nexus this client is (its folder first on the path, whatever the
# environment or working folder would import); listening at once, then hook_server.main(SOCKET,
# LOCK_FD, VAULT, LISTENER_FD), which imports nexus
SERVER = (
    "import sys; sys.path.insert(0, sys.argv[1]); from nexus.surfaces import hook_client; "
    "fd = hook_client.listen(sys.argv[2]); from nexus.surfaces.hook_server import main; "
    "raise SystemExit(main([*sys.argv[2:], str(fd)]))"
)
TAKEN = b"+"  # the server's first byte once it runs a call (a marshal dict never starts with it)
BACKLOG = 16


def code_stamp() -> str:
    """A stamp of nexus's code as it is on disk now (every module's path, size and modification time):
    a server whose stamp differs from its client's runs code that has changed since it started."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                info = os.stat(os.path.join(folder, name))
                digest.update(f"{folder}/{name} {info.st_size} {info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def socket_folder(env: Mapping[str, str]) -> str | None:
    """The per-user folder of the servers' sockets, made 0700 if missing; None if it is not ours
    alone (another owner, group or other bits, not a folder) or cannot be made."""
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        folder = os.path.join(runtime, "nexus")
    else:
        folder = os.path.join(env.get("TMPDIR") or "/tmp", f"nexus-{os.getuid()}")
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return folder


def _option(argv: list[str], name: str) -> str | None:
    """The value after ``name`` in ``argv`` (the last one), else None."""
    found = None
    for i, arg in enumerate(argv[:-1]):
        if arg == name:
            found = argv[i + 1]
    return found


def target(argv: list[str], env: Mapping[str, str]) -> tuple[str, str] | None:
    """(socket path, vault folder) of the server for this hook, or None: run it in this process (the
    server switched off, no vault named, a relative path, an unusable socket folder)."""
    if env.get(SWITCH, "").strip().lower() in ("off", "0", "false", "no"):
        return None
    if not argv or argv[0] not in EVENTS:
        return None  # (the usage line, from hooks.py)
    vault = _option(argv, "--vault") or env.get("NEXUS_VAULT")
    home = _option(argv, "--home") or env.get("NEXUS_HOME") or ""
    if not vault:
        return None
    vault, home = os.path.expanduser(vault), os.path.expanduser(home)
    if not os.path.isabs(vault) or (home and not os.path.isabs(home)):
        return None  # (relative to the client's folder: not worth teaching the server)
    folder = socket_folder(env)
    if folder is None:
        return None
    key = "\0".join(
        (
            os.path.realpath(vault),
            home,
            PACKAGE,
            sys.executable,
            env.get("HOME", ""),
            env.get("XDG_CONFIG_HOME", ""),
        )
    )
    path = os.path.join(folder, hashlib.sha256(key.encode()).hexdigest()[:24] + ".sock")
    return (path, vault) if len(path.encode()) <= MAX_PATH else None


def listen(path: str) -> int:
    """The server's listening socket at ``path``, bound (0600) and listening before the server imports
    nexus: a client that connects while it starts is answered once it is ready. Called by the server
    (``SERVER``), which holds the key's lock: a socket left at ``path`` by a server that died is ours
    to replace. Returns its descriptor."""
    listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:  # noqa: SIM105 (contextlib is not among this module's few imports)
        os.unlink(path)
    except FileNotFoundError:
        pass
    mask = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(mask)
    listener.listen(BACKLOG)
    return int(listener.detach())


def ask(path: str, request: dict[str, str | list[str] | dict[str, str]]) -> dict[str, str] | None:
    """The server's answer to ``request``; None when there is no server to ask, or it closed the
    connection without taking the call (nothing was done). Raises OSError or ValueError when the
    server took the call (or may yet: nothing came back within ``TIMEOUT``) but no whole answer came
    back."""
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    taken = False
    try:
        try:
            conn.connect(path)
        except OSError:
            return None  # (no server listening)
        conn.settimeout(TIMEOUT)
        try:
            conn.sendall(marshal.dumps(request))
            conn.shutdown(_socket.SHUT_WR)
            first = conn.recv(65536)
        except TimeoutError:
            raise  # (it may take the call yet: not to be run here too)
        except OSError:
            return None  # (it closed the connection unread: it stopped, say while it started)
        if not first:
            return None
        taken = first[:1] == TAKEN
        chunks = [first[1:] if taken else first]
        while chunk := conn.recv(65536):
            chunks.append(chunk)
        answer = marshal.loads(b"".join(chunks))
    finally:
        conn.close()
    if not isinstance(answer, dict) or (not taken and "stale" not in answer):
        raise ValueError("not an answer")
    return answer  # (the server's own: a dict of str)


def prime(vault: str, env: Mapping[str, str]) -> None:
    """Start the hook server of ``vault`` (the key folder from ``NEXUS_HOME``) unless one runs or is
    starting: ``nexus mcp`` calls it after its first answer, before the session's first hook. Not when
    the environment names no socket folder (neither ``XDG_RUNTIME_DIR`` nor ``TMPDIR``): a runtime cut
    it down for its MCP server (the MCP SDK's client passes six variables), and its hooks, which get
    the whole environment, would use a server in another folder."""
    if not (env.get("XDG_RUNTIME_DIR") or env.get("TMPDIR")):
        return
    where = target(["session-start", "--vault", vault], env)
    if where is not None:
        spawn(*where, env)


def spawn(path: str, vault: str, env: Mapping[str, str]) -> bool:
    """Start the server for ``path`` unless one holds its lock (running, or starting): detached, in a
    session of its own, its standard streams on /dev/null, holding the lock it is handed. True when a
    server runs or is starting (started now, or holding the lock); False when none could start."""
    try:
        lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        return True  # (held: a server runs or is starting)
    except OSError:
        os.close(lock)
        return False
    try:
        os.set_inheritable(lock, True)
        null = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
        os.posix_spawn(
            sys.executable,
            [sys.executable, "-P", "-c", SERVER, os.path.dirname(PACKAGE), path, str(lock), vault],
            dict(env),
            file_actions=null,
            setsid=True,
        )
    except OSError:
        return False  # (it could not start: the hooks run here)
    finally:
        os.close(lock)
    return True


def held(path: str) -> bool:
    """Whether a server holds ``path``'s lock (it runs, or is starting)."""
    try:
        lock = os.open(path + ".lock", os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(lock)  # (closing it lets go of a lock taken here)
    return False


def when_listening(path: str, request: dict[str, str | list[str] | dict[str, str]]) -> dict[str, str] | None:
    """``ask`` a server that is starting, once it listens (within ``STARTING_SECONDS``, while it holds
    its lock); None when it stopped first or took longer."""
    deadline = time.monotonic() + STARTING_SECONDS
    while time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        answer = ask(path, request)
        if answer is not None or not held(path):
            return answer
    return None


def failed(event: str, why: str) -> tuple[str, str]:
    """A writer's one failure line (stdout, stderr), as ``hooks.py`` prints a failure (``event`` is
    one of EVENTS and ``why`` plain words: nothing in the JSON string needs escaping)."""
    message = f"nexus: {event} failed: {why}"
    return f'{{"systemMessage": "{message}"}}\n', message + "\n"


def served(argv: list[str], raw: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(stdout, stderr) of the hook as the server answers it; None: run it in this process (a server
    was started for the next hook when none answered)."""
    where = target(argv, env)
    if where is None:
        return None
    path, vault = where
    request: dict[str, str | list[str] | dict[str, str]] = {
        "argv": argv,
        "env": dict(env),
        "cwd": os.getcwd(),
        "stdin": raw,
        "stamp": code_stamp(),
    }
    event = argv[0] if argv else ""
    try:
        answer = ask(path, request)
        if (answer is None or "stdout" not in answer) and spawn(path, vault, env):
            answer = when_listening(path, request)  # (none answered, or it ran other code: "stale")
    except (OSError, ValueError, EOFError, TypeError):  # taken, and the server stopped before answering
        spawn(path, vault, env)
        return None if event in REPLAYABLE else failed(event, "the hook server stopped during the call")
    if answer is not None and "stdout" in answer:
        return answer["stdout"], answer.get("stderr", "")
    return None


def main() -> int:
    argv = sys.argv[1:]
    try:
        raw = "" if sys.stdin.isatty() else sys.stdin.read()  # (always drained: a runtime may block)
    except (OSError, ValueError):
        raw = ""
    try:
        answer = served(argv, raw, os.environ)
    except Exception:  # (before anything was sent, say the working folder deleted: run it here)
        answer = None
    if answer is None:
        from . import hooks  # (here only: the served path imports nothing of nexus)

        return hooks.main(argv, raw)
    sys.stdout.write(answer[0])
    sys.stderr.write(answer[1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
