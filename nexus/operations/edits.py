"""The runtime's pre-tool hook for claims (``nexus-hook pre-tool``, the ``PreToolUse`` of Claude Code
and Codex): an edit or write of a path another agent holds exclusively is denied, with the reason the
runtime shows the model; anything else gets no answer at all. Kept apart from ``claims.py`` so the
hook, which runs before every edit, imports no writer. While no segment changed since the claims were
last read, it answers from ``.nexus/claims.json`` with the standard library alone
(``team/claimview.py``); only then, or to word a denial, are the log's claims read
(``team/claimlog.py``, imported there)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..storage.vault import Vault
from ..team import claimview
from .spec import Answer, Call

# Claude Code's file-editing tools and the argument naming the file (an absolute path)
EDIT_TOOLS = {
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
# Codex's file-editing tool: its ``command`` is the patch, which names each file it touches on a line
# of its own (paths relative to the working folder)
PATCH_TOOL = "apply_patch"
PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")


def _names(tool_name: str | None, tool_input: dict[str, Any] | None) -> list[str]:
    """The files an edit tool's call names, as given (absolute, or relative to the working folder)."""
    data = tool_input if isinstance(tool_input, dict) else {}
    if tool_name == PATCH_TOOL:
        patch = data.get("command", data.get("input"))
        lines = patch.splitlines() if isinstance(patch, str) else []
        return [line[len(h) :].strip() for line in lines for h in PATCH_HEADERS if line.startswith(h)]
    key = EDIT_TOOLS.get(tool_name or "")
    target = data.get(key) if key else None
    return [target] if isinstance(target, str) else []


def _targets(tool_name: str | None, tool_input: dict[str, Any] | None, cwd: str | None) -> list[Path]:
    """The files an edit tool's call would change (absolute); none for any other call."""
    return [
        (Path(name) if Path(name).is_absolute() else Path(cwd or ".") / name).resolve()
        for name in _names(tool_name, tool_input)
        if name
    ]


def quiet(
    vault: Vault, agent: str, tool_name: str | None, tool_input: dict[str, Any] | None, cwd: str | None
) -> bool:
    """Nothing to deny, known without reading the log, settings or keys: not an edit, or no other
    agent's unexpired exclusive claim in ``.nexus/claims.json`` names the file while no segment
    changed since it was written (what ``nexus-hook`` asks before anything else)."""
    paths = _targets(tool_name, tool_input, cwd)
    if not paths:
        return True
    fast = claimview.holding(vault.state, vault.log_dir)
    now = int(time.time() * 1000)
    return fast is not None and not any(
        claimview.exclusive_holder(fast, list(path.parents), path, agent, now) for path in paths
    )


def pre_tool(
    call: Call,
    *,
    session_id: str,
    tool_name: str | None = None,
    tool_input: dict[str, Any] | None = None,
    cwd: str | None = None,
) -> Answer:
    """PreToolUse (Claude Code's edit tools, Codex's ``apply_patch``): deny an edit of a path another
    agent holds exclusively (a patch: when any file it touches is held); silent otherwise (also for a
    path outside any claimed project, and for tools that edit nothing)."""
    paths = _targets(tool_name, tool_input, cwd)
    if not paths or quiet(call.vault, call.agent, tool_name, tool_input, cwd):
        return Answer({}, "")  # (the common case: nothing read but one small file and the segments' sizes)
    from ..team import claimlog  # (the log moved on, or a denial to word: the whole reading)
    from ..team.claims import active, holder_of, refusal

    held = active(claimlog.refresh(call.vault, call.trust).claims())
    projects = {c.project for c in held}
    for path in paths:
        for folder in path.parents:
            if folder.name not in projects:
                continue
            hit = holder_of(held, folder.name, path.relative_to(folder).as_posix(), call.agent)
            if hit is not None:
                reason = "nexus: " + refusal(hit[0], f"{path.relative_to(folder).as_posix()} (`{hit[1]}`)")
                out = {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
                return Answer({"hookSpecificOutput": out}, reason)
    return Answer({}, "")
