"""``nexus mcp``'s session after the opening (``mcp_front.py`` answers what arrives at once, in its
own thread, before this module and its threads are imported): a reader thread, the front's answers,
the SDK server loaded in the background when a request needs it, and the hand-over of the stream to
the SDK server (``mcp_server.serve_streams``).
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from . import mcp_json
from .mcp_answers import LISTEN, LISTEN_ACK
from .mcp_protocol import Defer

if TYPE_CHECKING:
    from ..workspace import Workspace
    from .mcp_answers import Answers
    from .mcp_front import Opened, Wire

IDLE_SECONDS = 0.05  # ``auto``: the stream idle this long, the SDK is loaded
# the opening answered and no request for this long: resolve the workspace (~30 ms of CPU for its
# imports). A runtime runs its start-up hooks and sends its first model request right after the
# opening; on a busy machine those imports would compete with them for the CPU.
QUIET_SECONDS = 1.0


class Session:
    """One stdio session: the reader thread, the front, the SDK's loading and the hand-over.

    A workspace the front was given as what resolves it (``mcp_front.start``) is resolved once the
    stream has been quiet for ``QUIET_SECONDS``, or first thing for a request that needs it (a tool
    call, the SDK)."""

    def __init__(self, front: Answers, mode: str) -> None:
        self.mode, self.front = mode, front
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.pending: list[bytes] = []  # lines kept for the SDK, in order
        self.loading = False
        self.failed = ""  # why the SDK could not be loaded

    @property
    def ws(self) -> Workspace:
        return self.front.ws

    def run(self, source: int, wire: Wire, opened: Opened) -> int:
        """Serve what the opening left (``opened``), then the rest of ``source``, until EOF or the
        hand-over ends."""
        if opened.deferred:
            self._keep(opened.deferred, wire)
        for line in opened.lines:
            self.events.put(("line", line))
        if opened.ended:
            self.events.put(("eof", None))
        else:
            threading.Thread(
                target=self._read, args=(source, opened.partial), name="nexus-mcp-stdin", daemon=True
            ).start()
        while True:
            idle = self.mode == "auto" and not self.loading
            timeout = QUIET_SECONDS if not self.front.resolved else IDLE_SECONDS if idle else None
            try:
                kind, item = self.events.get(timeout=timeout)
            except queue.Empty:
                if not self.front.resolved:
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

    def _read(self, source: int, partial: bytes) -> None:
        try:
            with os.fdopen(source, "rb", closefd=False) as stream:
                for line in stream:
                    self.events.put(("line", partial + line))
                    partial = b""
        except OSError:
            pass
        if partial:
            self.events.put(("line", partial))
        self.events.put(("eof", None))

    def _line(self, line: bytes, wire: Wire) -> None:
        try:
            message = mcp_json.loads(line)
        except ValueError:
            message = None
        try:
            response = self.front.take(message)
        except Defer:
            self._keep(line, wire, message)
            return
        if response is not None:
            wire.send(response)

    def _keep(self, line: bytes, wire: Wire, message: Any = None) -> None:
        """A line the front left to the SDK: kept for it (its loading started), or, when it could not
        be loaded, a request's error."""
        self.ws  # noqa: B018 (the SDK is made for the workspace: resolved first, errors and all)
        if self.failed:
            if message is None:
                try:
                    message = mcp_json.loads(line)
                except ValueError:
                    message = None
            wire.error(message if isinstance(message, dict) else {}, self.failed)
        else:
            self.pending.append(line)
            self._load()

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

            self.events.put(("sdk", mcp_server.make_server(self.ws, self.front.agent, self.front.tools)))
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
