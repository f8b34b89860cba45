"""The decisions' and the project state's operations, declared. Their functions are in
``nexus/operations/record.py``.
"""

from __future__ import annotations

from ..spec import ADD, CHANGE, Operation, Param

RECORD = "nexus.operations.record"
VERSION = "A version number of the project state."
EXPECT = "The version you read (from `state_show`); refused if it moved."

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "decide",
        f"{RECORD}:decide",
        "record a decision (a signed note + a decision entry)",
        'nexus decide --agent ella --title "Secrets live in the OS keychain" '
        '--decision "Never in .env files" --rationale "Leaked twice" --supersedes D-0001',
        description="Record a decision (a signed note and a decision entry); `supersedes` marks an older "
        "one.",
        title="Record a decision",
        command="decide",
        tool="decide",
        acts="required",
        kind=ADD,
        agent_tool=True,
        params=(
            Param("title", description="A short title for the decision.", help="one line", required=True),
            Param("decision", description="What was decided.", help="what was decided", required=True),
            Param("rationale", description="Why.", help="why", required=True),
            Param(
                "alternatives", description="Options considered, dropped.", help="what else was considered"
            ),
            Param(
                "supersedes",
                description="The id (D-NNNN) of a decision this one replaces.",
                help="the decision this one replaces (D-NNNN)",
                cli={"metavar": "ID"},
            ),
            Param(
                "refs",
                "list",
                "Related entry or decision ids.",
                help="a log entry the decision came from",
                flag="--ref",
                cli={"metavar": "ENTRY"},
            ),
        ),
    ),
    Operation(
        "decisions",
        f"{RECORD}:listing",
        "list the active decisions (--all: superseded too)",
        "nexus decisions --all --json",
        description="The active decisions (all=true: superseded ones too).",
        title="Decisions in force",
        command="decisions",
        tool="decisions",
        params=(
            Param(
                "all",
                "bool",
                "true: superseded decisions too.",
                help="include superseded decisions",
                default=False,
            ),
        ),
    ),
    Operation(
        "decisions_show",
        f"{RECORD}:show",
        "one decision: rationale, alternatives, who decided, sources, what it superseded and what "
        "superseded it",
        "nexus decisions show D-0001 --json",
        description="One decision in full: decision, rationale, alternatives, who decided and when, its "
        "sources, and the supersession chain both ways (`supersedes_chain`, `superseded_by_chain`, "
        "`in_force`).",
        title="Show one decision",
        command="decisions show",
        tool="decisions_show",
        params=(
            Param(
                "id",
                description="The decision id, like D-0001.",
                help="the decision, like D-0001",
                required=True,
                flag="id",
                cli={"metavar": "ID"},
            ),
        ),
    ),
    Operation(
        "state_show",
        f"{RECORD}:state_show",
        "the project state and its version",
        "nexus state show --json",
        description="The project state note: its content and version (pass the version to state_set).",
        title="Show the project state",
        command="state show",
        tool="state_show",
    ),
    Operation(
        "state_set",
        f"{RECORD}:state_set",
        "replace the project state if it is still at --expect VERSION (else exit 3 with a diff)",
        "nexus state set --agent ella --expect 3 --file state.md",
        description="Replace the project state, only if it is still at version `expect` (else: the current "
        "version and a diff). The previous version is kept and restorable.",
        title="Replace the project state",
        command="state set",
        tool="state_set",
        acts="required",
        kind=CHANGE,
        params=(
            Param(
                "content",
                description="The whole new state note, Markdown.",
                required=True,
                flag=None,
                file_flag="--file",
                cli={"file_help": "the new content (Markdown), or - for standard input"},
            ),
            Param(
                "expect",
                "int",
                EXPECT,
                help="the version you read",
                required=True,
                cli={"metavar": "VERSION"},
            ),
            Param(
                "summary",
                description="One line: what changed.",
                help="one line for the log (default: the first added line)",
            ),
        ),
    ),
    Operation(
        "state_history",
        f"{RECORD}:state_history",
        "every version of the project state",
        "nexus state history",
        description="Every accepted version of the project state (who, when, one line).",
        title="Project state history",
        command="state history",
        tool="state_history",
    ),
    Operation(
        "state_diff",
        f"{RECORD}:state_diff",
        "the difference between two versions (default: to current)",
        "nexus state diff 1 3",
        description="The difference between two versions of the project state (new: the current one).",
        title="Diff two state versions",
        command="state diff",
        tool="state_diff",
        params=(
            Param("old", "int", VERSION, required=True, flag="old", mcp={"ge": 1}),
            Param(
                "new",
                "int",
                "The newer version (default: the current one).",
                flag="new",
                mcp={"ge": 1},
                cli={"nargs": "?"},
            ),
        ),
    ),
    Operation(
        "state_restore",
        f"{RECORD}:state_restore",
        "make an earlier version current (a new version)",
        "nexus state restore --agent ella --version 1 --expect 3",
        description="Make an earlier version of the project state current again (as a new version).",
        title="Restore a state version",
        command="state restore",
        tool="state_restore",
        acts="required",
        kind=CHANGE,
        params=(
            Param("version", "int", VERSION, required=True, mcp={"ge": 1}),
            Param("expect", "int", EXPECT, required=True, cli={"metavar": "VERSION"}),
        ),
    ),
)
