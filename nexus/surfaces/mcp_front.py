"""``nexus mcp``'s stdio front: answers a session's requests without the MCP SDK, and hands the
stream to the SDK server (``mcp_server.py``) only when a request needs it.

A runtime sends its first model request only once the server has answered its opening request and
``tools/list`` (Claude Code in ``-p`` mode; Codex, for a ``required`` server, before the thread
starts). What the front buys there, measured by ``benchmarks/bench_mcp_start.py`` (spawned over pipes
as a runtime spawns it, 20 interleaved runs on the 2-core test machine while its load average fell
from 9 to 6, where a bare ``python -c pass`` took 18.8 ms p50, 10.9 ms at best): the answer to Claude
Code's ``server/discover`` 20.6 ms p50 after spawn (11.0 at best), ``tools/list`` 20.9 ms, Codex's
``initialize`` 20.8 ms; against 84.2 ms (42.3 at best) for the same front started through the CLI and
the library, and 1,114 ms for the SDK server alone (importing ``mcp.server`` builds every protocol
version's pydantic models). It gets there by importing nothing before its first answers but
what answering needs: the ``nexus`` program starts it before the CLI's parser (``program.py``,
``mcp_start.py``: the command line, vault, agent and tool set read with the standard library); the
opening is answered in the main thread (:func:`opening`, no ``threading`` or ``queue``), its JSON read
and written by CPython's C scanner and encoder (``mcp_json.py``); the tool lists come from
``mcp_tools.json``; the operations, the settings machinery and the session's threads
(``mcp_session.py``) are imported after it. It answers by itself (``mcp_answers.Answers``), exactly
as the SDK server would, what it can be sure of, in both eras the SDK serves:

- ``initialize`` (the same protocol-version negotiation, capabilities, server info, instructions)
  and ``ping``; or the 2026-07-28 envelope: ``server/discover``, a ``subscriptions/listen``
  acknowledgement, the SDK's refusal of a version it does not know;
- ``tools/list``, ``prompts/list``, ``resources/list``, ``resources/templates/list``: from
  ``mcp_tools.json``, generated from the SDK server (``python -m nexus.surfaces.mcp_capture --write``;
  a test fails when it differs from what the SDK serves);
- ``tools/call`` whose arguments it can check exactly (``mcp_tools.check_arguments``), running the
  same operation code and rendering the same result or error the SDK server gives.

Everything else (reading a resource, a cancellation, a client's answer, an unknown method, a call
whose arguments the SDK might coerce, anything before the opening request) is kept, in order, for the
SDK, which the session (``mcp_session.py``) then imports in a background thread and hands the stream
to. stdout carries whole JSON-RPC lines only, written by one writer under a lock; fd 1 points at
stderr meanwhile, as the SDK's transport does, so stray output misses the wire. SIGINT ends the
process as soon as no tool call runs (runtimes send it first when they close a server).

``NEXUS_MCP_FRONT`` (read by the command): ``lazy`` (the default), ``auto`` (the SDK also loaded once
the stream is idle), ``front`` (never loaded: tests compare the front's answers with the SDK's),
``sdk`` (no front: the SDK server from the first byte).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # (``signal`` wraps it in enums: ~2 ms to import)
import _thread  # (``threading`` imports functools and collections: ~3 ms before the first answer)
import os
import select
import sys

from . import mcp_json
from .mcp_answers import Answers, load_data
from .mcp_protocol import Defer

TYPE_CHECKING = False  # (typing's own flag costs its import: ~3 ms before the first answer)
if TYPE_CHECKING:
    from typing import Any

    from ..workspace import Workspace
    from .mcp_start import Start

MODES = ("auto", "lazy", "front", "sdk")
OPENING_SECONDS = 0.05  # the opening ends when no request comes for this long
EXIT_WAIT_SECONDS = 10.0  # on SIGINT, how long a running tool call may take to finish
INTERNAL_ERROR = -32603


class Wire:
    """stdout's one writer: whole JSON-RPC lines under a lock."""

    def __init__(self, fd: int) -> None:
        self.fd, self.lock = fd, _thread.allocate_lock()
        self.closed = False  # the client closed its end: answers go nowhere, stdin's EOF ends the session

    def send(self, message: dict[str, Any]) -> None:
        self.line(mcp_json.dumps(message))

    def line(self, text: str) -> None:
        data = (text.rstrip("\n") + "\n").encode("utf-8", "surrogateescape")
        with self.lock:
            try:
                while data and not self.closed:
                    data = data[os.write(self.fd, data) :]
            except BrokenPipeError:
                self.closed = True

    def error(self, message: dict[str, Any], text: str) -> None:
        if "id" in message and "method" in message:  # a request: it gets an answer
            self.send(
                {"jsonrpc": "2.0", "id": message["id"], "error": {"code": INTERNAL_ERROR, "message": text}}
            )


