"""Claims, end to end in Claude Code 2.1.332: the real program, wired by `nexus setup claude-code` alone,
talking to a scripted Anthropic Messages server on 127.0.0.1. Another agent's exclusive claim stops
the model's `Write` of that file (the PreToolUse hook's deny), and the model is told why: who holds it,
the reason, the claim; once the claim is released the same edit goes through."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import Env

from .model_anthropic import AnthropicModel, Text, ToolUse, user_text
from .runtime_claude import Session, model_env, setup

pytestmark = pytest.mark.e2e

# edits accepted without asking, as a person who lets the agent write files runs it: only the hook can stop
# the edit
ACCEPT_EDITS = ("--permission-mode", "acceptEdits")


def test_another_agents_claim_stops_the_models_edit_until_released(env: Env, tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    (project / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    target = project / "src" / "parser.py"
    target.write_text("lyra's parser\n")
    setup(env, home, project)
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
        session = Session(project, model_env(home, model), debug, *ACCEPT_EDITS)
        try:
            model.add(edit, Text("lyra holds it; I will ask."))
            session.prompt("Rewrite src/parser.py.", timeout=180)
            turns = model.turns()
            assert len(turns) >= 2, [t.text()[:200] for t in turns]
            told = user_text(turns[1])  # the tool's result, as the model got it
            assert target.read_text() == "lyra's parser\n", "the edit went through"
            for words in ("held by lyra", "rewriting the parser", held["id"], "ask lyra"):
                assert words in told, (words, told)

            env.run("claim", "release", held["id"], "--agent", "lyra")
            before = len(model.turns())
            model.add(edit, Text("Written."))
            session.prompt("lyra released it: write it now.", timeout=180)
            after = model.turns()[before:]
            assert len(after) >= 2
            assert target.read_text() == "ella's parser\n", user_text(after[1])
            assert "held by" not in user_text(after[1])
        finally:
            assert session.close() == 0
    hooks = debug.read_text(errors="replace") if debug.is_file() else ""
    assert "PreToolUse" in hooks  # (the runtime's own log: the hook ran)
