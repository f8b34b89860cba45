"""Claude Code 2.1.332, end to end: the real program, wired by `nexus setup claude-code` and nothing
else, talking to a scripted Anthropic Messages server on 127.0.0.1, plays a whole session in each
scope (`claude -p` with stream-json input: several prompts in one session) and interactively under a
pseudo-terminal (tmux). Each session checks the six moments: the brief in the first request, a new
entry reaching the next prompt only, a tool call leaving a signed entry (`nexus verify` clean), an
acknowledgement, a compaction that saves the checkpoint and a resumed brief carrying it, and the
session end retaining what the agent decided, waiting for a person's approval."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Env, hook_servers

from . import runtime_claude
from .conftest import nexus as run_nexus
from .conftest import runtime_env
from .model_anthropic import AnthropicModel, Text, ToolUse, user_text
from .runtime_claude import Session, claude, model_env
from .scripted import Request

pytestmark = pytest.mark.e2e


@pytest.fixture
def person(env: Env, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A person's home and project, the project wired by `nexus setup claude-code` as they would."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    yield {"home": home, "project": project}


def setup(env: Env, person: dict[str, Any], *args: str) -> str:
    return runtime_claude.setup(env, person["home"], person["project"], *args)


class Terminal:
    """Claude Code interactive, in a tmux pseudo-terminal: prompts typed, the screen read."""

    def __init__(self, cwd: Path, env: dict[str, str], debug: Path, name: str) -> None:
        self.name, self.debug = name, debug
        if shutil.which("tmux") is None:
            pytest.fail(
                "tmux is not installed: the interactive session runs in a tmux pseudo-terminal", pytrace=False
            )
        command = " ".join(
            [
                "env",
                "-i",
                *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                str(claude()),
                "--debug-file",
                str(debug),
            ]
        )
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", name, "-x", "160", "-y", "50", "-c", str(cwd), command],
            check=True,
        )
        self.wait(lambda: "❯" in self.screen(), "the prompt")

    def screen(self) -> str:
        return subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True
        ).stdout

    def wait(self, done: Callable[[], bool], what: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if done():
                return
            time.sleep(0.2)
        raise AssertionError(f"no {what} within {timeout} s; the screen:\n{self.screen()}")

    def type(self, text: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, "-l", text], check=True)
        time.sleep(0.3)
        subprocess.run(["tmux", "send-keys", "-t", self.name, "Enter"], check=True)

    def gone(self) -> bool:
        return subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True).returncode != 0

    def close(self) -> int:
        self.type("/exit")
        self.wait(self.gone, "exit")
        return 0


def _since(requests: list[Request], before: int) -> list[Request]:
    return [r for r in requests[before:] if r.scripted]


def _debug(debug: Path) -> str:
    return debug.read_text(errors="replace") if debug.is_file() else ""


def _hook_ran(debug: Path, event: str) -> bool:
    return debug.is_file() and f"Hooks: {event} " in debug.read_text(errors="replace")


def play(
    env: Env, model: AnthropicModel, say: Callable[[str, Callable[[], bool]], None], debug: Path
) -> None:
    """The six moments, whatever drives the runtime: ``say(prompt, done)`` returns once ``done()``."""
    zanzibar = env.append("lyra", "the zanzibar cache is flaky: retry twice").located.entry.id

    # 1. the start: the brief reaches the first request
    model.add(Text("I have read the brief."))
    say("Start on the parser.", lambda: len(model.turns()) >= 1 and "turn 1 end" in _debug(debug))
    first = model.turns()[0]
    assert "zanzibar" in first.text() and zanzibar in first.text(), "the brief never reached the model"

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
    say(
        "Carry on, and record what you changed.",
        lambda: not model.script and len(_since(model.requests, before)) >= 4,
    )
    new = _since(model.requests, before)
    assert "quokka" in new[0].text() and "quokka" not in first.text()
    for request in new[1:3]:  # the tool calls were not refused
        assert "not been granted" not in user_text(request) and "permission" not in user_text(request).lower()
    before = len(model.requests)
    model.add(Text("Nothing new."))
    say("Anything new?", lambda: len(_since(model.requests, before)) >= 1)
    third = _since(model.requests, before)[0]
    assert third.text().count("quokka queue") == new[-1].text().count("quokka queue"), (
        "nexus added nothing new"
    )

    # 3. the tool call left a signed entry, and verify is clean
    mine = [x for x in env.run("log", "tail", "--json").json() if x["agent"] == "ella"]
    assert any(x["summary"] == "the parser uses the NATS queue" for x in mine), mine
    verify = env.run("verify", check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr

    # 4. the acknowledgement: nothing is owed any more
    owed = env.run("brief", "--agent", "ella", "--peek").stdout
    assert question not in owed.split("## Unread", 1)[0], owed

    # 5. a compaction saves the checkpoint; the resumed brief carries it
    before = len(model.requests)
    say("/compact", lambda: _hook_ran(debug, "SessionStart:compact"))
    checkpoint = env.run("checkpoint", "show", "--agent", "ella", check=False).stdout
    assert "Context compacted (manual)" in checkpoint, checkpoint
    model.add(Text("Continuing."))
    say("Go on.", lambda: any(r.scripted for r in model.requests[before:]) and not model.script)
    resumed = [r for r in model.requests[before:] if r.scripted][-1]
    assert "session compacted: continue from your checkpoint" in resumed.text()
    assert "Context compacted (manual)" in resumed.text()  # the checkpoint itself
    assert not any("compactd" in r.text() for r in model.requests)


def ended(env: Env, debug: Path) -> None:
    """6. the session end: what the agent decided waits in its bank for a person's approval; and
    `nexus mcp` left on the runtime's SIGINT."""
    pending = env.run("review", "--agent", "sam", "--json").json()
    assert "the parser uses the NATS queue" in json.dumps(pending), pending
    deadline = time.monotonic() + 15  # the runtime's debug log is written behind it
    while "SessionEnd" not in _debug(debug) and time.monotonic() < deadline:
        time.sleep(0.2)
    text = _debug(debug)
    assert 'MCP server "nexus": Sending SIGINT' in text
    assert 'MCP server "nexus": SIGINT failed' not in text  # else it logs "sending SIGTERM"
    assert re.search(
        r'MCP server "nexus": (MCP server process exited cleanly|.*connection closed .*\(cleanly\))', text
    )


