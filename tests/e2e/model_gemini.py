"""A scripted model on 127.0.0.1 that speaks the Gemini API, for driving Gemini CLI.

``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`` answers in server-sent events (what Gemini
CLI uses for a turn), ``:generateContent`` in one JSON answer (its side requests: a compression
summary, the next-speaker check), ``:countTokens`` with a count. Each model request takes the next reply
of the script (text, or a function call); when the script is used up the model says ``done``. Every
request is recorded, so a test checks what really reached the model.

A real HTTP server on an ephemeral port, in a thread of the test process.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .model_openai import Chooser, Reply, Request, Text


@dataclass
class GeminiModel:
    script: list[Reply] = field(default_factory=list)
    chooser: Chooser | None = None
    usage_tokens: int = 50
    requests: list[Request] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def model_requests(self) -> list[Request]:
        return [r for r in self.requests if ":streamGenerateContent" in r.path]

    def __enter__(self) -> GeminiModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                model._record(self, {})
                self._send(200, "application/json", json.dumps({"models": []}))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {"raw": raw.decode("utf-8", "replace")}
                model._record(self, body)
                path = self.path.split("?")[0]
                if path.endswith(":countTokens"):
                    self._send(200, "application/json", json.dumps({"totalTokens": model.usage_tokens}))
                elif path.endswith(":streamGenerateContent"):
                    chunk = model._answer(model._reply(body))
                    self._send(200, "text/event-stream", f"data: {json.dumps(chunk)}\r\n\r\n")
                elif path.endswith(":generateContent"):
                    self._send(200, "application/json", json.dumps(model._answer(model._side(body))))
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

    def _side(self, body: dict[str, Any]) -> Reply:
        """A side request (not a turn): a chooser may answer it; else a short summary, never the script."""
        if self.chooser is not None:
            chosen = self.chooser(body)
            if chosen is not None:
                return chosen
        return Text('{"next_speaker": "user", "reasoning": "done"}')

    def _answer(self, reply: Reply) -> dict[str, Any]:
        if isinstance(reply, Text):
            part: dict[str, Any] = {"text": reply.text}
        else:
            part = {"functionCall": {"name": reply.name, "args": reply.arguments}}
        return {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": self.usage_tokens,
                "candidatesTokenCount": 5,
                "totalTokenCount": self.usage_tokens + 5,
            },
            "modelVersion": "gemini-scripted",
        }
