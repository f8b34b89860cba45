"""The checkpoints' operations, declared: save, show, resume. Their functions are in
``nexus/operations/checkpoint.py``.
"""

from __future__ import annotations

from ..spec import ADD, ONLY_CLI, ONLY_MCP, SET, Operation, Param, stale_minutes

CHECKPOINT = "nexus.operations.checkpoint"
STATUSES = ("in-progress", "blocked", "done")

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "checkpoint_save",
        f"{CHECKPOINT}:save",
        "save the agent's working context (atomic replace)",
        'nexus checkpoint save --agent ella --task "Port the parser" --step "lexer done" '
        '--next "write the grammar" --files nexus/lexer.py',
        description="Save your working context (task, step done, next step, status, files, notes), "
        "atomically. Do it every few tool calls: a new session resumes from it.",
        title="Save your checkpoint",
        command="checkpoint save",
        tool="checkpoint_save",
        acts="required",
        kind=SET,
        agent_tool=True,
        params=(
            Param("task", description="The task you are on, one line.", required=True),
            Param(
                "step", description="The step you just finished.", help="what is done so far", required=True
            ),
            Param("next", description="The next step.", help="what comes next", required=True),
            Param("status", description="Where the task stands.", default="in-progress", choices=STATUSES),
            Param("files", "list", "Files you are working on.", help="files touched", cli={"nargs": "*"}),
            Param(
                "notes",
                description="Anything else a new session needs, Markdown.",
                flag=None,
                file_flag="--notes-file",
                cli={"file_help": "open questions and notes (Markdown file, or - for stdin)"},
            ),
        ),
    ),
    Operation(
        "checkpoint_show",
        f"{CHECKPOINT}:show",
        "the agent's checkpoint (flags a probable crash)",
        "nexus checkpoint show --agent ella --history",
        description="A checkpoint (yours unless `of` names another agent), flagged when it looks like a "
        "crash.",
        title="Show a checkpoint",
        command="checkpoint show",
        tool="checkpoint_show",
        acts="required",
        params=(
            Param("of", description="Another agent's name (default: yours).", surfaces=ONLY_MCP),
            Param(
                "history",
                "bool",
                "true: earlier versions too.",
                help="list earlier versions too",
                default=False,
            ),
            stale_minutes(),
        ),
    ),
    Operation(
        "checkpoint_resume",
        f"{CHECKPOINT}:resume",
        "what a new session needs: the checkpoint and the log entries since it was saved",
        "nexus checkpoint resume --agent ella",
        description="What a new session needs to continue: your checkpoint and the log entries since it.",
        title="Resume from your checkpoint",
        command="checkpoint resume",
        tool="checkpoint_resume",
        acts="required",
        kind=ADD,
        full=True,
        params=(Param("no_log", "bool", help="do not log a resume entry", default=False, surfaces=ONLY_CLI),),
    ),
)
