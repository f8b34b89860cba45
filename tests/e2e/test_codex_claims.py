"""Claims, end to end in Codex 0.171.0: the real program, wired by `nexus setup codex` alone, talking to
a scripted OpenAI Responses server on 127.0.0.1. Codex edits files with its `apply_patch` tool (a
freeform tool: the model sends the patch itself); another agent's exclusive claim stops the patch (the
PreToolUse hook's deny) and the model is told why; once the claim is released the same patch goes
through."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from .conftest import wired
from .model_openai import OpenAIModel, Reply, Text
from .runtime_codex import codex_bin, environ, run_exec
from .scripted import send, sse

pytestmark = pytest.mark.e2e
# A model Codex knows to edit with the freeform `apply_patch` tool (the scripted server answers for it)
PATCHING_MODEL = "gpt-5.5"
_ids = itertools.count(1)


@dataclass(frozen=True)
class Patch:
    """The model calls Codex's freeform ``apply_patch`` tool with this patch."""

    patch: str


class PatchingModel(OpenAIModel):
    """The scripted Responses server, also answering with a ``custom_tool_call`` (a :class:`Patch`)."""

    def respond(self, handler: BaseHTTPRequestHandler, path: str, body: Any, reply: Any) -> None:
        if not isinstance(reply, Patch):
            super().respond(handler, path, body, reply)
            return
        n = next(_ids)
        item = {
            "type": "custom_tool_call",
            "id": f"patch_{n}",
            "call_id": f"patch_call_{n}",
            "name": "apply_patch",
            "input": reply.patch,
            "status": "completed",
        }
        usage = {
            "input_tokens": self.usage_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": self.usage_tokens + 5,
        }
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"response": {"id": f"presp_{n}", "status": "in_progress", "output": []}}),
            ("response.output_item.added", {"output_index": 0, "item": {**item, "input": ""}}),
            ("response.output_item.done", {"output_index": 0, "item": item}),
            ("response.completed", {"response": {"id": f"presp_{n}", "status": "completed", "usage": usage}}),
        ]
        send(handler, 200, "text/event-stream", sse([(k, {"type": k, **d}) for k, d in events]))


def _patch_output(model: OpenAIModel) -> str:
    """What Codex told the model its last ``apply_patch`` call did."""
    items = model.turns()[-1].body.get("input", [])
    return str(next(i["output"] for i in reversed(items) if i.get("type") == "custom_tool_call_output"))


def test_another_agents_claim_stops_codexs_patch_until_released(env: Env, tmp_path: Path) -> None:
    home, project, _ = wired(env, tmp_path, codex_bin(), "codex", "project")
    (project / "src").mkdir()
    target = project / "src" / "parser.py"
    target.write_text("ella's parser\n")
    held = env.run(
        "claim", "src/**", "--agent", "ella", "--reason", "rewriting the parser", "--ttl", "1h",
        "--project", str(project), "--json",
    ).json()  # fmt: skip
    patch = (
        "*** Begin Patch\n*** Update File: src/parser.py\n@@\n-ella's parser\n+lyra's parser\n*** End Patch\n"
    )
    script: list[Any] = [Patch(patch), Text("ella holds it; I will ask."), Patch(patch), Text("done")]
    replies: list[Reply] = script
    with PatchingModel(script=replies) as model:
        denied = run_exec(model, project, environ(home), "Rewrite src/parser.py.", slug=PATCHING_MODEL)
        assert denied.returncode == 0, denied.stderr
        told = _patch_output(model)
        assert target.read_text() == "ella's parser\n"  # the patch never ran
        assert told.startswith("Command blocked by PreToolUse hook: nexus: src/parser.py")
        assert "held by ella" in told and "rewriting the parser" in told and held["id"] in told

        env.run("claim", "release", held["id"], "--agent", "ella")
        done = run_exec(model, project, environ(home), "Rewrite src/parser.py now.", slug=PATCHING_MODEL)
        assert done.returncode == 0, done.stderr
        assert "Success" in _patch_output(model)
    assert target.read_text() == "lyra's parser\n"
