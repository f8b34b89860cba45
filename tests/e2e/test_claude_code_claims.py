"""Claims, end to end in Claude Code 2.1.332: the real program, wired by `nexus setup claude-code` alone,
talking to a scripted Anthropic Messages server on 127.0.0.1. Another agent's exclusive claim stops
the model's `Write` of that file (the PreToolUse hook's deny), and the model is told why: who holds it,
the reason, the claim; once the claim is released the same edit goes through."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from .conftest import nexus as run_nexus
from .conftest import runtime_binary, runtime_env
from .model_anthropic import AnthropicModel, Text, ToolUse, user_text

pytestmark = pytest.mark.e2e

VERSION = "2.1.332"


def _claude(cwd: Path, env: dict[str, str], debug: Path) -> subprocess.Popen[str]:
    """`claude -p` reading stream-json prompts; edits accepted without asking (acceptEdits), as a person
    who lets the agent write files would run it: only the hook can stop the edit."""
    binary = runtime_binary("claude-code", VERSION, "node_modules/.bin/claude")
    return subprocess.Popen(
        [
            str(binary),
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits",
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


def _prompt(proc: subprocess.Popen[str], text: str, timeout: float = 180) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    message = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"claude exited: {proc.stderr.read() if proc.stderr else ''}")
        data: dict[str, Any] = json.loads(line)
        if data.get("type") == "result":
            return data
    raise AssertionError(f"no result for {text!r} within {timeout} s")


def test_another_agents_claim_stops_the_models_edit_until_released(env: Env, tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    (project / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    target = project / "src" / "parser.py"
    target.write_text("lyra's parser\n")
    wired = run_nexus(
        runtime_env(home),
        "--vault",
        str(env.vault.root),
        "setup",
        "claude-code",
        "--agent",
        "ella",
        "--keys-home",
        str(env.keys_home),
        cwd=project,
    )
    assert wired.returncode == 0, wired.stderr
    held = env.run(
        "claim",
        "src/**",
        "--agent",
        "lyra",
        "--reason",
        "rewriting the parser",
        "--ttl",
        "1h",
        "--project",
        str(project),
        "--json",
    ).json()
    debug = tmp_path / "claude-debug.txt"
    edit = ToolUse("Write", {"file_path": str(target), "content": "ella's parser\n"})
    with AnthropicModel() as model:
        proc = _claude(
            project,
            runtime_env(
                home,
                ANTHROPIC_BASE_URL=model.url,
                ANTHROPIC_API_KEY="sk-ant-test",
                CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                DISABLE_AUTOUPDATER="1",
            ),
            debug,
        )
        try:
            model.add(edit, Text("lyra holds it; I will ask."))
            _prompt(proc, "Rewrite src/parser.py.")
            turns = model.turns()
            assert len(turns) >= 2, [t.text()[:200] for t in turns]
            told = user_text(turns[1])  # the tool's result, as the model got it
            assert target.read_text() == "lyra's parser\n", "the edit went through"
            for words in ("held by lyra", "rewriting the parser", held["id"], "ask lyra"):
                assert words in told, (words, told)

            env.run("claim", "release", held["id"], "--agent", "lyra")
            before = len(model.turns())
            model.add(edit, Text("Written."))
            _prompt(proc, "lyra released it: write it now.")
            after = model.turns()[before:]
            assert len(after) >= 2
            assert target.read_text() == "ella's parser\n", user_text(after[1])
            assert "held by" not in user_text(after[1])
        finally:
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            proc.stdin.close()
            try:
                assert proc.wait(timeout=120) == 0
            finally:
                proc.stdout.close()
                proc.stderr.close()
    hooks = debug.read_text(errors="replace") if debug.is_file() else ""
    assert "PreToolUse" in hooks  # (the runtime's own log: the hook ran)
