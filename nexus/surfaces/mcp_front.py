"""``nexus mcp``'s stdio front: answers a session's requests without the MCP SDK, and hands the
stream to the SDK server (``mcp_server.py``) only when a request needs it.

What it buys, measured by ``benchmarks/bench_runtimes.py`` (spawn to the answer to Claude Code's
opening ``server/discover``, both in one interleaved run on the 2-core test machine under a load
average of about 14): 0.26 s p50 with the front against 3.16 s for the SDK server alone (importing
``mcp.server`` builds every protocol version's pydantic models). Claude Code's discover probe gives
up after about 3 s; with the SDK alone it fell back to ``initialize``, which the SDK had already
refused for the era, and connected after 9 s. The front imports neither ``mcp`` nor ``pydantic``. It
reads newline-delimited JSON-RPC and answers by itself (``mcp_answers.Answers``), exactly as the SDK
server would, what it can be sure of, in both eras the SDK serves:

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
SDK, which is then imported in a background thread (``lazy``, the default; ``auto`` also imports it
once the stream is idle for ``IDLE_SECONDS``). When it is loaded the front stops taking requests (each
one it took is answered, its write durable, before the SDK sees the next) and the SDK's server takes
the stream through its public ``run("stdio")`` (``mcp_server.serve_streams``): the opening request
replayed under an id of the front's (its answer swallowed), the acknowledged listen streams (the
SDK's second ack swallowed), ``notifications/initialized`` in the handshake era, then the kept lines,
then the rest of stdin. stdout carries whole JSON-RPC lines only, written by one writer under a lock;
fd 1 points at stderr meanwhile, as the SDK's transport does, so stray output misses the wire. SIGINT
ends the process as soon as no tool call runs (runtimes send it first when they close a server).

If the SDK cannot be loaded the front answers what it can and every kept request gets a JSON-RPC
error. ``NEXUS_MCP_FRONT`` (read by the command): ``lazy`` (the default), ``auto``, ``front`` (never
loaded: tests compare the front's answers with the SDK's), ``sdk`` (no front: the SDK server from the
first byte).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # (``signal`` wraps it in enums: ~2 ms to import)
import os
import queue
import sys
import threading
import time

from . import mcp_json
from .mcp_answers import CALLS, LISTEN_ACK, Answers, Defer, load_data

TYPE_CHECKING = False  # (typing's own flag costs its import: ~3 ms before the first answer)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ..workspace import Workspace
    from .mcp_start import Start

MODES = ("auto", "lazy", "front", "sdk")
IDLE_SECONDS = 0.05
QUIET_SECONDS = 0.05  # the opening requests answered and none for this long: resolve the workspace
EXIT_WAIT_SECONDS = 10.0  # on SIGINT, how long a running tool call may take to finish
INTERNAL_ERROR = -32603
LISTEN = "subscriptions/listen"


class Wire:
    """stdout's one writer: whole JSON-RPC lines under a lock."""

    def __init__(self, fd: int) -> None:
        self.fd, self.lock = fd, threading.Lock()
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


