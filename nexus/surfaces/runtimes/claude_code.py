"""Claude Code (tested: 2.1.332): MCP in ``.mcp.json`` (project) or ``~/.claude.json`` (user), hooks
in ``.claude/settings.json`` (or ``~/.claude/settings.json``), the rules block in ``CLAUDE.md``.

Claude Code ignores ``mcpServers`` inside a settings file; it reads project servers from ``.mcp.json``
and user servers from the top-level ``mcpServers`` of ``~/.claude.json`` (what
``claude mcp add --scope user`` writes). Hooks run ``nexus-hook`` with the vault and keys on the
command line, so they work from any folder.

Written on the user's behalf (each printed by setup, each left out with ``--skip NAME``), because
without it Claude Code does not use nexus:

- ``allow``: ``permissions.allow: ["mcp__nexus"]`` in the same settings file. Without it every nexus
  tool call is refused in ``claude -p`` ("permission_denials") and asked about in each session.
- ``enable``: ``enabledMcpjsonServers: ["nexus"]`` (project scope). Without it an interactive session
  asks about the project's new server with "continue without" preselected.
- ``trust``: ``projects[PROJECT].hasTrustDialogAccepted: true`` in ``~/.claude.json`` (project
  scope). Claude Code drops a project's permission rules until the folder is trusted, so the allow
  rule would not count in a project never opened interactively.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import rules
from .configfiles import Edit, block_merge, hook_groups, json_merge, table
from .wiring import Change, Finding, Wired, Wiring, probe_server, read_json, wired_from_server

RUNTIME = "claude-code"
SERVER = "nexus"
ALLOW = "mcp__nexus"  # every tool of the `nexus` server
# How long Claude Code 2.1 waits for a server's answer to its opening `server/discover` before it
# gives up on that probe (measured: ~2.9 s) — the MCP server must answer well within it.
STARTUP_WAIT = 2.0

# Claude Code event -> nexus-hook event. A new hook is one more line here (and its operation).
# No Stop hook: `nexus-hook stop` does nothing unless `--block-without-entry` is asked for, and a
# hook is a process per turn (SessionEnd retains, where Codex needs `stop --retain`).
EVENTS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "prompt",
    "PreCompact": "pre-compact",
    "SessionEnd": "session-end",
    "PreToolUse": "pre-tool",  # claims: an edit of a file another agent holds is denied (docs/claims.md)
}


# Claude Code event -> the tool matcher of nexus's hook group there (a PreToolUse hook names its tools).
MATCHERS: dict[str, str] = {"PreToolUse": "Edit|Write|MultiEdit|NotebookEdit"}


def add_hooks(
    w: Wiring,
    events: dict[str, str],
    extra: dict[str, tuple[str, ...]] | None = None,
    matchers: dict[str, str] | None = None,
) -> Edit:
    """Put nexus's hook command in each event's list (Claude-style ``hooks`` object): ``extra``
    arguments per nexus-hook event, a ``matcher`` per runtime event."""

    def edit(data: dict[str, Any]) -> None:
        hooks = table(data, "hooks")
        for name, event in events.items():
            matcher = (matchers or {}).get(name)
            hooks[name] = hook_groups(
                hooks.get(name),
                w.hook_command(event, *(extra or {}).get(event, ())),
                w.hook_marker(event),
                {"matcher": matcher} if matcher else None,
            )

    return edit


def add_mcp(w: Wiring, key: str = "mcpServers") -> Edit:
    """Put the ``nexus`` server in the ``mcpServers`` object (Claude Code, Cursor)."""

    def edit(data: dict[str, Any]) -> None:
        table(data, key)[SERVER] = w.mcp_server()

    return edit


def _add_to_list(*keys: str, value: str) -> Edit:
    """``value`` in the list at ``data[keys…]`` (created when missing; other entries kept)."""

    def edit(data: dict[str, Any]) -> None:
        holder = data
        for key in keys[:-1]:
            holder = table(holder, key)
        current = holder.get(keys[-1])
        if current is None:
            current = holder[keys[-1]] = []
        if not isinstance(current, list):
            from ...errors import InputError

            raise InputError(f"`{'.'.join(keys)}` is not a list")
        if value not in current:
            current.append(value)

    return edit


def _trust(project: Path) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        entry = table(table(data, "projects"), str(project))
        if entry.get("hasTrustDialogAccepted") is not True:
            entry["hasTrustDialogAccepted"] = True

    return edit


def files(w: Wiring) -> tuple[Path, Path, Path]:
    """The MCP file, the settings file and the instructions file of this scope."""
    if w.scope == "user":
        return w.home / ".claude.json", w.home / ".claude" / "settings.json", w.home / ".claude" / "CLAUDE.md"
    return w.project / ".mcp.json", w.project / ".claude" / "settings.json", w.project / "CLAUDE.md"


def changes(w: Wiring) -> list[Change]:
    mcp, settings, memo = files(w)
    out = [
        Change(mcp, "MCP server `nexus`", json_merge(mcp, add_mcp(w))),
        Change(
            settings,
            "hooks: " + ", ".join(EVENTS),
            json_merge(settings, add_hooks(w, EVENTS, matchers=MATCHERS)),
        ),
        Change(
            settings,
            f'permissions.allow "{ALLOW}"',
            json_merge(settings, _add_to_list("permissions", "allow", value=ALLOW)),
            behalf="allow",
            why="else every nexus tool call is refused",
        ),
    ]
    if w.scope == "project":
        out.append(
            Change(
                settings,
                f'enabledMcpjsonServers "{SERVER}"',
                json_merge(settings, _add_to_list("enabledMcpjsonServers", value=SERVER)),
                behalf="enable",
                why="else an interactive session starts without the project's nexus server",
            )
        )
        claude_json = w.home / ".claude.json"
        out.append(
            Change(
                claude_json,
                f"projects[{w.project}].hasTrustDialogAccepted",
                json_merge(claude_json, _trust(w.project)),
                behalf="trust",
                why="else Claude Code ignores the project's permission rules until the folder is trusted",
            )
        )
    out.append(Change(memo, "the nexus rules block", block_merge(rules.text(w.agent, injected=True))))
    return out


def wired(scope: str, project: Path, home: Path, env: dict[str, str]) -> Wired | None:
    """The agent an existing wiring acts as: the `nexus` server of this scope's MCP file."""
    mcp = home / ".claude.json" if scope == "user" else project / ".mcp.json"
    return wired_from_server(read_json(mcp).get("mcpServers", {}).get(SERVER), mcp)


