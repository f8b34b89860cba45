"""``nexus setup --check opencode``: what opencode itself makes of the wiring, asked of the installed
program in the project folder (opencode takes its project from ``$PWD``, so it is started through a
shell that changes into it): ``opencode debug config`` (the configuration as opencode resolves its
layers: the nexus plugin loaded, the ``nexus`` server enabled) and ``opencode mcp list`` (the server
started and connected)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .wiring import Finding, Wiring

PROGRAM = "opencode"


def _in_project(program: str, project: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", str(project), program, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def check(w: Wiring, program: str | None, plugin: Path, timeout: float = 120.0) -> list[Finding]:
    """opencode's view of ``w`` (``plugin``: where nexus's plugin is)."""
    setup = w.setup_command("opencode")
    if program is None:
        return [
            Finding(False, "opencode not found on PATH: its view cannot be checked", "npm i -g opencode-ai")
        ]
    try:
        shown = _in_project(program, w.project, "debug", "config", timeout=timeout)
        config = json.loads(shown.stdout)
        listed = _in_project(program, w.project, "mcp", "list", timeout=timeout)
    except (OSError, ValueError, subprocess.TimeoutExpired) as err:
        return [Finding(False, f"opencode did not answer (`opencode debug config`): {err}", setup)]
    plugins = [str(p) for p in config.get("plugin") or []]
    findings = [
        Finding(True, f"opencode loads the nexus plugin ({plugin})")
        if any(p.endswith(str(plugin)) for p in plugins)
        else Finding(False, f"opencode does not load the nexus plugin {plugin}", setup)
    ]
    server = (config.get("mcp") or {}).get("nexus") or {}
    line = next((x for x in listed.stdout.splitlines() if " nexus" in x), "")
    if not server or server.get("enabled") is False:
        findings.append(Finding(False, "opencode has no enabled `nexus` MCP server here", setup))
    elif "connected" not in line or "disconnected" in line:
        findings.append(
            Finding(False, f"opencode does not connect to `nexus`: {line.strip() or 'not listed'}", setup)
        )
    else:
        findings.append(Finding(True, "opencode connects to the `nexus` MCP server"))
    return findings