class Session:
    """One stdio session: the reader thread, the front, the SDK's loading and the hand-over.

    ``ws`` is the workspace, or what resolves it (:func:`start`): then it is resolved once the stream
    has been quiet for ``QUIET_SECONDS`` after the opening requests, or first thing for a request
    that needs it (a tool call, the SDK)."""

    def __init__(self, ws: Workspace | Callable[[], Workspace], agent: str, tools: str, mode: str) -> None:
        self.agent, self.tools, self.mode = agent, tools, mode
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.front = Answers(ws, agent, tools, load_data())
        self.resolved = not callable(ws)
        self.pending: list[bytes] = []  # lines kept for the SDK, in order
        self.loading = False
        self.failed = ""  # why the SDK could not be loaded

    @property
    def ws(self) -> Workspace:
        self.resolved = True
        return self.front.ws

    def run(self, source: int, wire: Wire) -> int:
        threading.Thread(target=self._read, args=(source,), name="nexus-mcp-stdin", daemon=True).start()
        while True:
            idle = self.mode == "auto" and not self.loading
            timeout = QUIET_SECONDS if not self.resolved else IDLE_SECONDS if idle else None
            try:
                kind, item = self.events.get(timeout=timeout)
            except queue.Empty:
                if not self.resolved:
                    self.ws  # noqa: B018 (resolving it is the point)
                else:
                    self._load()
                continue
            if kind == "line":
                self._line(item, wire)
            elif kind == "sdk" and isinstance(item, BaseException):
                self._fail(f"{type(item).__name__}: {item}", wire)
            elif kind == "sdk":
                return self._hand_over(item, wire)
            elif not self.pending or self.failed or not self.loading:  # EOF, nothing left for the SDK
                return 0
            else:  # EOF with lines for the SDK: hand them over once it is loaded, then the EOF
                self.events.put((kind, item))
                kind, item = self._next_sdk_event()
                if isinstance(item, BaseException):
                    self._fail(f"{type(item).__name__}: {item}", wire)
                    return 0
                return self._hand_over(item, wire)

    def _next_sdk_event(self) -> tuple[str, Any]:
        held: list[tuple[str, Any]] = []
        while True:
            kind, item = self.events.get()
            if kind == "sdk":
                for event in held:
                    self.events.put(event)
                return kind, item
            held.append((kind, item))

    def _read(self, source: int) -> None:
        try:
            with os.fdopen(source, "rb", closefd=False) as stream:
                for line in stream:
                    self.events.put(("line", line))
        except OSError:
            pass
        self.events.put(("eof", None))

    def _line(self, line: bytes, wire: Wire) -> None:
        try:
            message = mcp_json.loads(line)
        except ValueError:
            message = None
        try:
            response = self.front.take(message)
        except Defer:
            self.ws  # noqa: B018 (the SDK is made for the workspace: resolved first, errors and all)
            if self.failed:
                wire.error(message if isinstance(message, dict) else {}, self.failed)
            else:
                self.pending.append(line)
                self._load()
            return
        if response is not None:
            wire.send(response)

    def _load(self) -> None:
        """Start importing the SDK server in a background thread (once)."""
        if self.loading:
            return
        self.loading = True
        if self.mode == "front":
            self.events.put(("sdk", RuntimeError("not loaded (NEXUS_MCP_FRONT=front)")))
            return
        threading.Thread(target=self._import, name="nexus-mcp-sdk", daemon=True).start()

    def _import(self) -> None:
        try:
            from . import mcp_server

            self.events.put(("sdk", mcp_server.make_server(self.ws, self.agent, self.tools)))
        except BaseException as err:  # any failure leaves the front serving alone
            self.events.put(("sdk", err))

    def _fail(self, why: str, wire: Wire) -> None:
        self.failed = f"nexus mcp: the MCP SDK could not be loaded ({why}); only tools are served"
        sys.stderr.write(self.failed + "\n")
        for line in self.pending:
            try:
                message = mcp_json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                wire.error(message, self.failed)
        self.pending = []

    def _hand_over(self, server: Any, wire: Wire) -> int:
        from . import mcp_server  # loaded by now (it made ``server``)

        handover_id = f"nexus-front-initialize-{os.urandom(6).hex()}"
        replay: list[str] = []
        if self.front.modern is not None:  # the era the session opened in: a discover, its answer swallowed
            params = {"_meta": self.front.modern["params"]["_meta"]}
            replay.append(
                mcp_json.dumps(
                    {"jsonrpc": "2.0", "id": handover_id, "method": "server/discover", "params": params}
                )
            )
            replay += [mcp_json.dumps(m) for m in self.front.listening]  # the SDK's acks swallowed
        elif self.front.initialize is not None:
            replay.append(mcp_json.dumps({**self.front.initialize, "id": handover_id}))
            if self.front.initialized:
                replay.append(mcp_json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        replay += [line.decode("utf-8", "replace") for line in self.pending]
        self.pending = []
        outstanding = Outstanding()
        stdin, feed = mcp_server.pipe_reader()
        threading.Thread(
            target=self._feed, args=(feed, replay, outstanding), name="nexus-mcp-feed", daemon=True
        ).start()
        output = Output(
            wire, handover_id, outstanding, {mcp_json.dumps(m["id"]) for m in self.front.listening}
        )
        with stdin:
            mcp_server.serve_streams(server, stdin, mcp_server.LineSink(output.line))
        return 0

    def _feed(self, fd: int, replay: list[str], outstanding: Outstanding) -> None:
        """The SDK's stdin after the hand-over: the replayed lines, then the rest of the process's;
        at EOF, held open until what the SDK was handed is answered."""
        with os.fdopen(fd, "wb") as pipe:
            try:
                for line in replay:
                    outstanding.sent(line)
                    pipe.write(line.rstrip("\n").encode("utf-8") + b"\n")
                pipe.flush()
                while True:
                    kind, item = self.events.get()
                    if kind == "eof":
                        outstanding.drained()
                        return
                    if kind == "line":
                        outstanding.sent(item.decode("utf-8", "replace"))
                        pipe.write(item if item.endswith(b"\n") else item + b"\n")
                        pipe.flush()
            except BrokenPipeError:  # the SDK stopped reading: nothing more to hand it
                return


class Outstanding:
    """The requests handed to the SDK and not answered yet. The SDK's transport drops what is in
    flight when stdin closes, so at EOF its stdin is held open until they are answered (or
    cancelled), for at most ``limit`` seconds: no request kept for the SDK is lost."""

    def __init__(self, limit: float = 60.0) -> None:
        self.ids: set[str] = set()
        self.limit = limit

    @staticmethod
    def _parse(line: str) -> dict[str, Any]:
        try:
            message = mcp_json.loads(line)
        except ValueError:
            return {}
        return message if isinstance(message, dict) else {}

    def sent(self, line: str) -> None:
        message = self._parse(line)
        if "method" in message and "id" in message and message["method"] != LISTEN:
            self.ids.add(mcp_json.dumps(message["id"]))  # (a listen stream is answered only when it ends)
        elif message.get("method") == "notifications/cancelled" and isinstance(message.get("params"), dict):
            self.ids.discard(mcp_json.dumps(message["params"].get("requestId")))

    def answered(self, line: str) -> None:
        message = self._parse(line)
        if "id" in message and "method" not in message:
            self.ids.discard(mcp_json.dumps(message["id"]))

    def drained(self) -> None:
        deadline = time.monotonic() + self.limit
        while self.ids and time.monotonic() < deadline:
            time.sleep(0.01)


class Output:
    """The SDK's stdout after the hand-over: whole lines to the wire, less the answer to the
    replayed opening request and the SDK's second ack of a listen stream the front acknowledged."""

    def __init__(self, wire: Wire, handover_id: str, outstanding: Outstanding, acked: set[str]) -> None:
        self.wire, self.handover_id, self.outstanding = wire, handover_id, outstanding
        self.acked = acked  # listen streams the front acknowledged: the SDK's own ack is swallowed, once

    def line(self, line: str) -> None:
        if line and not self._swallowed(line):
            self.wire.line(line)
        self.outstanding.answered(line)

    def _swallowed(self, line: str) -> bool:
        if self.acked and LISTEN_ACK in line:
            message = mcp_json.loads(line)
            if message.get("method") == LISTEN_ACK:
                stream = mcp_json.dumps(next(iter(message.get("params", {}).get("_meta", {}).values()), None))
                if stream in self.acked:
                    self.acked.discard(stream)
                    return True
        if self.handover_id not in line:
            return False
        message = mcp_json.loads(line)
        if message.get("id") != self.handover_id:
            return False
        if "error" in message:
            sys.stderr.write(f"nexus mcp: the SDK refused the replayed opening request: {message['error']}\n")
        return True


def _exit_when_idle() -> None:
    CALLS.wait_idle(EXIT_WAIT_SECONDS)
    os._exit(0)


def _interrupted(signum: int, frame: object) -> None:
    """SIGINT (what a runtime sends first when it closes): exit as soon as no tool call is running.
    The SDK's loop would otherwise wait on its stdin reader thread, and the runtime on us."""
    threading.Thread(target=_exit_when_idle, name="nexus-mcp-exit", daemon=True).start()


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
    return _serve(Session(ws, agent, tools, mode))


def start(begun: Start, argv: Sequence[str]) -> int:
    """``nexus mcp`` started by :func:`mcp_start.read` (the program's entry point): serve stdio at
    once; the workspace is resolved by the library after the opening answers (:func:`workspace`)."""
    _signal.signal(_signal.SIGINT, _interrupted)
    session = Session(lambda: workspace(begun), begun.agent, begun.tools, begun.mode)
    try:
        code = _serve(session)
        session.ws  # noqa: B018 (a session that ended first still has its settings checked, warned about)
        return code
    except Exception as err:  # what the CLI would have refused before serving: said as it says it
        from ..errors import NexusError

        if not isinstance(err, NexusError):
            raise
        sys.stderr.write(f"nexus: error: {err}\n")
        return err.exit_code


def workspace(begun: Start) -> Workspace:
    """The workspace ``nexus mcp`` acts in, as the CLI resolves it (``invocation.workspace``: every
    setting, a warning for a misspelt ``NEXUS_*`` variable), the agent and tool set checked again."""
    import argparse

    from ..variables import unknown
    from . import invocation, mcp_tools

    for warning in unknown(os.environ):
        sys.stderr.write(f"nexus: {warning}\n")
    ws: Workspace = invocation.workspace(argparse.Namespace(vault=begun.vault_given, tools=begun.tools_given))
    mcp_tools.check_agent(ws, begun.agent, ws.settings.mcp_tools)
    if ws.settings.mcp_tools != begun.tools:  # nexus.md changed as the server started: serve what was listed
        ws = ws.with_settings(mcp_tools=begun.tools)
    return ws


def _serve(session: Session) -> int:
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
        return session.run(source, Wire(wire_fd))
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 0)
        for fd in (*saved, wire_fd):
            os.close(fd)
