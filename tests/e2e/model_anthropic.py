"""The scripted model as Anthropic's Messages API with streaming (what Claude Code calls with
``ANTHROPIC_BASE_URL`` pointing here): ``POST /v1/messages`` answered as server-sent events
(message_start, content_block_start/delta/stop, message_delta, message_stop); ``count_tokens``
answered with a count.

The agent's turns are the requests that carry the agent's tools (``tools`` non-empty); a runtime's
side requests (a session title, a quota probe) carry none and get a stock answer.
"""

from __future__ import annotations

import itertools
import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from .scripted import Model, Reply, Request, Text, ToolUse, send, sse

__all__ = ["AnthropicModel", "Text", "ToolUse", "system_text", "user_text"]

_ids = itertools.count(1)


class AnthropicModel(Model[Reply]):
    aside = Text("ok")
    done = Text("Done.")

    def scripted(self, path: str, body: Any) -> bool:
        return (
            path.endswith("/messages")
            and isinstance(body, dict)
            and bool(body.get("tools"))
            and not path.endswith("/count_tokens")
        )

    def respond(self, handler: BaseHTTPRequestHandler, path: str, body: Any, reply: Reply) -> None:
        if path.endswith("/count_tokens"):
            send(handler, 200, "application/json", json.dumps({"input_tokens": len(json.dumps(body)) // 4}))
            return
        model = body.get("model", "claude") if isinstance(body, dict) else "claude"
        n = next(_ids)
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": f"msg_{n:04d}",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 100, "output_tokens": 1},
                    },
                },
            )
        ]
        if isinstance(reply, ToolUse):
            block = {"type": "tool_use", "id": f"toolu_{n:04d}", "name": reply.name, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(reply.input)}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": reply.text}
            stop = "end_turn"
        events += [
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 10},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        send(handler, 200, "text/event-stream", sse(events))


def system_text(request: Request) -> str:
    """The system prompt of a Messages request, as one string."""
    system = request.body.get("system", "") if isinstance(request.body, dict) else ""
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return str(system)


def user_text(request: Request, which: int = -1) -> str:
    """The text of one user message of a Messages request (default: the last), blocks joined."""
    messages = [m for m in request.body.get("messages", []) if m.get("role") == "user"]
    if not messages:
        return ""
    content = messages[which].get("content", "")
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, dict):
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                parts.append(json.dumps(block.get("content"), ensure_ascii=False))
    return "\n".join(parts)
