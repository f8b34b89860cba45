"""Claude Code: MCP in ``.mcp.json`` (project) or ``~/.claude.json`` (user), hooks in
``.claude/settings.json`` (or ``~/.claude/settings.json``), the rules block in ``CLAUDE.md``.

Claude Code ignores ``mcpServers`` inside a settings file; it reads project servers from ``.mcp.json``
and user servers from the top-level ``mcpServers`` of ``~/.claude.json`` (what
``claude mcp add --scope user`` writes). Hooks run ``nexus-hook`` with the vault and keys on the
command line, so they work from any folder.
"""

from __future__ import annotations

from typing import Any

from . import rules
from .configfiles import Edit, block_merge, hook_groups, json_merge, table
from .wiring import Change, Wiring

# Claude Code event -> nexus-hook event
EVENTS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "prompt",
    "PreCompact": "pre-compact",
    "Stop": "stop",
    "SessionEnd": "session-end",
}


def add_hooks(w: Wiring, events: dict[str, str], extra: dict[str, tuple[str, ...]] | None = None) -> Edit:
    """Put nexus's hook command in each event's list (Claude-style ``hooks`` object)."""

    def edit(data: dict[str, Any]) -> None:
        hooks = table(data, "hooks")
        for name, event in events.items():
            hooks[name] = hook_groups(
                hooks.get(name), w.hook_command(event, *(extra or {}).get(event, ())), w.hook_marker(event)
            )

    return edit


# Claims (docs/claims.md): nexus's pre-tool hook on the file-editing tools denies an edit of a path
# another agent holds exclusively.
PRE_TOOL = ("PreToolUse", "pre-tool", "Edit|Write|MultiEdit|NotebookEdit")


def with_pre_tool(w: Wiring, edit: Edit) -> Edit:
    """``edit``, then nexus's pre-tool hook (``PRE_TOOL``) in the ``hooks`` object."""

    def both(data: dict[str, Any]) -> None:
        edit(data)
        event, hook, matcher = PRE_TOOL
        hooks = table(data, "hooks")
        hooks[event] = hook_groups(
            hooks.get(event), w.hook_command(hook), w.hook_marker(hook), {"matcher": matcher}
        )

    return both


def add_mcp(w: Wiring, key: str = "mcpServers") -> Edit:
    """Put the ``nexus`` server in the ``mcpServers`` object (Claude Code, Cursor)."""

    def edit(data: dict[str, Any]) -> None:
        table(data, key)["nexus"] = w.mcp_server()

    return edit


def changes(w: Wiring) -> list[Change]:
    if w.scope == "user":
        mcp, settings, memo = (
            w.home / ".claude.json",
            w.home / ".claude" / "settings.json",
            w.home / ".claude" / "CLAUDE.md",
        )
    else:
        mcp, settings, memo = (
            w.project / ".mcp.json",
            w.project / ".claude" / "settings.json",
            w.project / "CLAUDE.md",
        )
    return [
        Change(mcp, "MCP server `nexus`", json_merge(mcp, add_mcp(w))),
        Change(
            settings,
            "hooks: " + ", ".join([*EVENTS, PRE_TOOL[0]]),
            json_merge(settings, with_pre_tool(w, add_hooks(w, EVENTS))),
        ),
        Change(memo, "the nexus rules block", block_merge(rules.text(w.agent, injected=True))),
    ]
