"""``nexus setup --check codex``: what Codex itself makes of the wiring, asked of the installed program.

nexus's own entries being in place is not enough: Codex skips a hook it does not trust, ignores a
project's ``.codex/`` until the project is trusted, and starts a turn without a slow MCP server that is
not ``required``. So the check runs ``codex app-server`` (the JSON-RPC server Codex's own TUI and IDE
clients use) in the folder the agent works in, and asks it:

- ``hooks/list``: each nexus hook present, enabled and ``trusted``;
- its configuration warnings: the project trusted (project scope);
- ``thread/start`` (an ephemeral thread: no model request, no hook runs) then ``mcpServerStatus/list``:
  the ``nexus`` server connected with its tools, ``required`` (so Codex waits for it before the first
  turn), within Codex's start-up wait (``startup_timeout_sec``).

Each finding is one line; a missing piece names the one command that adds it.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from .wiring import Finding, Wiring

PROGRAM = "codex"


class AppServer:
    """A short-lived ``codex app-server`` over stdio (JSON lines)."""

    def __init__(self, program: str, cwd: Path, timeout: float) -> None:
        self.timeout = timeout
        self.notes: list[dict[str, Any]] = []
        self._replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self._proc = subprocess.Popen(
            [program, "app-server"],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._id = 0

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "method" in msg:
                self.notes.append(msg)
            else:
                self._replies.put(msg)

    def send(self, msg: dict[str, Any]) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(msg) + "\n")
        self._proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        self.send({"id": self._id, "method": method, "params": params})
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._replies.get(timeout=max(0.01, deadline - time.monotonic()))
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error'].get('message', reply['error'])}")
                result: dict[str, Any] = reply.get("result") or {}
                return result

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(timeout=5)
        if self._proc.stdout:
            self._proc.stdout.close()


def check(w: Wiring, program: str | None, events: dict[str, str], timeout: float = 60.0) -> list[Finding]:
    """Codex's view of ``w``, asked of ``program`` (the ``codex`` executable; None: not found)."""
    setup = w.setup_command("codex")
    if program is None:
        return [
            Finding(
                False, "Codex not found on PATH: its view cannot be checked", "npm install -g @openai/codex"
            )
        ]
    cwd = w.project if w.scope == "project" else w.home
    server = AppServer(program, cwd, timeout)
    try:
        server.request("initialize", {"clientInfo": {"name": "nexus-setup-check", "version": "1"}})
        server.send({"method": "initialized"})
        listed = server.request("hooks/list", {"cwds": [str(cwd)]})
        hooks = [h for entry in listed.get("data", []) for h in entry.get("hooks", [])]
        started = time.monotonic()
        thread = server.request("thread/start", {"cwd": str(cwd), "ephemeral": True})["thread"]["id"]
        waited = time.monotonic() - started
        status = server.request("mcpServerStatus/list", {"threadId": thread, "detail": "toolsAndAuthOnly"})
        config = server.request("config/read", {"cwd": str(cwd)}).get("config", {})
    except (OSError, RuntimeError, queue.Empty, KeyError) as err:
        return [Finding(False, f"Codex did not answer (`codex app-server`): {err or 'timed out'}", setup)]
    finally:
        server.close()
    findings = []
    if w.scope == "project":
        findings.append(_project(w, server.notes, setup))
    findings.append(_hooks(w, hooks, setup, events))
    findings.append(_mcp(status.get("data", []), config, waited, setup))
    return findings


def _project(w: Wiring, notes: list[dict[str, Any]], setup: str) -> Finding:
    folder = str(w.project / ".codex")
    for note in notes:
        summary = str((note.get("params") or {}).get("summary", ""))
        if (
            note.get("method") == "configWarning"
            and "until the project is trusted" in summary
            and folder in summary
        ):
            return Finding(False, f"Codex does not trust {w.project}: it ignores {folder}", setup)
    return Finding(True, f"Codex trusts {w.project} and reads {folder}")


def _hooks(w: Wiring, hooks: list[dict[str, Any]], setup: str, events: dict[str, str]) -> Finding:
    ours = {
        event: [h for h in hooks if w.hook_marker(arg) in str(h.get("command", ""))]
        for event, arg in events.items()
    }
    missing = [e for e, found in ours.items() if not found]
    if missing:
        return Finding(False, f"Codex does not load nexus's hooks for {', '.join(missing)}", setup)
    off = [e for e, found in ours.items() if not all(h.get("enabled") for h in found)]
    if off:
        return Finding(False, f"Codex has nexus's hooks switched off for {', '.join(off)}", setup)
    untrusted = [
        f"{e} ({found[0].get('trustStatus')})"
        for e, found in ours.items()
        if any(h.get("trustStatus") != "trusted" for h in found)
    ]
    if untrusted:
        return Finding(False, f"Codex will not run nexus's hooks, not trusted: {', '.join(untrusted)}", setup)
    return Finding(True, f"Codex runs nexus's hooks, trusted and enabled: {', '.join(events)}")


def _mcp(servers: list[dict[str, Any]], config: dict[str, Any], waited: float, setup: str) -> Finding:
    entry = (config.get("mcp_servers") or {}).get("nexus") or {}
    nexus = next((s for s in servers if s.get("name") == "nexus"), None)
    if not entry or nexus is None:
        return Finding(False, "Codex has no `nexus` MCP server here", setup)
    if nexus.get("toolsError") or not nexus.get("tools"):
        why = nexus.get("toolsError") or "no tools"
        return Finding(False, f"Codex gets no nexus tools: {why}", setup)
    limit = float(entry.get("startup_timeout_sec") or 10)
    if not entry.get("required"):
        return Finding(
            False, "the `nexus` MCP server is not required: Codex may start a turn without it", setup
        )
    if waited > limit:
        return Finding(False, f"`nexus mcp` took {waited:.1f} s, over Codex's {limit:.0f} s wait", setup)
    tools = len(nexus["tools"])
    return Finding(
        True,
        f"Codex has {tools} nexus tools before the first turn ({waited:.1f} s, waits up to {limit:.0f} s)",
    )