class Opened:
    """What the opening left for the session: the first line the front left to the SDK, the lines
    after it, a line begun and not ended, and whether stdin has ended."""

    __slots__ = ("deferred", "ended", "lines", "partial")

    def __init__(self) -> None:
        self.deferred = b""
        self.lines: list[bytes] = []
        self.partial = b""
        self.ended = False


def opening(front: Answers, source: int, wire: Wire, vault: str | None = None) -> Opened:
    """Answer what arrives at once, in this thread, before the session's threads and the SDK's
    loading are imported: the opening request, the listings, a ping, a tool call whose arguments are
    sure, until the first request the front defers, ``OPENING_SECONDS`` without a request, or EOF.
    After the first answer, the warm hook server of ``vault`` is started (``hook_client.prime``): the
    session's first hook comes next."""
    opened = Opened()
    buffer = b""
    while select.select([source], [], [], OPENING_SECONDS)[0]:
        chunk = os.read(source, 1 << 16)
        if not chunk:
            opened.ended = True
            break
        *lines, buffer = (buffer + chunk).split(b"\n")
        for n, line in enumerate(lines):
            try:
                message = mcp_json.loads(line)
            except ValueError:
                message = None
            try:
                response = front.take(message)
            except Defer:
                opened.deferred = line + b"\n"
                opened.lines = [x + b"\n" for x in lines[n + 1 :]]
                opened.partial = buffer
                return opened
            if response is not None:
                wire.send(response)
                if vault is not None:
                    _prime(vault)
                    vault = None
    if buffer:  # (stdin ended in the middle of a line, or the line is still coming)
        if opened.ended:
            opened.lines.append(buffer)
        else:
            opened.partial = buffer
    return opened


def _prime(vault: str) -> None:
    from . import hook_client  # (after the first answer: hashlib and fcntl)

    try:  # noqa: SIM105 (contextlib: an import the front does without)
        hook_client.prime(vault, os.environ)
    except Exception:  # (a hook starts its server itself: this only starts it sooner)
        pass


def _exit_when_idle() -> None:
    tools = sys.modules.get(f"{__package__}.mcp_tools")  # not loaded: no tool call ever ran
    if tools is not None:
        tools.CALLS.wait_idle(EXIT_WAIT_SECONDS)
    os._exit(0)


def _interrupted(signum: int, frame: object) -> None:
    """SIGINT (what a runtime sends first when it closes): exit as soon as no tool call is running.
    The SDK's loop would otherwise wait on its stdin reader thread, and the runtime on us."""
    _thread.start_new_thread(_exit_when_idle, ())


def serve(ws: Workspace, agent: str, tools: str | None = None, mode: str = "lazy") -> int:
    """``nexus mcp`` through the CLI: check the agent, then serve stdio (``mode``: one of :data:`MODES`)."""
    from ..errors import InputError
    from . import mcp_tools

    tools = ws.settings.mcp_tools if tools is None else tools
    if mode not in MODES:
        raise InputError(f"unknown NEXUS_MCP_FRONT {mode!r}: use one of {', '.join(MODES)}")
    mcp_tools.check_agent(ws, agent, tools)
    _signal.signal(_signal.SIGINT, _interrupted)
    if mode == "sdk":
        from . import mcp_server

        return mcp_server.run(ws, agent)
    return _serve(Answers(ws, agent, tools, load_data()), mode, str(ws.vault.root))


def start(begun: Start) -> int:
    """``nexus mcp`` started by :func:`mcp_start.read` (the program's entry point): serve stdio at
    once; the workspace is resolved by the library after the opening (:func:`mcp_start.workspace`),
    and at the latest when the session ends, so that a setting the library refuses is still said."""
    _signal.signal(_signal.SIGINT, _interrupted)
    front = Answers(begun.workspace, begun.agent, begun.tools, load_data())
    try:
        code = _serve(front, begun.mode, begun.vault)
        front.ws  # noqa: B018 (resolving it is the point)
        return code
    except Exception as err:  # what the CLI would have refused before serving: said as it says it
        from ..errors import NexusError

        if not isinstance(err, NexusError):
            raise
        sys.stderr.write(f"nexus: error: {err}\n")
        return err.exit_code


def _serve(front: Answers, mode: str, vault: str) -> int:
    """The opening, then the session (``mcp_session.py``, imported only now: its threads, the SDK's
    loading and the hand-over are not needed for the first answers); ``vault``'s hook server started
    after the first answer."""
    # the wire on descriptors of its own; fd 1 -> stderr and fd 0 -> /dev/null meanwhile (the SDK's
    # stdio transport does the same): nothing a tool prints can tear a JSON-RPC line
    sys.stdout.flush()
    wire_fd, source = os.dup(1), os.dup(0)
    saved = os.dup(1), os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(2, 1)
    os.dup2(null, 0)
    os.close(null)
    try:
        wire = Wire(wire_fd)
        opened = opening(front, source, wire, vault)
        from .mcp_session import Session

        return Session(front, mode).run(source, wire, opened)
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 0)
        for fd in (*saved, wire_fd):
            os.close(fd)