@pytest.mark.parametrize("scope", ["project", "user"])
def test_a_whole_session_in_claude_code(env: Env, person: dict[str, Any], tmp_path: Path, scope: str) -> None:
    """`claude -p`, prompts as stream-json: one session, each scope wired by `nexus setup` alone."""
    scoped = ["--scope", "user"] if scope == "user" else []
    out = setup(env, person, *scoped)
    assert "on your behalf: wrote permissions.allow" in out
    check = run_nexus(
        runtime_env(person["home"]), "setup", "--check", "claude-code", *scoped, cwd=person["project"]
    )
    assert check.returncode == 0, check.stdout + check.stderr  # zero: and the session below uses nexus
    debug = tmp_path / "claude-debug.txt"
    with AnthropicModel() as model:
        session = Session(person["project"], model_env(person["home"], model), debug)
        try:
            play(env, model, lambda text, done: (session.prompt(text), None)[1], debug)
            assert not any(r.get("permission_denials") for r in session.results), session.results
        finally:
            code = session.close()
        assert code == 0
    ended(env, debug)


def test_a_whole_session_in_claude_code_with_the_warm_hook_server(
    env: Env, person: dict[str, Any], tmp_path: Path, hook_server: Path
) -> None:
    """The same session with the warm hook server on, as a person has it: SessionStart starts the
    server, the hooks after it are its clients; every moment of the session holds as without it."""
    setup(env, person)
    debug = tmp_path / "claude-debug.txt"
    with AnthropicModel() as model:
        session = Session(person["project"], model_env(person["home"], model), debug)
        try:
            play(env, model, lambda text, done: (session.prompt(text), None)[1], debug)
            started = list(hook_server.glob("*.pid"))  # (during the session: it is still running)
        finally:
            code = session.close()
        assert code == 0
    ended(env, debug)
    assert len(started) == 1, "the session's hooks started no hook server"
    assert int(started[0].read_text()) in hook_servers(folder=str(hook_server.parent))


def test_an_interactive_session_in_a_terminal(env: Env, person: dict[str, Any], tmp_path: Path) -> None:
    """Interactive Claude Code under a pseudo-terminal (tmux): no "new MCP server found" dialog,
    the tools usable, the same six moments. The person has been through Claude Code's own onboarding
    and accepted the API key (their own settings, not nexus's)."""
    setup(env, person)
    claude_json = person["home"] / ".claude.json"
    state = json.loads(claude_json.read_text())
    state |= {
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": ["sk-ant-test"], "rejected": []},
    }
    claude_json.write_text(json.dumps(state))
    debug = tmp_path / "claude-debug.txt"
    with AnthropicModel() as model:
        terminal = Terminal(
            person["project"], model_env(person["home"], model), debug, f"nexus-e2e-{os.getpid()}"
        )
        try:
            assert "New MCP server found" not in terminal.screen()

            def say(text: str, done: Callable[[], bool]) -> None:
                assert "New MCP server found" not in terminal.screen()
                terminal.type(text)
                terminal.wait(done, f"answer to {text!r}")

            play(env, model, say, debug)
        finally:
            terminal.close()
    ended(env, debug)


def test_without_the_allow_rule_claude_code_refuses_every_nexus_tool(
    env: Env, person: dict[str, Any], tmp_path: Path
) -> None:
    """What `nexus setup` wrote before it wrote the allow rule (and the trust that makes a project's
    rule count): the same call is refused and no entry is written. Keeps the suite honest: the
    session above passes because of the rule, not in spite of the runtime."""
    setup(env, person, "--skip", "allow")
    debug = tmp_path / "claude-debug.txt"
    with AnthropicModel() as model:
        model.add(
            ToolUse("ToolSearch", {"query": "select:mcp__nexus__log_append"}),
            ToolUse("mcp__nexus__log_append", {"channel": "build", "type": "note", "summary": "refused"}),
            Text("Could not record."),
        )
        session = Session(person["project"], model_env(person["home"], model), debug)
        try:
            result = session.prompt("Record that you started.")
        finally:
            session.close()
    assert [d["tool_name"] for d in result["permission_denials"]] == ["mcp__nexus__log_append"], result
    assert not [x for x in env.run("log", "tail", "--json").json() if x["agent"] == "ella"]
    check = run_nexus(runtime_env(person["home"]), "setup", "--check", "claude-code", cwd=person["project"])
    assert check.returncode == 1 and "nexus tools not allowed" in check.stdout, check.stdout
