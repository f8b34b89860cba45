"""``nexus setup --check gemini-cli``: what Gemini CLI itself makes of the wiring.

Gemini CLI runs no hook (and no headless session) in a folder it does not trust, honours
``hooksConfig.enabled`` and ``hooksConfig.disabled`` (by command), and in headless mode drops an MCP
tool that would ask first. It has no command that lists hooks; ``gemini mcp list`` starts each server
as a session would and says whether it is connected. So the check reads Gemini's own settings (user,
then project) the way it merges them, and asks the installed program about the server.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from .configfiles import read_text
from .wiring import Finding, Wiring

PROGRAM = "gemini"
# Gemini CLI event -> nexus-hook event (the events `gemini_cli.py` wires)
EVENTS = {
    "SessionStart": "session-start",
    "BeforeAgent": "prompt",
    "PreCompress": "pre-compact",
    "SessionEnd": "session-end",
}


def _settings(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_text(path) or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


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


def check(w: Wiring, program: str | None, timeout: float = 90.0) -> list[Finding]:
    """Gemini CLI's view of ``w``: its settings as it merges them, and ``gemini mcp list``."""
    setup = w.setup_command("gemini-cli")
    home = w.home / ".gemini"
    user, project = _settings(home / "settings.json"), _settings(w.project / ".gemini" / "settings.json")
    findings = []
    trusted = folder_trusted(_settings(home / "trustedFolders.json"), w.project)
    findings.append(
        Finding(True, f"Gemini CLI trusts {w.project}")
        if trusted
        else Finding(False, f"Gemini CLI does not trust {w.project}: it runs no hook there", setup)
    )
    merged_hooks = {**(user.get("hooks") or {}), **(project.get("hooks") or {})}
    config = {**(user.get("hooksConfig") or {}), **(project.get("hooksConfig") or {})}
    disabled = set((user.get("hooksConfig") or {}).get("disabled") or []) | set(
        (project.get("hooksConfig") or {}).get("disabled") or []
    )
    missing = [
        name
        for name, event in EVENTS.items()
        if not any(
            w.hook_marker(event) in str(h.get("command", "")) and h.get("command") not in disabled
            for g in merged_hooks.get(name) or []
            if isinstance(g, dict)
            for h in g.get("hooks") or []
            if isinstance(h, dict)
        )
    ]
    if config.get("enabled") is False:
        findings.append(Finding(False, "Gemini CLI has hooks switched off (hooksConfig.enabled)", setup))
    elif missing:
        findings.append(
            Finding(False, f"Gemini CLI has no enabled nexus hook for {', '.join(missing)}", setup)
        )
    else:
        findings.append(Finding(True, f"Gemini CLI runs nexus's hooks: {', '.join(EVENTS)}"))
    server = ((project if w.scope == "project" else user).get("mcpServers") or {}).get("nexus") or {}
    if not server.get("trust"):
        findings.append(
            Finding(False, "nexus's tools are not trusted: headless Gemini CLI drops them", setup)
        )
    findings.append(_connected(w, program, timeout, setup))
    return findings


def _connected(w: Wiring, program: str | None, timeout: float, setup: str) -> Finding:
    if program is None:
        return Finding(
            False, "Gemini CLI not found on PATH: its view cannot be checked", "npm i -g @google/gemini-cli"
        )
    try:
        proc = subprocess.run(
            [program, "mcp", "list"],
            cwd=w.project,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return Finding(False, f"`gemini mcp list` did not answer: {err}", setup)
    line = next(
        (x for x in (proc.stdout + proc.stderr).splitlines() if " nexus:" in x or x.startswith("nexus:")), ""
    )
    if "Connected" in line and "Disconnected" not in line:
        return Finding(True, "Gemini CLI connects to the `nexus` MCP server")
    return Finding(False, f"Gemini CLI does not connect to `nexus`: {line.strip() or 'not listed'}", setup)
