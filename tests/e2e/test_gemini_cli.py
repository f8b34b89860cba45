"""Gemini CLI 0.61.0, end to end: `nexus setup gemini-cli`, then the real program driven by a scripted
model on 127.0.0.1 (Gemini API, streamed), in project and in user scope.

Headless runs (`gemini -p`) show the start (the brief, with the first prompt: BeforeAgent in a new
session), tool calls through MCP and the end (SessionEnd retains); an ACP session (`gemini --acp`,
several prompts in one session) shows the brief with its first prompt and what is new reaching the
next prompt only (BeforeAgent); a resumed session (`--resume latest`) brings the brief
back with the checkpoint. Gemini CLI 0.61 fires PreCompress before every model call, whether it
compresses or not, and compresses by hand only in its interactive `/compress`: nexus wires the manual
one only, and the checkpoint the agent saved is what the resumed brief carries."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import Env

from nexus.ledger import log
from nexus.memory import bank
from nexus.project import checkpoints

from .conftest import AGENT_TOOLS, nexus_as, wired
from .model_gemini import GeminiModel, Reply, Request, Text, ToolUse
from .runtime_gemini import Acp, environ, gemini_bin, prepare_home, run_headless

pytestmark = pytest.mark.e2e


def nexus(env: Env, home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return nexus_as(env, home, cwd, gemini_bin(), *args)  # --check asks the installed Gemini CLI


def last_user_text(request: Request) -> str:
    """The newest user turn of a request: the prompt with what the hooks added to it."""
    users = [c for c in request.body.get("contents", []) if c.get("role") == "user"]
    return "\n".join(p.get("text", "") for p in (users[-1]["parts"] if users else []))


def nexus_tools(request: Request) -> list[str]:
    names = [f["name"] for t in request.body.get("tools", []) for f in t.get("functionDeclarations", [])]
    return sorted(n for n in names if n.startswith("mcp_nexus_"))


@pytest.mark.parametrize("scope", ["project", "user"])
def test_a_gemini_cli_session_uses_nexus(env: Env, tmp_path: Path, scope: str) -> None:
    prepare_home(tmp_path / "home")  # signed in with an API key, before nexus is wired
    home, project, done = wired(env, tmp_path, gemini_bin(), "gemini-cli", scope)
    question = env.append("ella", "zanzibar: who owns the tokenizer?", type="question").located.entry.id
    decide = {"title": "Parser", "decision": "a PEG parser", "rationale": "clear errors"}
    checkpoint = {"task": "the kestrel parser", "step": "grammar drafted", "next": "write the tests"}
    script: list[Reply] = [
        ToolUse("mcp_nexus_log_append", {"channel": "build", "type": "note", "summary": "kestrel started"}),
        ToolUse("mcp_nexus_checkpoint_save", checkpoint),
        ToolUse("mcp_nexus_decide", decide),
        Text("started"),
    ]
    with GeminiModel(script=script) as model:
        gemini_env = environ(home, model)
        # the start: the brief, with what another agent wrote, and the nexus tools, in the first request
        ran = run_headless(project, gemini_env, "Start the kestrel parser.")
        assert ran.returncode == 0, ran.stderr[-2000:]
        first = model.turns()[0]
        assert "# nexus brief for lyra" in last_user_text(first) and "zanzibar" in last_user_text(first)
        assert len(nexus_tools(first)) == AGENT_TOOLS
        entries = [x.entry for x in log.tail(env.vault, 20) if x.entry.agent == "lyra"]
        assert "kestrel started" in [e.summary for e in entries]
        decision = next(e for e in entries if e.type == "decision")
        # the end (SessionEnd): the decision waits in lyra's bank for a person
        facts = [f for f in bank.facts_of(env.vault, "lyra") if f.source == decision.id]
        assert [(f.type, f.status) for f in facts] == [("decision", "pending")]

        # several prompts in one session (ACP): only what is new, nothing when nothing is
        model.script[:] = [
            Text("one"),
            Text("two"),
            ToolUse("mcp_nexus_acknowledge", {"ids": [question], "summary": "lyra owns it"}),
            Text("three"),
        ]
        with Acp(project, gemini_env) as acp:
            session = acp.request("session/new", {"cwd": str(project), "mcpServers": []})["sessionId"]
            mark = len(model.turns())
            acp.prompt(session, "First.")  # (no SessionStart in ACP mode: the first prompt is the start)
            assert "# nexus brief for lyra" in last_user_text(model.turns()[mark])
            env.append("ella", "quokka migration finished", channel="db")
            mark = len(model.turns())
            acp.prompt(session, "Anything new?")
            second = last_user_text(model.turns()[mark])
            assert "quokka" in second and "zanzibar" not in second and "# nexus: new since" in second
            mark = len(model.turns())
            acp.prompt(session, "And now?")
            assert "<hook_context>" not in last_user_text(model.turns()[mark])
        acks = [x.entry for x in log.tail(env.vault, 20) if x.entry.agent == "lyra" and x.entry.type == "ack"]
        assert [e.ack for e in acks] == [(question,)]

        # resumed: the brief comes back with the checkpoint
        saved = checkpoints.load(env.vault, "lyra")
        assert saved is not None and saved.task == "the kestrel parser"
        model.script[:] = [Text("resumed")]
        mark = len(model.turns())
        ran = run_headless(project, gemini_env, "Where were we?", "--resume", "latest")
        assert ran.returncode == 0, ran.stderr[-2000:]
        back = last_user_text(model.turns()[mark])
        assert "continue from your checkpoint" in back and "the kestrel parser" in back

    verify = nexus(env, home, project, "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    check = nexus(env, home, project, "setup", "--check", "gemini-cli", "--scope", scope)
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.dumps(done.stdout).count("on your behalf") >= 2
