"""The scripted model as the Gemini API (what Gemini CLI calls with ``GOOGLE_GEMINI_BASE_URL`` pointing
here): ``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`` answered in server-sent events (a
turn of the agent: the script's next reply), ``:generateContent`` in one JSON answer (its side
requests: a compression summary, the next-speaker check, answered with :attr:`GeminiModel.aside`, never
the script), ``:countTokens`` with a count; ``GET`` (a listing of models) with an empty list.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from .scripted import Model, Reply, Request, Text, ToolUse, send

__all__ = ["GeminiModel", "Reply", "Request", "Text", "ToolUse"]


class GeminiModel(Model[Reply]):
    done = Text("done")
    aside = Text('{"next_speaker": "user", "reasoning": "done"}')
    usage_tokens = 50  # what each reply says it used

    def scripted(self, path: str, body: Any) -> bool:
        return path.endswith(":streamGenerateContent")

    def other(self, handler: BaseHTTPRequestHandler, method: str, path: str) -> bool:
        if method != "GET":
            return False
        send(handler, 200, "application/json", json.dumps({"models": []}))
        return True

    def respond(self, handler: BaseHTTPRequestHandler, path: str, body: Any, reply: Reply) -> None:
        if path.endswith(":countTokens"):
            send(handler, 200, "application/json", json.dumps({"totalTokens": self.usage_tokens}))
        elif path.endswith(":streamGenerateContent"):
            send(handler, 200, "text/event-stream", f"data: {json.dumps(self._answer(reply))}\r\n\r\n")
        elif path.endswith(":generateContent"):
            send(handler, 200, "application/json", json.dumps(self._answer(reply)))
        else:
            send(handler, 404, "application/json", json.dumps({"error": {"message": "not here"}}))

    def _answer(self, reply: Reply) -> dict[str, Any]:
        if isinstance(reply, Text):
            part: dict[str, Any] = {"text": reply.text}
        else:
            part = {"functionCall": {"name": reply.name, "args": reply.input}}
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
