"""OpenClaw 2026.9.6 plays a whole session with nexus: wired by ``nexus setup openclaw`` (the user's
scope: OpenClaw keeps one configuration per user), one Gateway for the module (it takes 16-30 s to
start), ``openclaw agent`` turn by turn on the main session, against a scripted model on 127.0.0.1.

The six moments: the brief in the first request (the ``NEXUS.md`` bootstrap file); a new entry between
two prompts in the next request only; MCP tool calls (behind OpenClaw's tool search) leaving signed
entries with ``nexus verify`` clean, one an acknowledgement; a compaction (``openclaw sessions
compact``) saving the checkpoint, which the next run's brief carries; the session's end (``sessions.reset``)
retaining its decision in the bank, pending approval."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nexus.keys import identity
from nexus.ledger import log
from nexus.memory import bank
from nexus.project import checkpoints
from nexus.storage.vault import Vault, init

from .model_chat import ModelServer, Reply, Request
from .runtime_openclaw import SESSION, OpenClaw, openclaw_command, remove_new, shared_tmp

pytestmark = pytest.mark.e2e

DISTINCT = "zanzibar"  # a word only lyra's earlier entry has
NEWS = "obsidian walrus"  # only in lyra's entry written between two prompts


@dataclass
class Claw:
    openclaw: OpenClaw
    model: ModelServer
    vault: Vault
    keys: Path
    earlier: str  # lyra's entry written before the session
    ready_seconds: float

    def append(self, agent: str, summary: str) -> str:
        signer = identity.load_signer(self.vault, self.keys, agent)
        return log.append(self.vault, signer, channel="parser", type="note", summary=summary).located.entry.id

    def nexus(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A ``nexus`` command in this user's environment, with ``openclaw`` on PATH as installed."""
        env = {**self.openclaw.env(), "NEXUS_HOME": str(self.keys)}
        env["PATH"] = f"{openclaw_command().parent}{os.pathsep}{env.get('PATH', '')}"
        return subprocess.run(
            [sys.executable, "-m", "nexus", "--vault", str(self.vault.root), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )


def nexus_md(request: Request) -> str:
    """The NEXUS.md bootstrap file as it reached the model (the system prompt's section for it)."""
    system = request.text("system")
    found = re.search(r"## [^\n]*/NEXUS\.md\n(.*?)(?=\n<!-- |\n## [^\n]*\.md\n|\Z)", system, re.S)
    return found.group(1) if found else ""


def _tool(name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A call of a nexus MCP tool as OpenClaw exposes it: through its tool search's ``tool_call``."""
    return ("tool_call", {"id": f"mcp:nexus:nexus__{name}", "args": args})


def _turn(request: Request) -> bool:
    return bool(request.body.get("tools"))


@pytest.fixture(scope="module")
def claw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Claw]:
    openclaw_command()  # a missing runtime fails here, in one line
    root = tmp_path_factory.mktemp("openclaw")
    keys = root / "keys"
    vault, _ = init(root / "vault")
    for name in ("ella", "lyra"):
        identity.add(vault, keys, name)
    before = shared_tmp()
    oc = OpenClaw(root)
    with ModelServer() as model:
        claw = Claw(oc, model, vault, keys, "", 0.0)
        claw.earlier = claw.append("lyra", f"the {DISTINCT} lexer is ready")
        oc.home.mkdir(parents=True)
        wired = claw.nexus("setup", "openclaw", "--agent", "ella")
        assert wired.returncode == 0, wired.stderr
        oc.configure(model.base_url)
        try:
            claw.ready_seconds = oc.start()
            yield claw
        finally:
            oc.stop()
            remove_new(before)


def test_a_whole_openclaw_session_with_nexus(claw: Claw) -> None:
    oc, model = claw.openclaw, claw.model
    # turn 1: the brief arrives; the model logs an entry and acknowledges lyra's, through MCP
    model.add(
        Reply(
            tools=[
                _tool("log_append", {"channel": "parser", "type": "note", "summary": "parser port started"})
            ]
        ),
        Reply(tools=[_tool("acknowledge", {"ids": [claw.earlier], "summary": "lexer noted"})]),
        "Started.",
    )
    first = oc.agent("Begin the port")
    assert first.answer == "Started.", first.raw
    opening = next(r for r in model.chats() if _turn(r))
    brief = nexus_md(opening)
    assert "nexus brief for ella" in brief and DISTINCT in brief and claw.earlier in brief

    # between two prompts lyra reads the log, then writes: it reaches the next request, and only that one
    assert claw.nexus("log", "read", "--agent", "lyra").returncode == 0
    news = claw.append("lyra", f"the {NEWS} question: which generator?")
    seen = len(model.chats())
    model.add("Noted.")
    oc.agent("Carry on")
    second = next(r for r in model.chats()[seen:] if _turn(r))
    assert NEWS in nexus_md(second) and news in nexus_md(second)

    seen = len(model.chats())
    model.add(
        Reply(
            tools=[
                _tool(
                    "decide",
                    {
                        "title": "Hand-written lexer",
                        "decision": "No generator.",
                        "rationale": "Clearer errors.",
                    },
                )
            ]
        ),
        "Decided.",
    )
    oc.agent("Proceed")
    third = next(r for r in model.chats()[seen:] if _turn(r))
    assert NEWS not in nexus_md(third), nexus_md(third)
    assert "## Unread from others: 0" in nexus_md(third)

    # compaction: the checkpoint is saved, and the next run's brief carries it
    model.add(Reply(text="## Summary\nThe port goes on.", when=lambda body: not body.get("tools")))
    compacted = oc.cli("sessions", "compact", SESSION, "--json")
    assert compacted.returncode == 0, compacted.stderr + compacted.stdout
    cp = checkpoints.load(claw.vault, "ella")
    assert cp is not None and "Context compacted (openclaw)" in cp.notes
    seen = len(model.chats())
    model.add("Resumed.")
    oc.agent("Resume the work")
    resumed = next(r for r in model.chats()[seen:] if _turn(r))
    assert "Context compacted (openclaw)" in nexus_md(resumed)

    # the session ends (reset): its decision waits in ella's bank for a person's approval
    reset = oc.gateway_call("sessions.reset", {"key": SESSION})
    assert reset.returncode == 0, reset.stderr + reset.stdout
    kept = bank.facts_of(claw.vault, "ella")
    assert [(f.type, f.status) for f in kept] == [("decision", "pending")], kept
    assert "Hand-written lexer" in kept[0].content

    # the MCP calls left signed entries; the log verifies
    mine = [x.entry for x in log.tail(claw.vault, 50) if x.entry.agent == "ella"]
    appended = [e for e in mine if e.summary == "parser port started"]
    assert len(appended) == 1 and appended[0].sig
    assert [e.ack for e in mine if e.type == "ack"] == [(claw.earlier,)]
    assert claw.nexus("verify").returncode == 0
    print(
        json.dumps({"gateway_ready_s": round(claw.ready_seconds, 1), "first_turn_s": round(first.seconds, 1)})
    )


def test_check_reports_what_openclaw_sees(claw: Claw) -> None:
    """``nexus setup --check openclaw``: 0 while OpenClaw loads the hook and its Gateway answers; with
    the Gateway stopped (hooks run nowhere else), non-zero, naming it and the command that starts it."""
    ok = claw.nexus("setup", "--check", "openclaw", "--agent", "ella")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    claw.openclaw.stop()
    down = claw.nexus("setup", "--check", "openclaw", "--agent", "ella")
    assert down.returncode != 0
    assert "the OpenClaw Gateway does not answer" in down.stdout and "openclaw gateway run" in down.stdout
