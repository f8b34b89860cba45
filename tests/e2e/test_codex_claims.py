"""Claims, end to end in Codex 0.171.0: the real program, wired by `nexus setup codex` alone, talking to
a scripted OpenAI Responses server on 127.0.0.1. Codex edits files with its `apply_patch` tool (a
freeform tool: the model sends the patch itself); another agent's exclusive claim stops the patch (the
PreToolUse hook's deny) and the model is told why; once the claim is released the same patch goes
through."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from .model_openai import Reply, ScriptedModel, Text
from .runtime_codex import environ, run_exec

pytestmark = pytest.mark.e2e
BIN = Path(sys.executable).parent
# A model Codex knows to edit with the freeform `apply_patch` tool (the scripted server answers for it)
PATCHING_MODEL = "gpt-5.5"


@dataclass(frozen=True)
class Patch:
    """The model calls Codex's freeform ``apply_patch`` tool with this patch."""

    patch: str


class PatchingModel(ScriptedModel):
    """The scripted Responses server, also answering with a ``custom_tool_call`` (a :class:`Patch`)."""

    def _responses(self, reply: Any) -> str:
        if not isinstance(reply, Patch):
            return super()._responses(reply)
        n = next(self._ids)
        item = {
            "type": "custom_tool_call",
            "id": f"item_{n}",
            "call_id": f"call_{n}",
            "name": "apply_patch",
            "input": reply.patch,
            "status": "completed",
        }
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"response": {"id": f"resp_{n}", "status": "in_progress", "output": []}}),
            ("response.output_item.added", {"output_index": 0, "item": {**item, "input": ""}}),
            ("response.output_item.done", {"output_index": 0, "item": item}),
            ("response.completed", {"response": {"id": f"resp_{n}", "status": "completed", "usage": usage}}),
        ]
        return "".join(f"event: {k}\ndata: {json.dumps({'type': k, **d})}\n\n" for k, d in events)


def _patch_output(model: ScriptedModel) -> str:
    """What Codex told the model its last ``apply_patch`` call did."""
    items = model.model_requests()[-1].body.get("input", [])
    return str(next(i["output"] for i in reversed(items) if i.get("type") == "custom_tool_call_output"))


def test_another_agents_claim_stops_codexs_patch_until_released(env: Env, tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    (project / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    target = project / "src" / "parser.py"
    target.write_text("ella's parser\n")
    setup_env = {**env.environ, "HOME": str(home)}
    wired = subprocess.run(
        [sys.executable, "-m", "nexus", "--vault", str(env.vault.root), "setup", "codex", "--agent", "lyra"],
        cwd=project,
        env=setup_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert wired.returncode == 0, wired.stderr
    held = env.run(
        "claim", "src/**", "--agent", "ella", "--reason", "rewriting the parser", "--ttl", "1h",
        "--project", str(project), "--json",
    ).json()  # fmt: skip
    patch = (
        "*** Begin Patch\n*** Update File: src/parser.py\n@@\n-ella's parser\n+lyra's parser\n*** End Patch\n"
    )
    script: list[Reply | Patch] = [
        Patch(patch),
        Text("ella holds it; I will ask."),
        Patch(patch),
        Text("done"),
    ]
    with PatchingModel(script=script) as model:  # type: ignore[arg-type]
        denied = run_exec(model, project, environ(home, BIN), "Rewrite src/parser.py.", slug=PATCHING_MODEL)
        assert denied.returncode == 0, denied.stderr
        told = _patch_output(model)
        assert target.read_text() == "ella's parser\n"  # the patch never ran
        assert told.startswith("Command blocked by PreToolUse hook: nexus: src/parser.py")
        assert "held by ella" in told and "rewriting the parser" in told and held["id"] in told

        env.run("claim", "release", held["id"], "--agent", "ella")
        done = run_exec(model, project, environ(home, BIN), "Rewrite src/parser.py now.", slug=PATCHING_MODEL)
        assert done.returncode == 0, done.stderr
        assert "Success" in _patch_output(model)
    assert target.read_text() == "lyra's parser\n"
