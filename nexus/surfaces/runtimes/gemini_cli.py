"""Gemini CLI: the MCP server and the hooks in ``settings.json`` (``mcpServers.nexus``; ``hooks``, Claude
Code's shape with Gemini's event names and timeouts in milliseconds), the rules block in ``GEMINI.md``.
User scope: ``~/.gemini/``; project scope: ``<project>/.gemini/settings.json`` and
``<project>/GEMINI.md``.

Gemini CLI runs no hook and no headless session in a folder it does not trust, and in headless mode it
silently drops an MCP tool that would ask for confirmation; so ``nexus setup`` writes, on the user's
behalf and saying so in one line each: the folder's trust (``~/.gemini/trustedFolders.json``), ``trust``
on nexus's own server entry (its tools run without asking), and, in project scope, the project hooks
nexus wrote as already seen (``~/.gemini/trusted_hooks.json``; else Gemini warns about them once).
``--skip folder-trust|tool-trust|hook-trust`` leaves each out.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ...errors import InputError
from . import gemini_cli_view, rules
from .configfiles import Edit, block_merge, hook_groups, json_merge, read_text, table
from .wiring import Change, Finding, Wired, Wiring, wired_from_server

VERSION = "0.61.0"  # the version these files were checked against, end to end

# Gemini CLI event -> nexus-hook event (and its matchers: Gemini compares a SessionStart or PreCompress
# matcher with the source or trigger as an equal string). Gemini 0.61 fires PreCompress before it
# decides whether to compress, before every model call, so only a manual compression (`/compress`) is
# wired. SessionStart is wired for a resumed or cleared session only: a new one's brief comes with its
# first prompt (BeforeAgent), each hook Gemini runs before the first model request costing it about
# 75-125 ms whatever the hook does.
EVENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "SessionStart": ("session-start", ("resume", "clear")),
    "BeforeAgent": ("prompt", ()),
    "PreCompress": ("pre-compact", ("manual",)),
    "SessionEnd": ("session-end", ()),
}
TIMEOUT_MS = 30_000

WHY = {
    "folder-trust": "Gemini CLI runs no hook and no headless session in a folder it does not trust",
    "tool-trust": "headless Gemini CLI silently drops MCP tools that would ask first",
    "hook-trust": "else Gemini CLI warns about nexus's project hooks once",
}


def gemini_home(w: Wiring) -> Path:
    return w.home / ".gemini"


def _edit_settings(w: Wiring) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        servers = table(data, "mcpServers")
        server: dict[str, Any] = dict(w.mcp_server())
        if isinstance(servers.get("nexus"), dict) and servers["nexus"].get("trust") is True:
            server["trust"] = True  # written on the user's behalf (tool-trust): kept
        servers["nexus"] = server
        hooks = table(data, "hooks")
        for name, (event, matchers) in EVENTS.items():
            groups = hook_groups(
                hooks.get(name),
                w.hook_command(event),
                w.hook_marker(event),
                [{"matcher": m} for m in matchers] or None,
            )
            for group in groups:  # Gemini's timeouts are in milliseconds
                for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                    if isinstance(hook, dict) and w.hook_marker(event) in str(hook.get("command", "")):
                        hook["timeout"] = TIMEOUT_MS
            hooks[name] = groups

    return edit


def _trust_folder(w: Wiring) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        if not gemini_cli_view.folder_trusted(data, w.project):
            data[str(w.project)] = "TRUST_FOLDER"

    return edit


def _trust_hooks(w: Wiring) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        current = data.get(str(w.project))
        if current is not None and not isinstance(current, list):
            raise InputError(f"the entry for {w.project} is not a list")
        have = list(current or [])
        data[str(w.project)] = have + [k for k in hook_keys(w) if k not in have]

    return edit


def _trust_tools(data: dict[str, Any]) -> None:
    table(table(data, "mcpServers"), "nexus")["trust"] = True


def changes(w: Wiring) -> list[Change]:
    home = gemini_home(w)
    folder = home if w.scope == "user" else w.project / ".gemini"
    settings = folder / "settings.json"
    memo = home / "GEMINI.md" if w.scope == "user" else w.project / "GEMINI.md"
    planned = [
        Change(
            settings,
            "MCP server `nexus`; hooks: " + ", ".join(EVENTS),
            json_merge(settings, _edit_settings(w)),
        ),
        Change(memo, "the nexus rules block", block_merge(rules.text(w.agent, injected=True))),
        Change(
            settings,
            "`trust` on the nexus server (its tools run without asking)",
            json_merge(settings, _trust_tools),
            behalf="tool-trust",
            why=WHY["tool-trust"],
        ),
        Change(
            home / "trustedFolders.json",
            f"trust for the folder {w.project}",
            json_merge(home / "trustedFolders.json", _trust_folder(w)),
            behalf="folder-trust",
            why=WHY["folder-trust"],
        ),
    ]
    if w.scope == "project":
        seen = home / "trusted_hooks.json"
        planned.append(
            Change(
                seen,
                "nexus's project hooks marked as seen",
                json_merge(seen, _trust_hooks(w)),
                behalf="hook-trust",
                why=WHY["hook-trust"],
            )
        )
    return planned


def wired(scope: str, project: Path, home: Path, env: dict[str, str]) -> Wired | None:
    """The agent an existing wiring acts as: the `nexus` server of this scope's settings.json."""
    settings = (home / ".gemini" if scope == "user" else project / ".gemini") / "settings.json"
    return wired_from_server(loads(read_text(settings)).get("mcpServers", {}).get("nexus"), settings)


def check(w: Wiring) -> list[Finding]:
    """Gemini CLI's own view (``gemini_cli_view``)."""
    return gemini_cli_view.check(w, shutil.which(gemini_cli_view.PROGRAM, path=w.env.get("PATH")))


def hook_keys(w: Wiring) -> list[str]:
    """How Gemini CLI names nexus's hooks in ``trusted_hooks.json`` (``name:command``, no name)."""
    return [f":{w.hook_command(event)}" for event, _ in EVENTS.values()]


def loads(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
