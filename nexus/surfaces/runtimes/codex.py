"""Codex: the MCP server in ``config.toml`` (``[mcp_servers.nexus]``) with hooks switched on
(``[features] codex_hooks = true``), the hooks in ``hooks.json`` (Claude Code's schema and events;
Codex has no SessionEnd, so its Stop hook also retains the session's decisions), and the rules block in
``AGENTS.md``. User scope: ``~/.codex/``; project scope: ``<project>/.codex/`` and ``<project>/AGENTS.md``.
"""

from __future__ import annotations

from typing import Any

from . import rules
from .claude_code import add_hooks
from .configfiles import block_merge, json_merge, toml_merge
from .wiring import Change, Wiring

EVENTS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "prompt",
    "PreCompact": "pre-compact",
    "Stop": "stop",
}


def changes(w: Wiring) -> list[Change]:
    folder = w.home / ".codex" if w.scope == "user" else w.project / ".codex"
    agents_md = w.home / ".codex" / "AGENTS.md" if w.scope == "user" else w.project / "AGENTS.md"
    config, hooks = folder / "config.toml", folder / "hooks.json"
    server = w.mcp_server()

    def edit(doc: Any) -> None:
        import tomlkit
        from tomlkit.items import Table

        from ...errors import InputError

        for key in ("mcp_servers", "features"):
            if key in doc and not isinstance(doc[key], Table | dict):
                raise InputError(f"`{key}` is not a table")
        servers = doc.get("mcp_servers")
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            doc["mcp_servers"] = servers
        table = tomlkit.table()
        table["command"] = server["command"]
        table["args"] = server["args"]
        env = tomlkit.inline_table()
        env.update(server["env"])  # type: ignore[call-overload]
        table["env"] = env
        table["startup_timeout_sec"] = 20
        current = servers.get("nexus")
        if current is None or not hasattr(current, "unwrap") or current.unwrap() != table.unwrap():
            servers["nexus"] = table
        features = doc.get("features")
        if features is None:
            features = tomlkit.table()
            doc["features"] = features
        if features.get("codex_hooks") is not True:
            features["codex_hooks"] = True

    return [
        Change(config, "MCP server `nexus`, hooks switched on", toml_merge(config, edit)),
        Change(
            hooks,
            "hooks: " + ", ".join(EVENTS),
            json_merge(hooks, add_hooks(w, EVENTS, {"stop": ("--retain",)})),
        ),
        Change(agents_md, "the nexus rules block", block_merge(rules.text(w.agent, injected=True))),
    ]
