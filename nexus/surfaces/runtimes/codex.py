"""Codex: the MCP server in ``config.toml`` (``[mcp_servers.nexus]``, ``required`` so the first turn
has its tools), hooks switched on (``[features] hooks = true``), the hooks in ``hooks.json`` (Claude
Code's schema and events), and the rules block in ``AGENTS.md``. User scope: ``$CODEX_HOME`` (default
``~/.codex/``); project scope: ``<project>/.codex/`` and ``<project>/AGENTS.md``.

Codex runs a hook only once it is trusted, and reads a project's ``.codex/`` only once the project is
trusted; both are kept in the user's own ``config.toml``. ``nexus setup`` is the user's explicit request,
so it writes that trust on their behalf, for exactly the project and the hooks it wrote, saying so in
one line each (``--skip project-trust`` / ``hook-trust`` to leave either out). A hook's trust is
the sha256 of its definition as Codex hashes it (:func:`hook_hash`), so editing a hook by hand
untrusts it again, as Codex intends.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Table

from ...errors import InputError
from . import codex_view, rules
from .claude_code import add_hooks
from .configfiles import block_merge, json_merge, read_text, toml_merge
from .wiring import Change, Finding, Wired, Wiring, wired_from_server

VERSION = "0.171.0"  # the version these files were checked against, end to end

# Codex event -> nexus-hook event. Codex 0.171 knows SessionEnd but fired it in none of the runs tried
# (`codex exec`, app-server threads closed or unsubscribed) and clamps its timeout to 3 s with a warning
# at every start, so Stop retains instead (`--retain`: each entry is retained once).
EVENTS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "prompt",
    "PreCompact": "pre-compact",
    "Stop": "stop",
    "PreToolUse": "pre-tool",  # claims: a patch touching a file another agent holds is denied
}
# Codex event -> the tool matcher of nexus's hook group there: Codex edits files with `apply_patch`
MATCHERS: dict[str, str] = {"PreToolUse": "apply_patch"}
# what Codex passes `nexus mcp` beyond its short default list (HOME, PATH, TMPDIR...): what places and
# names the warm hook server its hooks use, so that the server it starts is theirs
PASSED = ("XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "NEXUS_HOOK_SERVER")
STARTUP_TIMEOUT_SEC = 20  # how long Codex waits for `nexus mcp` before the first turn (it is `required`)

WHY = {
    "project-trust": "Codex ignores .codex/ in a project it does not trust",
    "hook-trust": "Codex runs no hook until it is trusted",
}


def codex_home(w: Wiring) -> Path:
    return Path(w.env["CODEX_HOME"]) if w.env.get("CODEX_HOME") else w.home / ".codex"


def snake(event: str) -> str:
    """Codex's name for an event in a hook's key: ``SessionStart`` -> ``session_start``."""
    return "".join("_" + c.lower() if c.isupper() else c for c in event).lstrip("_")


def hook_hash(event: str, hook: dict[str, Any], matcher: str | None = None) -> str:
    """The hash Codex keeps as a command hook's ``trusted_hash``: sha256 of the compact, key-sorted JSON
    of the event name, its group's ``matcher`` when there is one, and the handler (checked against
    ``codex app-server``'s ``hooks/list``, its ``currentHash``)."""
    handler = {
        "type": "command",
        "command": hook.get("command", ""),
        "timeout": hook.get("timeout", 600),
        "async": bool(hook.get("async", False)),
    }
    identity: dict[str, Any] = {"event_name": snake(event), "hooks": [handler]}
    if matcher is not None:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def nexus_hooks(w: Wiring, hooks_path: Path, text: str) -> dict[str, str]:
    """``{key: trusted_hash}`` for nexus's own hooks in the hooks.json ``text`` (keys as Codex names
    them: ``<path>:<event>:<group>:<handler>``); the user's other hooks are not nexus's to trust."""
    data = json.loads(text) if text.strip() else {}
    out = {}
    for event, groups in (data.get("hooks") or {}).items():
        if event not in EVENTS or not isinstance(groups, list):
            continue
        for i, group in enumerate(groups):
            for j, hook in enumerate(group.get("hooks", []) if isinstance(group, dict) else []):
                if isinstance(hook, dict) and w.hook_marker(EVENTS[event]) in str(hook.get("command", "")):
                    out[f"{hooks_path}:{snake(event)}:{i}:{j}"] = hook_hash(event, hook, group.get("matcher"))
    return out


def _table(doc: Any, key: str, *, super_table: bool = False) -> Any:
    if key in doc and not isinstance(doc[key], Table | dict):
        raise InputError(f"`{key}` is not a table")
    if doc.get(key) is None:
        doc[key] = tomlkit.table(is_super_table=super_table)
    return doc[key]


