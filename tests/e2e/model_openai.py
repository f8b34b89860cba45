"""The scripted model as OpenAI's streaming APIs: ``POST …/responses`` answered in the Responses API's
server-sent events (what Codex speaks), ``POST …/chat/completions`` in chat-completion chunks or one
JSON answer, as asked (what OpenAI-compatible clients such as opencode speak); ``GET`` (a listing of
models) answered with an empty list.

Every model request is one of the agent's turns; a runtime that sends side requests to the same path
says which are turns in a subclass (``runtime_opencode.OpencodeModel``: the requests with tools).
"""

from __future__ import annotations

import itertools
import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from .scripted import Model, Reply, Request, Text, ToolUse, send, sse

__all__ = ["OpenAIModel", "Reply", "Request", "Text", "ToolUse"]

_ids = itertools.count(1)


class OpenAIModel(Model[Reply]):
    """``with OpenAIModel([ToolUse("log_append", {...}, "mcp__nexus"), Text("done")]) as model:``; the
    runtime's base URL is :attr:`base_url`."""

    aside = Text("ok")
    done = Text("done")
    usage_tokens = 50  # what each reply says it used

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def scripted(self, path: str, body: Any) -> bool:
        return path.endswith(("/responses", "/chat/completions"))

    def other(self, handler: BaseHTTPRequestHandler, method: str, path: str) -> bool:
        if method != "GET":
            return False
        send(handler, 200, "application/json", json.dumps({"object": "list", "data": [], "models": []}))
        return True

    def respond(self, handler: BaseHTTPRequestHandler, path: str, body: Any, reply: Reply) -> None:
        if path.endswith("/responses"):
            send(handler, 200, "text/event-stream", self._responses(reply))
        elif path.endswith("/chat/completions"):
            stream = isinstance(body, dict) and bool(body.get("stream"))
            kind = "text/event-stream" if stream else "application/json"
            send(handler, 200, kind, self._chat(reply, stream))
        else:
            send(handler, 404, "application/json", json.dumps({"error": {"message": "not here"}}))

    def _responses(self, reply: Reply) -> str:
        n = next(_ids)
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
            args = json.dumps(reply.input)
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
        return sse([(name, {"type": name, **data}) for name, data in events])

    def _chat(self, reply: Reply, stream: bool) -> str:
        n = next(_ids)
        base = {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "scripted",
        }
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
                "function": {"name": reply.name, "arguments": json.dumps(reply.input)},
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
