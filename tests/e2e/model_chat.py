"""The scripted model as an OpenAI-compatible chat completions API, for the real runtimes that speak
it (Hermes Agent, OpenClaw): ``GET /v1/models`` lists one model; ``POST /v1/chat/completions`` answers
from the script, streaming (SSE ``chat.completion.chunk``s ending in ``data: [DONE]``) or not, as asked.

A reply is a text, or tool calls (several at once): ``Reply(tools=[("nexus_log_append", {...})])``.
A reply may be kept for a request a rule accepts (``when``), so a runtime's side requests (a title, a
summary for compression) get their answer without taking the session's next reply; a reply may report
a large prompt (``prompt_tokens``: the runtime compacts). When the script is used up the answer is
``"ok"``. Every request is recorded (:class:`Request` reads its messages).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from . import scripted
from .scripted import Model, send

MODEL = "scripted-model"


@dataclass
class Reply:
    text: str = ""
    tools: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    when: Callable[[dict[str, Any]], bool] | None = None  # only for a request this accepts
    prompt_tokens: int | None = None  # the usage reported (a large one makes a runtime compact)


@dataclass
class Request(scripted.Request):
    """One request, read as chat messages."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        body = self.body if isinstance(self.body, dict) else {}
        return list(body.get("messages") or [])

    def text(self, role: str | None = None) -> str:
        """Every message's text (of ``role`` only, when given), joined."""
        out = []
        for m in self.messages:
            if role and m.get("role") != role:
                continue
            out.append(_content(m.get("content")))
        return "\n".join(out)

    @property
    def last_user(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return _content(users[-1].get("content")) if users else ""

    @property
    def tool_names(self) -> list[str]:
        body = self.body if isinstance(self.body, dict) else {}
        return [str((t.get("function") or {}).get("name")) for t in body.get("tools") or []]


def _content(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


class ModelServer(Model[Reply]):
    """``with ModelServer() as model:``; the runtime's base URL is :attr:`base_url`; ``model.add(...)``
    queues replies (a string is a text)."""

    aside = Reply(text="ok")
    done = Reply(text="ok")
    request_type = Request

    def __init__(self) -> None:
        super().__init__()
        self._ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def add(self, *replies: Reply | str) -> None:
        super().add(*(r if isinstance(r, Reply) else Reply(text=r) for r in replies))

    def chats(self) -> list[Request]:
        """The chat completions asked (the turns: each took a reply of the script, or ``"ok"``)."""
        return [r for r in self.turns() if isinstance(r, Request)]

    def scripted(self, path: str, body: Any) -> bool:
        return path.rstrip("/").endswith("/chat/completions") and isinstance(body, dict)

    def choose(self, body: Any) -> Reply:
        for i, r in enumerate(self.script):  # a reply waiting for this kind of request first
            if r.when is not None and r.when(body):
                return self.script.pop(i)
        for i, r in enumerate(self.script):  # else the session's next reply
            if r.when is None:
                return self.script.pop(i)
        return self.done

    def other(self, handler: BaseHTTPRequestHandler, method: str, path: str) -> bool:
        if method == "GET" and path.rstrip("/").endswith("/models"):
            send(handler, 200, "application/json", json.dumps({"object": "list", "data": [_model()]}))
        elif method == "GET" and "/models/" in path:
            send(handler, 200, "application/json", json.dumps(_model()))
        else:
            return False
        return True

    def respond(self, handler: BaseHTTPRequestHandler, path: str, body: Any, reply: Reply) -> None:
        if not self.scripted(path, body):
            send(handler, 404, "application/json", json.dumps({"error": {"message": f"no route {path}"}}))
        elif body.get("stream"):
            chunks = "".join(f"data: {json.dumps(c)}\n\n" for c in self._chunks(reply, body))
            send(handler, 200, "text/event-stream", chunks + "data: [DONE]\n\n")
        else:
            send(handler, 200, "application/json", json.dumps(self._completion(reply, body)))

    # ------------------------------------------------------------------ answers
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


def _model() -> dict[str, Any]:
    return {
        "id": MODEL,
        "object": "model",
        "created": 0,
        "owned_by": "nexus-tests",
        "context_length": 200_000,
    }
