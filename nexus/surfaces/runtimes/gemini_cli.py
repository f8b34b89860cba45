"""Gemini CLI: the MCP server and the hooks in ``settings.json`` (``mcpServers.nexus``; ``hooks``, Claude
Code's shape with Gemini's event names and timeouts in milliseconds), the rules block in ``GEMINI.md``.
User scope: ``~/.gemini/``; project scope: ``<project>/.gemini/settings.json`` and
``<project>/GEMINI.md``.

Gemini CLI runs no hook and no headless session in a folder it does not trust, and in headless mode it
silently drops an MCP tool that would ask for confirmation; so ``nexus setup`` writes, on the user's
behalf and saying so in one line each: the folder's trust (``~/.gemini/trustedFolders.json``), ``trust``
on nexus's own server entry (its tools run without asking), and, in project scope, the project hooks
nexus wrote as already seen (``~/.gemini/trusted_hooks.json``; else Gemini warns about them once).
``--leave-out folder-trust|tool-trust|hook-trust`` leaves each out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...errors import InputError
from . import rules
from .configfiles import Edit, block_merge, hook_groups, json_merge, table
from .wiring import Change, Wiring

VERSION = "0.61.0"  # the version these files were checked against, end to end

# Gemini CLI event -> nexus-hook event (and a matcher). Gemini 0.61 fires PreCompress before it decides
# whether to compress, before every model call, so only a manual compression (`/compress`) is wired.
EVENTS = {
    "SessionStart": ("session-start", None),
    "BeforeAgent": ("prompt", None),
    "PreCompress": ("pre-compact", "manual"),
    "SessionEnd": ("session-end", None),
}
TIMEOUT_MS = 30_000

LEAVE_OUT = {
    "folder-trust": "trust for this folder (Gemini CLI runs no hook and no headless session in an "
    "untrusted folder)",
    "tool-trust": "`trust` on the nexus server (headless Gemini CLI drops tools that would ask first)",
    "hook-trust": "nexus's project hooks marked as seen (else Gemini CLI warns about them once)",
}


def gemini_home(w: Wiring) -> Path:
    return w.home / ".gemini"


def _edit_settings(w: Wiring) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        server: dict[str, Any] = dict(w.mcp_server())
        if "tool-trust" not in w.leave_out:
            server["trust"] = True
        table(data, "mcpServers")["nexus"] = server
        hooks = table(data, "hooks")
        for name, (event, matcher) in EVENTS.items():
            groups = hook_groups(
                hooks.get(name),
                w.hook_command(event),
                w.hook_marker(event),
                {"matcher": matcher} if matcher else None,
            )
            for group in groups:  # Gemini's timeouts are in milliseconds
                for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                    if isinstance(hook, dict) and w.hook_marker(event) in str(hook.get("command", "")):
                        hook["timeout"] = TIMEOUT_MS
            hooks[name] = groups

    return edit


def _trust_folder(w: Wiring) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        if not folder_trusted(data, w.project):
            data[str(w.project)] = "TRUST_FOLDER"

    return edit


def folder_trusted(data: dict[str, Any], folder: Path) -> bool:
    """Whether ``trustedFolders.json`` trusts ``folder``: the folder or an ancestor ``TRUST_FOLDER``,
    or a child of a ``TRUST_PARENT`` folder."""
    for path, level in data.items():
        p = Path(path)
        if level == "TRUST_FOLDER" and (folder == p or p in folder.parents):
            return True
        if level == "TRUST_PARENT" and (folder == p.parent or p.parent in folder.parents):
            return True
    return False


def _trust_hooks(w: Wiring) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        current = data.get(str(w.project))
        if current is not None and not isinstance(current, list):
            raise InputError(f"the entry for {w.project} is not a list")
        have = list(current or [])
        data[str(w.project)] = have + [k for k in hook_keys(w) if k not in have]

    return edit


def changes(w: Wiring) -> list[Change]:
    unknown = sorted(set(w.leave_out) - set(LEAVE_OUT))
    if unknown:
        raise InputError(
            f"nothing called {unknown[0]!r} to leave out for gemini-cli: use {', '.join(LEAVE_OUT)}"
        )
    home = gemini_home(w)
    folder = home if w.scope == "user" else w.project / ".gemini"
    settings = folder / "settings.json"
    memo = home / "GEMINI.md" if w.scope == "user" else w.project / "GEMINI.md"
    what = "MCP server `nexus`; hooks: " + ", ".join(EVENTS)
    if "tool-trust" not in w.leave_out:
        what += f"\n  on your behalf: {LEAVE_OUT['tool-trust']} (leave out: --leave-out tool-trust)"
    planned = [
        Change(settings, what, json_merge(settings, _edit_settings(w))),
        Change(memo, "the nexus rules block", block_merge(rules.text(w.agent, injected=True))),
    ]
    if "folder-trust" not in w.leave_out:
        trusted = home / "trustedFolders.json"
        note = f"on your behalf: {LEAVE_OUT['folder-trust']} (leave out: --leave-out folder-trust)"
        planned.append(Change(trusted, f"{w.project}\n  {note}", json_merge(trusted, _trust_folder(w))))
    if w.scope == "project" and "hook-trust" not in w.leave_out:
        seen = home / "trusted_hooks.json"
        note = f"on your behalf: {LEAVE_OUT['hook-trust']} (leave out: --leave-out hook-trust)"
        planned.append(Change(seen, f"{w.project}\n  {note}", json_merge(seen, _trust_hooks(w))))
    return planned


def hook_keys(w: Wiring) -> list[str]:
    """How Gemini CLI names nexus's hooks in ``trusted_hooks.json`` (``name:command``, no name)."""
    return [f":{w.hook_command(event)}" for event, _ in EVENTS.values()]


def loads(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
