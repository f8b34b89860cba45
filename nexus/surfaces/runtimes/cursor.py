"""Cursor: the MCP server in ``.cursor/mcp.json`` (project) or ``~/.cursor/mcp.json`` (user), same
``mcpServers`` shape as Claude Code's ``.mcp.json``, and an always-applied rule
``.cursor/rules/nexus.mdc`` (project rules are files; user rules live in Cursor's settings, so user
scope writes the rule into the project too when one is given)."""

from __future__ import annotations

from . import rules
from .claude_code import add_mcp
from .configfiles import exact, json_merge
from .wiring import Change, Wiring


def changes(w: Wiring) -> list[Change]:
    mcp = (w.home if w.scope == "user" else w.project) / ".cursor" / "mcp.json"
    rule = w.project / ".cursor" / "rules" / "nexus.mdc"
    body = (
        "---\ndescription: Work with the other agents through the shared nexus vault\n"
        "alwaysApply: true\n---\n" + rules.text(w.agent, injected=False)
    )
    return [
        Change(mcp, "MCP server `nexus`", json_merge(mcp, add_mcp(w))),
        Change(rule, "the nexus rules (always applied)", exact(body)),
    ]