def _settings_files(w: Wiring) -> list[Path]:
    """Every settings file Claude Code merges for this project (user, project, local)."""
    return [
        w.home / ".claude" / "settings.json",
        w.project / ".claude" / "settings.json",
        w.project / ".claude" / "settings.local.json",
    ]


def check(w: Wiring) -> list[Finding]:
    """What Claude Code itself would do with this wiring."""
    fix = w.setup_command(RUNTIME)
    found = [(p, read_json(p)) for p in _settings_files(w)]
    trusted = w.scope == "user" or (
        read_json(w.home / ".claude.json")
        .get("projects", {})
        .get(str(w.project), {})
        .get("hasTrustDialogAccepted")
        is True
    )
    counted = [
        (p, s) for p, s in found if trusted or p == w.home / ".claude" / "settings.json"
    ]  # an untrusted project's own rules are dropped
    out = []
    disabled = [p for p, s in found if s.get("disableAllHooks") is True]
    out.append(
        Finding(
            not disabled,
            "hooks enabled" if not disabled else f"hooks disabled (disableAllHooks in {disabled[0]})",
            f"remove disableAllHooks from {disabled[0]}" if disabled else "",
        )
    )
    allowed = [p for p, s in counted if _lists(s, "permissions", "allow") & {ALLOW, f"{ALLOW}__*"}]
    denied = [p for p, s in found if _lists(s, "permissions", "deny") & {ALLOW, f"{ALLOW}__*"}]
    out.append(
        Finding(
            bool(allowed) and not denied,
            f"nexus tools allowed ({allowed[0]})"
            if allowed and not denied
            else f"nexus tools denied in {denied[0]}"
            if denied
            else "nexus tools not allowed: every call would be refused",
            f"remove {ALLOW} from permissions.deny in {denied[0]}" if denied else fix,
        )
    )
    if w.scope == "project":
        out.append(
            Finding(trusted, f"project {w.project} trusted" if trusted else "project not trusted", fix)
        )
        enabled = any(
            SERVER in _lists(s, "enabledMcpjsonServers") or s.get("enableAllProjectMcpServers") is True
            for _, s in counted
        )
        off = [p for p, s in found if SERVER in _lists(s, "disabledMcpjsonServers")]
        out.append(
            Finding(
                enabled and not off,
                "project server nexus enabled"
                if enabled and not off
                else f"project server nexus disabled in {off[0]}"
                if off
                else "project server nexus not enabled: an interactive session starts without it",
                f"remove nexus from disabledMcpjsonServers in {off[0]}" if off else fix,
            )
        )
    mcp, _, _ = files(w)
    entry = read_json(mcp).get("mcpServers", {}).get(SERVER)
    if isinstance(entry, dict):
        finding = probe_server(entry, w.env | {"HOME": str(w.home)}, STARTUP_WAIT, w.project)
        out.append(
            Finding(
                finding.ok,
                finding.what,
                "" if finding.ok else "run `nexus mcp --agent " + w.agent + "` to see why",
            )
        )
    return out


def _lists(data: dict[str, Any], *keys: str) -> set[str]:
    value: Any = data
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()
