"""A runtime's session, declared: the hook events ``nexus-hook`` answers (a session's start, each
turn, an edit, compaction, stop, end). Their functions are in ``nexus/operations/session.py`` and
``edits.py`` (the pre-tool check).
"""

from __future__ import annotations

from ..spec import ONLY_HOOK, SET, Operation, Param

SESSION = "nexus.operations.session"
A_HOOK = "a runtime's hook event: the runtime calls it at a session's edge or turn (`nexus-hook`)"

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "session_start",
        f"{SESSION}:start",
        "the whole brief at a session's start, and a record of what the session was told",
        "nexus-hook session-start --agent ella --vault ~/vault",
        hook="session-start",
        hook_event="SessionStart",
        acts="required",
        why_not=A_HOOK,
        params=(
            Param(
                "source",
                description="startup, resume, clear or compact",
                default="startup",
                surfaces=ONLY_HOOK,
            ),
        ),
    ),
    Operation(
        "session_prompt",
        f"{SESSION}:prompt",
        "before a turn: only what is new since this session's last injection",
        "nexus-hook prompt --agent ella --vault ~/vault",
        hook="prompt",
        hook_event="UserPromptSubmit",
        acts="required",
        why_not=A_HOOK,
        params=(Param("prompt", description="the person's prompt", surfaces=ONLY_HOOK),),
    ),
    Operation(
        "session_pre_tool",
        "nexus.operations.edits:pre_tool",
        "before an edit or write: deny it when another agent holds the path exclusively (silent otherwise)",
        "nexus-hook pre-tool --agent ella --vault ~/vault",
        hook="pre-tool",
        hook_event="PreToolUse",
        acts="required",
        why_not=A_HOOK,
        params=(
            Param(
                "tool_name",
                description="Edit, Write, MultiEdit, NotebookEdit, apply_patch…",
                surfaces=ONLY_HOOK,
            ),
            Param(
                "tool_input",
                "dict",
                description="the tool's arguments (file_path; apply_patch: the patch as command)",
                surfaces=ONLY_HOOK,
            ),
            Param("cwd", description="the session's folder", surfaces=ONLY_HOOK),
        ),
    ),
    Operation(
        "session_pre_compact",
        f"{SESSION}:pre_compact",
        "before the runtime compacts its context: save the agent's checkpoint",
        "nexus-hook pre-compact --agent ella --vault ~/vault",
        hook="pre-compact",
        hook_event="PreCompact",
        acts="required",
        kind=SET,  # it saves the checkpoint
        why_not=A_HOOK,
        params=(
            Param("trigger", description="manual or auto", default="auto", surfaces=ONLY_HOOK),
            Param(
                "transcript",
                description="the session's transcript file",
                surfaces=ONLY_HOOK,
                cli={"event": "transcript_path"},
            ),
        ),
    ),
    Operation(
        "session_stop",
        f"{SESSION}:stop",
        "when the agent stops: block once if it wrote no entry (opt-in); retain (runtimes without "
        "session-end)",
        "nexus-hook stop --agent ella --vault ~/vault --block-without-entry",
        hook="stop",
        hook_event="Stop",
        acts="required",
        why_not=A_HOOK,
        params=(
            Param(
                "block_without_entry",
                "bool",
                "block once when the agent wrote no log entry this turn",
                flag="--block-without-entry",
                surfaces=ONLY_HOOK,
            ),
            Param("retain", "bool", "also do what session-end does", flag="--retain", surfaces=ONLY_HOOK),
            Param(
                "stop_hook_active",
                "bool",
                "the runtime already continued once after a block",
                surfaces=ONLY_HOOK,
            ),
        ),
    ),
    Operation(
        "session_end",
        f"{SESSION}:end",
        "at the session's end: the decisions and corrections it logged go to the agent's bank, pending "
        "review",
        "nexus-hook session-end --agent ella --vault ~/vault",
        hook="session-end",
        hook_event="SessionEnd",
        acts="required",
        why_not=A_HOOK,
    ),
)
