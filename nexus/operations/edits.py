"""The runtime's pre-tool hook for claims (``nexus-hook pre-tool``, Claude Code's ``PreToolUse``): an
edit or write of a path another agent holds exclusively is denied, with the reason the runtime shows
the model; anything else gets no answer at all. Kept apart from ``claims.py`` so the hook, which runs
before every edit, imports no writer: only the claims read from the log (``team/claimlog.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..team import claimlog
from ..team.claims import active, holder_of, refusal
from .spec import Answer, Call

# Claude Code's file-editing tools and the argument naming the file (an absolute path)
EDIT_TOOLS = {
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}


def pre_tool(
    call: Call,
    *,
    session_id: str,
    tool_name: str | None = None,
    tool_input: dict[str, Any] | None = None,
    cwd: str | None = None,
) -> Answer:
    """Claude Code's PreToolUse: deny an edit of a path another agent holds exclusively; silent
    otherwise (also for a path outside any claimed project, and for tools that edit nothing)."""
    key = EDIT_TOOLS.get(tool_name or "")
    target = (tool_input or {}).get(key) if key else None
    if not isinstance(target, str) or not target:
        return Answer({}, "")
    path = Path(target) if Path(target).is_absolute() else Path(cwd or ".") / target
    held = active(claimlog.refresh(call.vault).claims())
    if not held:
        return Answer({}, "")
    path = path.resolve()
    projects = {c.project for c in held}
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
