"""The Claude Code wiring in ``agents/claude-code/`` cannot drift from what ``nexus setup claude-code``
writes: the example files are what setup writes for an example agent, vault and keys folder, byte for
byte as JSON; the plugin (``agents/claude-code/plugin/``) has the same hooks (events, matchers,
``nexus-hook`` commands, timeouts) and the same MCP server, with the agent, vault and keys taken from
the environment instead of the command line. What a plugin cannot carry (the allow rule: a plugin's
tools are ``mcp__plugin_<plugin>_<server>__*``, and a plugin cannot grant permissions; the rules block
of ``CLAUDE.md``) is said, with the plugin's own rule, in ``docs/agents.md`` and ``agents/README.md``."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from nexus.surfaces.runtimes import claude_code
from nexus.surfaces.runtimes.wiring import Wiring

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "agents" / "claude-code"
PLUGIN = AGENTS / "plugin"
EXAMPLE = Wiring(
    agent="ella",
    vault=Path("/path/to/vault"),
    keys_home=Path("/home/you/.config/nexus"),
    scope="project",
    project=Path("/path/to/project"),
    home=Path("/home/you"),
    nexus="nexus",
    hook="nexus-hook",
)
FROM_ENV = {"--agent": "${NEXUS_AGENT}", "--vault": "${NEXUS_VAULT}", "--home": "${NEXUS_HOME}"}


def written(w: Wiring) -> dict[Path, str]:
    """Every file ``nexus setup claude-code`` writes into an empty home and project, and its text."""
    texts: dict[Path, str] = {}
    for change in claude_code.changes(w):
        texts[change.path] = change.merge(texts.get(change.path))
    return texts


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def from_the_environment(command: str) -> str:
    """A hook command of setup's with the agent, vault and keys left to the environment (what
    ``nexus-hook`` reads when its options are not given: ``NEXUS_AGENT``, ``NEXUS_VAULT``,
    ``NEXUS_HOME``)."""
    words = shlex.split(command)
    kept = []
    while words:
        word = words.pop(0)
        if word in FROM_ENV:
            words.pop(0)
            continue
        kept.append(word)
    return shlex.join(kept)


def test_the_example_files_are_what_setup_writes() -> None:
    texts = written(EXAMPLE)
    mcp, settings, _ = claude_code.files(EXAMPLE)
    assert read(AGENTS / ".mcp.json") == json.loads(texts[mcp])
    assert read(AGENTS / "settings.json") == json.loads(texts[settings])


def test_the_plugin_has_the_hooks_setup_writes() -> None:
    _, settings, _ = claude_code.files(EXAMPLE)
    hooks = json.loads(written(EXAMPLE)[settings])["hooks"]
    expected = {
        event: [
            {**group, "hooks": [{**h, "command": from_the_environment(h["command"])} for h in group["hooks"]]}
            for group in groups
        ]
        for event, groups in hooks.items()
    }
    plugin = read(PLUGIN / "hooks" / "hooks.json")["hooks"]
    assert plugin == expected
    # (the moments themselves: no Stop hook, the claim check before an edit)
    assert "Stop" not in plugin and plugin["PreToolUse"][0]["matcher"] == claude_code.MATCHERS["PreToolUse"]
    assert plugin["SessionStart"][0]["hooks"][0]["command"] == "nexus-hook session-start"


def test_the_plugin_has_the_mcp_server_setup_writes() -> None:
    mcp, _, _ = claude_code.files(EXAMPLE)
    server = json.loads(written(EXAMPLE)[mcp])["mcpServers"][claude_code.SERVER]
    args = [FROM_ENV.get(prev, a) for prev, a in zip(["", *server["args"]], server["args"], strict=False)]
    env = {"NEXUS_VAULT": "${NEXUS_VAULT}", "NEXUS_HOME": "${NEXUS_HOME}"}
    assert set(server["env"]) == set(env)
    plugin = read(PLUGIN / ".mcp.json")["mcpServers"]
    assert plugin == {claude_code.SERVER: {**server, "args": args, "env": env}}


def test_what_the_plugin_cannot_carry_is_said_with_its_own_allow_rule() -> None:
    """A plugin's server ``S`` of plugin ``P`` offers its tools as ``mcp__plugin_P_S__*`` (Claude Code
    2.1), so setup's rule (``mcp__nexus``) does not cover them, and a plugin cannot grant permissions:
    the docs give the rule to put in the user's settings."""
    name = read(PLUGIN / ".claude-plugin" / "plugin.json")["name"]
    (server,) = read(PLUGIN / ".mcp.json")["mcpServers"]
    rule = f"mcp__plugin_{name}_{server}"
    allow = read(AGENTS / "settings.json")["permissions"]["allow"]
    assert allow == [claude_code.ALLOW] and rule != claude_code.ALLOW
    for doc in (ROOT / "docs" / "agents.md", ROOT / "agents" / "README.md"):
        assert f'"permissions": {{"allow": ["{rule}"]}}' in doc.read_text(encoding="utf-8"), doc
    assert not (PLUGIN / "settings.json").exists()  # (it could not hold permissions anyway)
