"""A scripted model behind an OpenAI-compatible chat completions API, on 127.0.0.1, for the real
runtimes that speak it (Hermes Agent, OpenClaw).

``GET /v1/models`` lists one model; ``POST /v1/chat/completions`` answers from a script of replies,
streaming (SSE ``chat.completion.chunk``s ending in ``data: [DONE]``) or not, as asked. A reply is a
text, or tool calls: ``Reply(tools=[("nexus_log_append", {...})])``. A reply may be chosen by a rule on
the request (``when``), so a runtime's side requests (a title, a summary for compression) get an
answer without taking the session's next reply. Every request is recorded whole: a test checks what
reached the model. When the script is used up the server answers ``"ok"``.
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

MODEL = "scripted-model"


@dataclass
class Reply:
    text: str = ""
    tools: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    when: Callable[[dict[str, Any]], bool] | None = None  # only for a request this accepts
    prompt_tokens: int | None = None  # the usage reported (a large one makes a runtime compact)


@dataclass
class Request:
    """One request the model received: its body, and when (monotonic seconds)."""

    body: dict[str, Any]
    at: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    def text(self, role: str | None = None) -> str:
        """Every message's text (of ``role`` only, when given), joined."""
        out = []
        for m in self.messages:
            if role and m.get("role") != role:
                continue
            content = m.get("content")
            if isinstance(content, list):
                content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            out.append(str(content or ""))
        return "\n".join(out)

    @property
    def last_user(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        if not users:
            return ""
        content = users[-1].get("content")
        if isinstance(content, list):
            return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return str(content or "")

    @property
    def tool_names(self) -> list[str]:
        return [str((t.get("function") or {}).get("name")) for t in self.body.get("tools") or []]


class ModelServer:
    """The server: ``with ModelServer() as model: ... model.url``; ``model.script(...)`` queues replies."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.listed = 0  # GET /v1/models
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    with server._lock:
                        server.listed += 1
                    self._json({"object": "list", "data": [server._model()]})
                elif "/models/" in self.path:
                    self._json(server._model())
                else:
                    self._json({"error": {"message": f"no route {self.path}"}}, 404)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._json({"error": {"message": "bad json"}}, 400)
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json({"error": {"message": f"no route {self.path}"}}, 404)
                    return
                request = Request(body, time.monotonic())
                reply = server._take(request)
                if body.get("stream"):
                    self._stream(server._chunks(reply, body))
                else:
                    self._json(server._completion(reply, body))

            def _json(self, data: Any, status: int = 200) -> None:
                out = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def _stream(self, chunks: Iterator[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # ------------------------------------------------------------------ use
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def script(self, *replies: Reply | str) -> None:
        with self._lock:
            self._script.extend(r if isinstance(r, Reply) else Reply(text=r) for r in replies)

    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ answers
    def _model(self) -> dict[str, Any]:
        return {
            "id": MODEL,
            "object": "model",
            "created": 0,
            "owned_by": "nexus-tests",
            "context_length": 200_000,
        }

    def _take(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            for i, r in enumerate(self._script):  # a reply waiting for this kind of request first
                if r.when is not None and r.when(request.body):
                    return self._script.pop(i)
            for i, r in enumerate(self._script):  # else the session's next reply
                if r.when is None:
                    return self._script.pop(i)
        return Reply(text="ok")

    def _tool_calls(self, reply: Reply) -> list[dict[str, Any]]:
        return [
            {
                "index": i,
                "id": f"call_{next(self._ids)}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(reply.tools)
        ]

    def _usage(self, body: dict[str, Any], reply: Reply) -> dict[str, int]:
        prompt = reply.prompt_tokens or len(json.dumps(body.get("messages") or [])) // 4
        return {"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": prompt + 10}

    def _completion(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        calls = self._tool_calls(reply)
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or (None if calls else "")}
        if calls:
            message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": self._usage(body, reply),
        }

    def _chunks(self, reply: Reply, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        cid, created, model = f"chatcmpl-{next(self._ids)}", int(time.time()), body.get("model") or MODEL

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
            return {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }

        yield chunk({"role": "assistant", "content": ""})
        if reply.text:
            yield chunk({"content": reply.text})
        calls = self._tool_calls(reply)
        for c in calls:
            yield chunk({"tool_calls": [c]})
        yield chunk({}, "tool_calls" if calls else "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            yield {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": self._usage(body, reply),
            }
