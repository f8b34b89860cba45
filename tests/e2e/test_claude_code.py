"""Claude Code 2.1.332, end to end: the real program, wired by `nexus setup claude-code` and nothing
else, talking to a scripted Anthropic Messages server on 127.0.0.1, plays a whole session in each
scope (`claude -p` with stream-json input: several prompts in one session) and interactively under a
pseudo-terminal (tmux). Each session checks the six moments: the brief in the first request, a new
entry reaching the next prompt only, a tool call leaving a signed entry (`nexus verify` clean), an
acknowledgement, a compaction that saves the checkpoint and a resumed brief carrying it, and the
session end retaining what the agent decided, waiting for a person's approval."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from .conftest import nexus as run_nexus
from .conftest import runtime_binary, runtime_env
from .model_anthropic import AnthropicModel, Text, ToolUse, user_text
from .scripted import Request

pytestmark = pytest.mark.e2e

VERSION = "2.1.332"


def claude() -> Path:
    return runtime_binary("claude-code", VERSION, "node_modules/.bin/claude")


def hook_text(request: Request) -> str:
    """What nexus's hooks put in a request (Claude Code adds hook context as messages of its own)."""
    return request.text()


@pytest.fixture
def person(env: Env, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A person's home and project, the project wired by `nexus setup claude-code` as they would."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    yield {"home": home, "project": project}


def setup(env: Env, person: dict[str, Any], *args: str) -> str:
    proc = run_nexus(
        runtime_env(person["home"]),
        "--vault",
        str(env.vault.root),
        "setup",
        "claude-code",
        "--agent",
        "ella",
        "--keys-home",
        str(env.keys_home),
        *args,
        cwd=person["project"],
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


class Session:
    """`claude -p` reading stream-json prompts: one session, a prompt at a time."""

    def __init__(self, cwd: Path, env: dict[str, str], debug: Path) -> None:
        self.proc = subprocess.Popen(
            [
                str(claude()),
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
                "--debug-file",
                str(debug),
            ],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.results: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []

    def prompt(self, text: str, timeout: float = 120) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        message = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"claude exited: {self.proc.stderr.read() if self.proc.stderr else ''}")
            data: dict[str, Any] = json.loads(line)
            self.messages.append(data)
            if data.get("type") == "result":
                self.results.append(data)
                return data
        raise AssertionError(f"no result for {text!r} within {timeout} s")

    def close(self, timeout: float = 120) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.proc.stdout.close()
            self.proc.stderr.close()


def _since(requests: list[Request], before: int) -> list[Request]:
    return [r for r in requests[before:] if r.scripted]


@pytest.mark.parametrize("scope", ["project", "user"])
def test_a_whole_session_in_claude_code(env: Env, person: dict[str, Any], tmp_path: Path, scope: str) -> None:
    home, project = person["home"], person["project"]
    out = setup(env, person, *(["--scope", "user"] if scope == "user" else []))
    assert "on your behalf: wrote permissions.allow" in out
    zanzibar = env.append("lyra", "the zanzibar cache is flaky: retry twice").located.entry.id

    with AnthropicModel() as model:
        cc_env = runtime_env(
            home,
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY="sk-ant-test",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
        )
        session = Session(project, cc_env, tmp_path / "claude-debug.txt")
        try:
            # 1. the start: the brief reaches the first request
            model.add(Text("I have read the brief."))
            first = session.prompt("Start on the parser.")
            assert first["is_error"] is False, first
            turns = model.turns()
            assert "zanzibar" in turns[0].text(), "the brief never reached the model"
            assert zanzibar in turns[0].text()

            # 2. a new entry between two prompts reaches the next prompt only
            question = env.append("lyra", "which quokka queue do we use?", type="question").located.entry.id
            before = len(model.requests)
            model.add(
                ToolUse("ToolSearch", {"query": "select:mcp__nexus__log_append,mcp__nexus__acknowledge"}),
                ToolUse(
                    "mcp__nexus__log_append",
                    {"channel": "build", "type": "correction", "summary": "the parser uses the NATS queue"},
                ),
                ToolUse("mcp__nexus__acknowledge", {"ids": [question]}),
                Text("Recorded and acknowledged."),
            )
            second = session.prompt("Carry on, and record what you changed.")
            assert second["is_error"] is False and not second.get("permission_denials"), second
            new = _since(model.requests, before)
            assert "quokka" in user_text(new[0], -1) or "quokka" in new[0].text()
            assert all("quokka" not in t.text() for t in turns[:1])
            before = len(model.requests)
            model.add(Text("Nothing new."))
            session.prompt("Anything new?")
            third = _since(model.requests, before)[0]
            assert third.text().count("quokka queue") == new[0].text().count("quokka queue"), (
                "nothing new, yet nexus added something"
            )

            # 3. the tool call left a signed entry, and verify is clean
            corrections = [x for x in env.run("log", "tail", "--json").json() if x["agent"] == "ella"]
            assert any(x["summary"] == "the parser uses the NATS queue" for x in corrections), corrections
            verify = env.run("verify", check=False)
            assert verify.returncode == 0, verify.stdout + verify.stderr

            # 4. the acknowledgement
            owed = env.run("brief", "--agent", "ella", "--peek").stdout
            assert question not in owed.split("## Unread", 1)[0], owed

            # 5. a compaction saves the checkpoint; the resumed brief carries it
            before = len(model.requests)
            model.add(Text("Summary of the conversation so far."))
            session.prompt("/compact")
            checkpoint = env.run("checkpoint", "show", "--agent", "ella", check=False).stdout
            assert "Context compacted" in checkpoint, checkpoint
            model.add(Text("Continuing."))
            session.prompt("Go on.")
            after = model.requests[before:]
            assert any("session compacted: continue from your checkpoint" in r.text() for r in after)
            assert not any("compactd" in r.text() for r in model.requests)
        finally:
            code = session.close()
        assert code == 0
    debug = (tmp_path / "claude-debug.txt").read_text(errors="replace")
    assert 'MCP server "nexus": SIGINT failed' not in debug  # nexus mcp exits on the runtime's SIGINT
    assert 'MCP server "nexus": MCP server process exited cleanly' in debug

    # 6. the session end: what the agent decided waits in its bank for a person's approval
    pending = env.run("review", "--agent", "sam", "--json").json()
    assert "the parser uses the NATS queue" in json.dumps(pending), pending
    shutil.rmtree(home / "tmp", ignore_errors=True)
