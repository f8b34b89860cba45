"""Codex 0.171.0, end to end: `nexus setup codex`, then a whole session of the real program driven by
a scripted model on 127.0.0.1 (OpenAI Responses, streamed), in project and in user scope.

The session is played through `codex app-server` (the JSON-RPC server Codex's own TUI and IDE
clients drive: turns, compaction, resume), one prompt through `codex exec`. What reached the model is
read from the scripted server's record of every request; what nexus kept, from the vault."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from nexus.ledger import log
from nexus.memory import bank
from nexus.project import checkpoints

from .conftest import AGENT_TOOLS, nexus_as, wired
from .model_openai import OpenAIModel, Reply, Request, Text, ToolUse
from .runtime_codex import AppServer, codex_bin, environ, run_exec

pytestmark = pytest.mark.e2e
NS = "mcp__nexus"


def nexus(env: Env, home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return nexus_as(env, home, cwd, codex_bin(), *args)  # --check asks the installed Codex


def new_items(request: Request) -> list[dict[str, Any]]:
    """What a request adds after the model's last answer: this turn's context and prompt."""
    items: list[dict[str, Any]] = request.body.get("input", [])
    last = max((i for i, it in enumerate(items) if it.get("role") == "assistant"), default=-1)
    return items[last + 1 :]


def injected(request: Request) -> str:
    """The developer messages a request adds this turn (where Codex puts a hook's context)."""
    return "\n".join(
        c.get("text", "")
        for it in new_items(request)
        if it.get("type") == "message" and it.get("role") == "developer"
        for c in it.get("content", [])
    )


def nexus_tools(request: Request) -> list[str]:
    for tool in request.body.get("tools", []):
        if tool.get("type") == "namespace" and tool.get("name") == NS:
            return sorted(t["name"] for t in tool.get("tools", []))
    return []


@pytest.mark.parametrize("scope", ["project", "user", "project, warm hook server"])
def test_a_whole_codex_session_uses_nexus(
    env: Env, tmp_path: Path, scope: str, request: pytest.FixtureRequest
) -> None:
    """(``warm hook server``: the same session with it on, as a person has it: the hooks after the
    first are its clients, Stop's retain and PreCompact's checkpoint among them.)"""
    sockets = request.getfixturevalue("hook_server") if scope.endswith("server") else None
    scope = scope.split(",")[0]
    home, project, _ = wired(env, tmp_path, codex_bin(), "codex", scope)
    asked = env.append("ella", "zanzibar: who owns the tokenizer?", type="question", channel="build")
    question = asked.located.entry.id
    script: list[Reply] = [
        ToolUse("log_append", {"channel": "build", "type": "note", "summary": "kestrel parser started"}, NS),
        Text("started"),  # turn 1
        Text("seen"),  # turn 2
        Text("nothing new"),  # turn 3
        ToolUse("acknowledge", {"ids": [question], "summary": "lyra owns the tokenizer"}, NS),
        ToolUse("decide", {"title": "Parser", "decision": "a PEG parser", "rationale": "clear errors"}, NS),
        Text("decided"),  # turn 4
        Text("Summary: the kestrel parser, a PEG parser decided."),  # the compaction's own request
        Text("continuing"),  # turn 5, after compaction
    ]
    with OpenAIModel(script=script) as model:
        codex_env = environ(home)
        with AppServer(project, codex_env, model) as server:
            thread = server.request("thread/start", {"cwd": str(project), "model": "gpt-scripted"})
            tid = thread["thread"]["id"]
            mark = len(model.turns())
            server.turn(tid, "Start the kestrel parser.")
            first = model.turns()[mark]
            # the start: the brief, with what another agent wrote beforehand, and the nexus tools
            assert "zanzibar" in injected(first) and "# nexus brief for lyra" in injected(first)
            assert "log_append" in nexus_tools(first) and len(nexus_tools(first)) == AGENT_TOOLS
            # a tool call through MCP: a signed entry
            mine = [x.entry for x in log.tail(env.vault, 20) if x.entry.agent == "lyra"]
            assert [e.summary for e in mine] == ["kestrel parser started"]

            env.append("ella", "quokka migration finished", channel="db")
            mark = len(model.turns())
            server.turn(tid, "Anything new?")
            second = model.turns()[mark]
            assert injected(second).startswith("# nexus: new since your last turn")
            assert "quokka" in injected(second) and "zanzibar" not in injected(second)

            mark = len(model.turns())
            server.turn(tid, "And now?")
            third = model.turns()[mark]
            assert injected(third) == ""  # nothing new: nothing added

            server.turn(tid, "Acknowledge ella's question and decide the parser.")
            entries = [x.entry for x in log.tail(env.vault, 20) if x.entry.agent == "lyra"]
            acks = [e for e in entries if e.type == "ack"]
            assert [e.ack for e in acks] == [(question,)]
            decision = next(e for e in entries if e.type == "decision")

            # compaction: PreCompact saves the checkpoint; the next turn's brief carries it
            before = checkpoints.load(env.vault, "lyra")
            since = len(server.notifications)
            server.request("thread/compact/start", {"threadId": tid})
            server.wait_for("turn/completed", since)
            saved = checkpoints.load(env.vault, "lyra")
            assert saved is not None and saved != before and "Context compacted" in saved.notes
            mark = len(model.turns())
            server.turn(tid, "Go on.")
            after = model.turns()[mark]
            if sockets is not None:  # (while the session runs: one server, which nexus mcp started)
                pids = list(sockets.glob("*.pid"))
                assert len(pids) == 1, "no hook server for the session's hooks"
                started = Path(f"/proc/{int(pids[0].read_text())}/environ").read_bytes().split(b"\0")
                # its environment is what Codex passes an MCP server (env_vars included), not a hook's
                assert b"SCRIPTED_API_KEY=dummy" not in started and any(
                    v.startswith(b"XDG_RUNTIME_DIR=") for v in started
                )
            assert "continue from your checkpoint" in injected(after) and saved.task in injected(after)

        # the session's end (Stop retains): the decision waits in lyra's bank for a person
        facts = [f for f in bank.facts_of(env.vault, "lyra") if f.source == decision.id]
        assert [(f.type, f.status) for f in facts] == [("decision", "pending")]

        # resumed in a new Codex process: the brief carries the checkpoint
        mark = len(model.turns())
        with AppServer(project, codex_env, model) as server:
            server.request("thread/resume", {"threadId": tid})
            server.turn(tid, "Where were we?")
        back = model.turns()[mark]
        assert "continue from your checkpoint" in injected(back)
        assert saved.task in injected(back)

    verify = nexus(env, home, project, "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    check = nexus(
        env, home, project, "setup", "--check", "codex", "--scope", scope
    )  # Codex's own view: all in place
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("scope", ["project", "user"])
def test_codex_exec_has_the_brief_and_the_tools_on_its_first_request(
    env: Env, tmp_path: Path, scope: str
) -> None:
    home, project, _ = wired(env, tmp_path, codex_bin(), "codex", scope)
    env.append("ella", "marmalade: the build is red", channel="build")
    script: list[Reply] = [
        ToolUse("log_append", {"channel": "build", "type": "note", "summary": "fixed the build"}, NS),
        Text("fixed"),
    ]
    with OpenAIModel(script=script) as model:
        ran = run_exec(model, project, environ(home), "Fix the build.")
    assert ran.returncode == 0, ran.stderr
    assert not [e for e in ran.errors() if "deprecated" in e or "hook" in e.lower()], ran.errors()
    first = model.turns()[0]
    assert "marmalade" in injected(first) and len(nexus_tools(first)) == AGENT_TOOLS
    assert [c["status"] for c in ran.tool_calls()] == ["completed"]
    mine = [x.entry.summary for x in log.tail(env.vault, 20) if x.entry.agent == "lyra"]
    assert mine == ["fixed the build"]
