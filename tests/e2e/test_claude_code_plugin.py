"""Claude Code (``runtime_claude.VERSION``) with nexus as a plugin (``agents/claude-code/plugin``, loaded with
``--plugin-dir``) instead of ``nexus setup``: the agent, vault and keys come from the ``env`` of the
person's settings, the brief reaches the first request (the plugin's SessionStart hook), and a tool
call through the plugin's MCP server leaves a signed entry once the settings allow the plugin's tools,
``mcp__plugin_nexus_nexus`` (what docs/agents.md tells the person to add: a plugin cannot grant it).
Without that rule the same call is refused and nothing is written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import Env

from nexus.ledger import log

from .conftest import ROOT
from .model_anthropic import AnthropicModel, Text, ToolUse
from .runtime_claude import claude, model_env

pytestmark = pytest.mark.e2e

PLUGIN = ROOT / "agents" / "claude-code" / "plugin"
TOOLS = "mcp__plugin_nexus_nexus"  # Claude Code's name for the tools of the plugin nexus's server nexus


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "not-allowed"])
def test_the_plugin_brings_the_brief_and_the_tools(env: Env, tmp_path: Path, allowed: bool) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".claude").mkdir(parents=True)
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    settings: dict[str, object] = {
        "env": {"NEXUS_AGENT": "ella", "NEXUS_VAULT": str(env.vault.root), "NEXUS_HOME": str(env.keys_home)}
    }
    if allowed:
        settings["permissions"] = {"allow": [TOOLS]}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    asked = env.append("lyra", "zanzibar: who owns the tokenizer?").located.entry.id
    debug = tmp_path / "claude-debug.txt"
    record = {"channel": "build", "type": "note", "summary": "kestrel started"}
    with AnthropicModel() as model:
        model.add(
            ToolUse("ToolSearch", {"query": f"select:{TOOLS}__log_append"}),
            ToolUse(f"{TOOLS}__log_append", record),
            Text("Recorded."),
        )
        ran = subprocess.run(
            [
                str(claude()),
                "-p",
                "Start the kestrel parser, and record it.",
                "--plugin-dir",
                str(PLUGIN),
                "--output-format",
                "json",
                "--debug-file",
                str(debug),
            ],
            cwd=project,
            env=model_env(home, model),
            capture_output=True,
            text=True,
            timeout=240,
            stdin=subprocess.DEVNULL,
        )
    assert ran.returncode == 0, ran.stderr[-2000:]
    result = json.loads(ran.stdout)
    first = model.turns()[0]
    assert "# nexus brief for ella" in first.text() and asked in first.text(), "no brief from the plugin"
    mine = [x.entry.summary for x in log.tail(env.vault, 20) if x.entry.agent == "ella"]
    denied = [d["tool_name"] for d in result.get("permission_denials") or []]
    if allowed:
        assert denied == [] and mine == ["kestrel started"], (result, mine)
        verify = env.run("verify", check=False)
        assert verify.returncode == 0, verify.stdout + verify.stderr
    else:
        assert denied == [f"{TOOLS}__log_append"] and mine == [], (result, mine)