def _server_and_features(w: Wiring, doc: Any) -> None:
    server = w.mcp_server()
    servers = _table(doc, "mcp_servers", super_table=True)
    table = tomlkit.table()
    table["command"] = server["command"]
    table["args"] = server["args"]
    env = tomlkit.inline_table()
    env.update(server["env"])  # type: ignore[call-overload]
    table["env"] = env
    table["env_vars"] = list(PASSED)
    table["startup_timeout_sec"] = STARTUP_TIMEOUT_SEC
    table["required"] = True  # Codex waits for a required server before the first turn; else it does not
    current = servers.get("nexus")
    if current is None or not hasattr(current, "unwrap") or current.unwrap() != table.unwrap():
        servers["nexus"] = table
    features = _table(doc, "features")
    if "codex_hooks" in features:  # deprecated in 0.171 ("use [features].hooks"), warned on every run
        del features["codex_hooks"]
    if features.get("hooks") is not True:
        features["hooks"] = True


def _trust_project(w: Wiring, doc: Any) -> None:
    projects = _table(doc, "projects", super_table=True)
    entry = projects.get(str(w.project))
    if entry is None:
        entry = tomlkit.table()
        projects[str(w.project)] = entry
    if entry.get("trust_level") != "trusted":
        entry["trust_level"] = "trusted"


def _trust_hooks(w: Wiring, doc: Any, hooks_path: Path, hooks_text: str) -> None:
    wanted = nexus_hooks(w, hooks_path, hooks_text)
    hooks = _table(doc, "hooks", super_table=True)
    state = _table(hooks, "state", super_table=True)
    for key, digest in wanted.items():
        entry = state.get(key)
        if entry is None:
            entry = tomlkit.table()
            state[key] = entry
        if entry.get("trusted_hash") != digest:
            entry["trusted_hash"] = digest


def project_trusted(w: Wiring) -> bool:
    """Whether Codex's user config already trusts the project (the exact folder)."""
    text = read_text(codex_home(w) / "config.toml")
    try:
        doc = tomlkit.parse(text or "").unwrap()
    except Exception:
        return False
    entry = (doc.get("projects") or {}).get(str(w.project)) or {}
    return isinstance(entry, dict) and entry.get("trust_level") == "trusted"


def changes(w: Wiring) -> list[Change]:
    home = codex_home(w)
    folder = home if w.scope == "user" else w.project / ".codex"
    agents_md = home / "AGENTS.md" if w.scope == "user" else w.project / "AGENTS.md"
    config, hooks, user_config = folder / "config.toml", folder / "hooks.json", home / "config.toml"
    hooks_merge = json_merge(hooks, add_hooks(w, EVENTS, {"stop": ("--retain",)}, MATCHERS))

    def trust_hooks(doc: Any) -> None:
        _trust_hooks(w, doc, hooks, hooks_merge(read_text(hooks)))

    planned = [
        Change(
            config,
            "MCP server `nexus` (required), hooks switched on",
            toml_merge(config, lambda doc: _server_and_features(w, doc)),
        ),
        Change(hooks, "hooks: " + ", ".join(EVENTS), hooks_merge),
        Change(agents_md, "the nexus rules block", block_merge(rules.text(w.agent, injected=True))),
    ]
    if w.scope == "project":
        planned.append(
            Change(
                user_config,
                f"trust for the project {w.project}",
                toml_merge(user_config, lambda doc: _trust_project(w, doc)),
                behalf="project-trust",
                why=WHY["project-trust"],
            )
        )
    planned.append(
        Change(
            user_config,
            "trust for the hooks nexus wrote",
            toml_merge(user_config, trust_hooks),
            behalf="hook-trust",
            why=WHY["hook-trust"],
        )
    )
    return planned


def wired(scope: str, project: Path, home: Path, env: dict[str, str]) -> Wired | None:
    """The agent an existing wiring acts as: the `nexus` server of this scope's config.toml."""
    folder = (
        (Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex")
        if scope == "user"
        else project / ".codex"
    )
    config = folder / "config.toml"
    try:
        doc = tomlkit.parse(read_text(config) or "").unwrap()
    except Exception:
        return None
    return wired_from_server((doc.get("mcp_servers") or {}).get("nexus"), config)


def check(w: Wiring) -> list[Finding]:
    """Codex's own view, asked of the installed Codex (``codex_view``)."""
    return codex_view.check(w, shutil.which(codex_view.PROGRAM, path=w.env.get("PATH")), EVENTS)
