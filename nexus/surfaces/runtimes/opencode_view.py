"""``nexus setup --check opencode``: what opencode itself makes of the wiring, asked of the installed
program in the project folder (opencode takes its project from ``$PWD``, so it is started through a
shell that changes into it): ``opencode debug config`` (the configuration as opencode resolves its
layers: the nexus plugin loaded, the ``nexus`` server enabled) and ``opencode mcp list`` (the server
started and connected)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from . import opencode
from .codex_view import Finding, Wired
from .configfiles import read_text
from .wiring import Wiring

PROGRAM = "opencode"


def wired(project: Path, home: Path, env: dict[str, str]) -> Wired | None:
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    for scope, path in (
        ("project", project / "opencode.json"),
        ("user", base / "opencode" / "opencode.json"),
    ):
        try:
            data = json.loads(read_text(path) or "{}")
        except ValueError:
            continue
        server = (data.get("mcp") or {}).get("nexus") if isinstance(data, dict) else None
        command = [str(c) for c in (server or {}).get("command") or []]
        if "--agent" in command[:-1]:
            server_env = (server or {}).get("environment") or {}
            agent = command[command.index("--agent") + 1]
            return Wired(agent, server_env.get("NEXUS_VAULT"), server_env.get("NEXUS_HOME"), scope)
    return None


def _in_project(program: str, project: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", str(project), program, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def check(w: Wiring, program: str | None, timeout: float = 120.0) -> list[Finding]:
    setup = f"nexus setup opencode --agent {w.agent}" + (" --scope user" if w.scope == "user" else "")
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
    home = opencode.config_dir(w)
    plugin = (
        home / "plugin" / "nexus.js" if w.scope == "user" else w.project / ".opencode" / "plugin" / "nexus.js"
    )
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
