"""A scripted model server on 127.0.0.1: what every end-to-end test puts where a model provider would
be. One real HTTP server (an ephemeral port, a thread), a script of replies given in order, and every
request it got recorded, so a test can check what reached the model.

A provider's wire format is a subclass: ``model_anthropic.AnthropicModel`` (Anthropic Messages,
streamed: Claude Code), ``model_openai.OpenAIModel`` (OpenAI Responses, streamed: Codex; and chat
completions: opencode), ``model_gemini.GeminiModel`` (the Gemini API: Gemini CLI). The subclass says
which requests are the agent's own turns (:meth:`Model.scripted`: they take the next reply of the
script) and how a reply is written. Requests a runtime makes on the side (a title, a quota probe, a
token count) get :attr:`Model.aside` and are recorded too.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Self, TypeVar


@dataclass(frozen=True)
class Text:
    """A reply in words."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """A reply that calls one tool (``name`` as the runtime lists it, e.g. ``mcp__nexus__log_append``);
    ``namespace`` where the provider names a tool's namespace apart (Codex's MCP tools: ``mcp__nexus``)."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    namespace: str | None = None


Reply = Text | ToolUse
R = TypeVar("R")  # what a script holds: ``Reply``, or a provider's own (``model_chat.Reply``)


@dataclass
class Request:
    """One request the server got: when, where, and its JSON body."""

    at: float  # time.monotonic() when it arrived
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    scripted: bool  # it took a reply from the script

    def text(self) -> str:
        """Everything in the body as one string (to look for a word wherever the runtime put it)."""
        return json.dumps(self.body, ensure_ascii=False)


def send(handler: BaseHTTPRequestHandler, status: int, kind: str, data: str | bytes) -> None:
    """One whole answer: status, ``Content-Type`` ``kind``, its length, the bytes."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    if kind == "text/event-stream":
        handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)
    handler.wfile.flush()


def sse(pairs: list[tuple[str, dict[str, Any]]]) -> str:
    """Server-sent events, each named (``event: NAME``) with its JSON ``data``."""
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in pairs)


class Model(Generic[R]):
    """The server. ``with AnthropicModel([Text("hi")]) as model:`` then point the runtime at
    ``model.url``; ``model.requests`` is what it got (``model.turns()``: the agent's turns). A scripted
    request with the script used up gets :attr:`done` (a runtime's last turn may take one more request
    than the test expects); a subclass says both :attr:`aside` and :attr:`done`."""

    aside: R  # what a request on the side gets
    done: R  # what a turn gets once the script is used up
    request_type: type[Request] = Request  # how a request is recorded (a subclass may read it more)

    def __init__(self, script: list[R] | None = None) -> None:
        self.script: list[R] = list(script or [])
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="scripted-model", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def add(self, *replies: R) -> None:
        with self.lock:
            self.script.extend(replies)

    def turns(self) -> list[Request]:
        """The requests that took a reply from the script (the agent's own turns)."""
        with self.lock:
            return [r for r in self.requests if r.scripted]

    # ---------------------------------------------------------------- what a subclass says

    def scripted(self, path: str, body: Any) -> bool:
        """Whether this request is one of the agent's turns (takes the next reply)."""
        raise NotImplementedError

    def respond(self, handler: BaseHTTPRequestHandler, path: str, body: Any, reply: R) -> None:
        """Write ``reply`` in the provider's format."""
        raise NotImplementedError

    def choose(self, body: Any) -> R:
        """The reply a turn takes (called under the lock): the script's next, else :attr:`done`."""
        return self.script.pop(0) if self.script else self.done

    def other(self, handler: BaseHTTPRequestHandler, method: str, path: str) -> bool:
        """Answer a request that is no model call (a probe, a listing); False: 404."""
        return False

    # ---------------------------------------------------------------- the HTTP side

    def _take(self, method: str, path: str, headers: dict[str, str], body: Any) -> R | None:
        scripted = method == "POST" and self.scripted(path, body)
        with self.lock:
            self.requests.append(self.request_type(time.monotonic(), method, path, headers, body, scripted))
            if not scripted:
                return self.aside if method == "POST" else None
            return self.choose(body)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                path = self.path.split("?", 1)[0]
                reply = model._take(method, path, dict(self.headers.items()), body)
                if reply is not None:
                    model.respond(self, path, body, reply)
                elif not model.other(self, method, path):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def do_POST(self) -> None:
                self._serve("POST")

            def do_GET(self) -> None:
                self._serve("GET")

            def do_HEAD(self) -> None:
                self._serve("HEAD")

        return Handler
