"""opencode 1.18.33, end to end: `nexus setup opencode`, then the real program (`opencode serve`,
driven over its HTTP API as its TUI drives it) with a scripted model on 127.0.0.1 (OpenAI-compatible
chat completions, streamed), in project and in user scope.

opencode has no hook commands; the plugin `nexus setup` writes gives it the same moments: the brief in
the system prompt of the session's model calls, what is new added to the next prompt only, the
checkpoint saved before a compaction and carried by the brief after it and in a resumed session, and
the session's decisions retained when it goes idle."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from nexus.ledger import log
from nexus.memory import bank
from nexus.project import checkpoints

from .conftest import AGENT_TOOLS, nexus_as, wired
from .model_openai import Reply, Request, Text, ToolUse
from .runtime_opencode import OpencodeModel, Server, environ, opencode_bin, prepare_home

pytestmark = pytest.mark.e2e
NO_FETCH = {"OPENCODE_DISABLE_MODELS_FETCH": "1"}  # (setup --check runs opencode: no models.dev fetch)


def nexus(env: Env, home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # --check asks the installed opencode
    return nexus_as(env, home, cwd, opencode_bin(), *args, **NO_FETCH)


def turns(model: OpencodeModel) -> list[Request]:
    """The session's turns: opencode's requests with tools (its side requests have none)."""
    return [r for r in model.turns() if r.body.get("tools")]


def system(request: Request) -> str:
    return "\n".join(str(m.get("content")) for m in request.body["messages"] if m.get("role") == "system")


def last_user(request: Request) -> str:
    users = [m for m in request.body["messages"] if m.get("role") == "user"]
    content: Any = users[-1]["content"] if users else ""
    return content if isinstance(content, str) else str(content)


def tools(request: Request) -> list[str]:
    names = [t["function"]["name"] for t in request.body.get("tools", [])]
    return sorted(n for n in names if n.startswith("nexus_"))


def eventually(check: Any, timeout: float = 30) -> Any:
    """``check()`` once it is truthy (a plugin's idle handler runs after the answer is sent)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


@pytest.mark.parametrize("scope", ["project", "user"])
def test_an_opencode_session_uses_nexus(env: Env, tmp_path: Path, scope: str) -> None:
    home, project, _ = wired(env, tmp_path, opencode_bin(), "opencode", scope, **NO_FETCH)
    question = env.append("ella", "zanzibar: who owns the tokenizer?", type="question").located.entry.id
    checkpoint = {"task": "the kestrel parser", "step": "grammar drafted", "next": "write the tests"}
    decide = {"title": "Parser", "decision": "a PEG parser", "rationale": "clear errors"}
    script: list[Reply] = [
        ToolUse("nexus_log_append", {"channel": "build", "type": "note", "summary": "kestrel started"}),
        ToolUse("nexus_checkpoint_save", checkpoint),
        ToolUse("nexus_decide", decide),
        Text("started"),  # turn 1
        Text("seen"),  # turn 2
        ToolUse("nexus_acknowledge", {"ids": [question], "summary": "lyra owns it"}),
        Text("acknowledged"),  # turn 3
        Text("after compaction"),  # turn 4
        Text("resumed"),  # turn 5, another process
    ]
    with OpencodeModel(script) as model:
        prepare_home(home, model)
        oc_env = environ(home, project)
        with Server(project, oc_env) as server:
            sid = server.session()
            server.prompt(sid, "Start the kestrel parser.")
            first = turns(model)[0]
            assert "# nexus brief for lyra" in system(first) and "zanzibar" in system(first)
            assert len(tools(first)) == AGENT_TOOLS
            entries = [x.entry for x in log.tail(env.vault, 20) if x.entry.agent == "lyra"]
            assert "kestrel started" in [e.summary for e in entries]
            decision = next(e for e in entries if e.type == "decision")
            # the session going idle: the decision waits in lyra's bank for a person
            facts = eventually(
                lambda: [f for f in bank.facts_of(env.vault, "lyra") if f.source == decision.id]
            )
            assert [(f.type, f.status) for f in facts] == [("decision", "pending")]

            env.append("ella", "quokka migration finished", channel="db")
            mark = len(turns(model))
            server.prompt(sid, "Anything new?")
            second = last_user(turns(model)[mark])
            assert "quokka" in second and "zanzibar" not in second and "# nexus: new since" in second
            mark = len(turns(model))
            server.prompt(sid, "And now?")
            assert "# nexus" not in last_user(turns(model)[mark])  # nothing new: nothing added
            acks = [
                x.entry for x in log.tail(env.vault, 20) if x.entry.agent == "lyra" and x.entry.type == "ack"
            ]
            assert [e.ack for e in acks] == [(question,)]

            if scope == "project":  # the same plugin and server in user scope: played once
                compaction(env, model, server, sid)
        if scope == "project":
            with Server(project, oc_env) as server:  # the same session, resumed in a new process
                mark = len(turns(model))
                server.prompt(sid, "Where were we?")
                assert "the kestrel parser" in system(turns(model)[mark])

    verify = nexus(env, home, project, "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    check = nexus(env, home, project, "setup", "--check", "opencode", "--scope", scope)  # opencode's own view
    assert check.returncode == 0, check.stdout + check.stderr


def compaction(env: Env, model: OpencodeModel, server: Server, sid: str) -> None:
    """The checkpoint saved before a compaction, carried by the brief after it."""
    server.compact(sid)
    saved = eventually(
        lambda: (cp := checkpoints.load(env.vault, "lyra")) and "Context compacted" in cp.notes and cp
    )
    assert saved and saved.task == "the kestrel parser"
    mark = len(turns(model))
    server.prompt(sid, "Go on.")
    after = system(turns(model)[mark])
    assert "continue from your checkpoint" in after and "the kestrel parser" in after
