"""A scripted model on 127.0.0.1 that speaks OpenAI's streaming APIs, for driving real runtimes.

``POST …/responses`` answers in the Responses API's server-sent events (what Codex speaks);
``POST …/chat/completions`` answers in chat-completion chunks (what OpenAI-compatible clients such
as opencode speak). Each model request takes the next reply of the script (text, or a tool call); when
the script is used up the model says ``done``. Every request is recorded (path, headers, JSON body) so
a test checks what really reached the model: the brief in the instructions, the tools offered, the
output of a tool call.

A real HTTP server on an ephemeral port, in a thread of the test process.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Text:
    """The model answers with this text."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """The model calls a tool: ``name`` with ``arguments``; ``namespace`` for Codex's MCP namespace
    tools (``mcp__nexus``), where the call names the namespace and the tool apart."""

    name: str
    arguments: dict[str, Any]
    namespace: str | None = None


Reply = Text | ToolCall
Chooser = Callable[[dict[str, Any]], Reply | None]  # a request's body -> a reply (None: the script's next)


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = 0.0  # time.monotonic() when it arrived

    @property
    def text(self) -> str:
        """Everything the request carries, as one string (to look for a word in)."""
        return json.dumps(self.body, ensure_ascii=False)


@dataclass
class ScriptedModel:
    """The server: ``script`` is consumed one reply per model request; ``chooser`` may answer first
    (e.g. a compaction's summary request). Use as a context manager."""

    script: list[Reply] = field(default_factory=list)
    chooser: Chooser | None = None
    usage_tokens: int = 50  # what each reply says it used (high: the runtime compacts)
    requests: list[Request] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def model_requests(self) -> list[Request]:
        return [r for r in self.requests if r.path.endswith(("/responses", "/chat/completions"))]

    def __enter__(self) -> ScriptedModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                model._record(self, {})
                self._send(200, "application/json", json.dumps({"object": "list", "data": [], "models": []}))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {"raw": raw.decode("utf-8", "replace")}
                model._record(self, body)
                path = self.path.split("?")[0]
                if path.endswith("/responses"):
                    self._send(200, "text/event-stream", model._responses(model._reply(body)))
                elif path.endswith("/chat/completions"):
                    stream = bool(body.get("stream"))
                    kind = "text/event-stream" if stream else "application/json"
                    self._send(200, kind, model._chat(model._reply(body), stream))
                else:
                    self._send(404, "application/json", json.dumps({"error": {"message": "not here"}}))

            def _send(self, status: int, kind: str, text: str) -> None:
                data = text.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # ------------------------------------------------------------------ what the model says

    def _record(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(Request(handler.path, dict(handler.headers.items()), body, time.monotonic()))

    def _reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self.chooser is not None:
                chosen = self.chooser(body)
                if chosen is not None:
                    return chosen
            return self.script.pop(0) if self.script else Text("done")

    def _responses(self, reply: Reply) -> str:
        n = next(self._ids)
        rid, iid = f"resp_{n}", f"item_{n}"
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"response": {"id": rid, "status": "in_progress", "output": []}})
        ]
        if isinstance(reply, Text):
            item: dict[str, Any] = {
                "type": "message",
                "id": iid,
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
            empty = {**item, "status": "in_progress", "content": []}
            events += [
                ("response.output_item.added", {"output_index": 0, "item": empty}),
                (
                    "response.output_text.delta",
                    {"item_id": iid, "output_index": 0, "content_index": 0, "delta": reply.text},
                ),
                ("response.output_item.done", {"output_index": 0, "item": item}),
            ]
        else:
            args = json.dumps(reply.arguments)
            item = {
                "type": "function_call",
                "id": iid,
                "call_id": f"call_{n}",
                "name": reply.name,
                "arguments": args,
                "status": "completed",
            }
            if reply.namespace:
                item["namespace"] = reply.namespace
            events += [
                ("response.output_item.added", {"output_index": 0, "item": {**item, "arguments": ""}}),
                (
                    "response.function_call_arguments.delta",
                    {"item_id": iid, "output_index": 0, "delta": args},
                ),
                (
                    "response.function_call_arguments.done",
                    {"item_id": iid, "output_index": 0, "arguments": args},
                ),
                ("response.output_item.done", {"output_index": 0, "item": item}),
            ]
        usage = {
            "input_tokens": self.usage_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": self.usage_tokens + 5,
        }
        events.append(
            ("response.completed", {"response": {"id": rid, "status": "completed", "usage": usage}})
        )
        return "".join(
            f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n" for name, data in events
        )

    def _chat(self, reply: Reply, stream: bool) -> str:
        n = next(self._ids)
        cid = f"chatcmpl-{n}"
        base = {"id": cid, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "scripted"}
        usage = {
            "prompt_tokens": self.usage_tokens,
            "completion_tokens": 5,
            "total_tokens": self.usage_tokens + 5,
        }
        if isinstance(reply, Text):
            message: dict[str, Any] = {"role": "assistant", "content": reply.text}
            finish = "stop"
        else:
            call = {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": reply.name, "arguments": json.dumps(reply.arguments)},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        if not stream:
            return json.dumps(
                {
                    **base,
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                }
            )
        if isinstance(reply, Text):
            delta: dict[str, Any] = {"role": "assistant", "content": reply.text}
        else:
            delta = {"role": "assistant", "tool_calls": [{"index": 0, **message["tool_calls"][0]}]}
        chunks = [
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {**base, "choices": [], "usage": usage},
        ]
        return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
