"""Every operation, declared once (see ``nexus/operations/__init__.py``). Cheap to import: strings and
small frozen values only; each function is named as ``"module:function"`` and imported when it runs.

Order matters: it is the order of the MCP tool list.
"""

from __future__ import annotations

from .spec import ADD, CHANGE, CLI, CURSOR, MCP, SET, Operation, Param

ONLY_CLI = frozenset({CLI})
ONLY_MCP = frozenset({MCP})

# ------------------------------------------------------------ parameters used by several operations
CHANNEL = "The topic: lowercase letters, digits and dashes, e.g. `build`."
BODY = Param("body", description="Optional details in Markdown.", help="the entry's body (Markdown)")
PEEK = "true: look without moving your read cursor."
COUNT = {"ge": 1, "le": 500}
ENTRY_TYPES = ("note", "question", "correction", "handoff")
STATUSES = ("in-progress", "blocked", "done")

LOG = "nexus.operations.log"
CHECKPOINT = "nexus.operations.checkpoint"
RECORD = "nexus.operations.record"
VERSION = "A version number of the project state."
EXPECT = "The version you read (from `state_show`); refused if it moved."

OPERATIONS: tuple[Operation, ...] = (
    # ------------------------------------------------------------ brief and the log
    Operation(
        "brief",
        f"{LOG}:brief",
        "what an agent loads before a turn: identity, what it owes, unread entries (bounded)",
        "nexus brief --agent ella --max-chars 8000",
        description="Your brief, as Markdown: identity, what you owe (acks, races), decisions in force, "
        "your checkpoint and memory, and what the others wrote since you last read. Call it before each "
        "response. Advances your read cursor unless peek.",
        title="Read your brief",
        command="brief",
        tool="brief",
        acts="required",
        kind=CURSOR,
        agent_tool=True,
        params=(
            Param("peek", "bool", PEEK, help="leave the read cursor where it is", default=False),
            Param(
                "max_chars",
                "int",
                "Budget in characters (default 10000).",
                help="the size bound (default: the vault's brief_max_chars, 10000)",
                setting="brief_max_chars",
                mcp={"ge": 200},
            ),
            Param(
                "stale_minutes",
                "float",
                help="idle time that counts as a probable crash (default: the vault's setting, 30)",
                setting="stale_checkpoint_minutes",
                surfaces=ONLY_CLI,
            ),
        ),
    ),
    Operation(
        "log_append",
        f"{LOG}:append",
        "append one signed entry; prints its id",
        'nexus log append --agent ella --channel build --type note --summary "CI is green"',
        description="Append one signed entry to the live log after a meaningful turn. Returns its id and "
        "link.",
        title="Append to the live log",
        command="log append",
        tool="log_append",
        acts="required",
        kind=ADD,
        agent_tool=True,
        params=(
            Param("channel", description=CHANNEL, required=True),
            Param(
                "type",
                description="note: what you did or found; question: you need an answer; correction: a "
                "previous entry was wrong; handoff: you pass work on. (Decisions: `decide`; acks: "
                "`acknowledge`; races: `reconcile`.)",
                required=True,
                choices=ENTRY_TYPES,
                cli_choices=False,
            ),
            Param(
                "summary",
                description="One line, at most ~120 characters, saying what happened.",
                help="one line",
                required=True,
            ),
            Param(
                "body",
                description=BODY.description,
                help=BODY.help,
                file_flag="--body-file",
                cli={"file_help": "read the body from a file, or - for standard input", "decode": "lenient"},
            ),
            Param(
                "ack",
                "list",
                "Ids of entries by others that this entry answers.",
                help="an entry this one acknowledges",
                cli={"metavar": "ID"},
            ),
        ),
    ),
    Operation(
        "acknowledge",
        f"{LOG}:acknowledge",
        "acknowledge entries by the others",
        "nexus log append --agent ella --channel general --type ack --ack ID --summary acknowledged",
        description="Acknowledge entries by the others (an `ack` entry naming them), so you no longer owe "
        "them.",
        title="Acknowledge entries",
        tool="acknowledge",
        acts="required",
        kind=ADD,
        agent_tool=True,
        why_not="log append --ack",
        params=(
            Param("ids", "list", "Log entry ids written by other agents.", required=True),
            Param("summary", description="One line: what you take from them.", default="acknowledged"),
            Param("channel", description=CHANNEL, default="general"),
            BODY,
        ),
    ),
    Operation(
        "log_read",
        f"{LOG}:read",
        "entries by others this agent has not read; advances its cursor",
        "nexus log read --agent lyra --json",
        description="Entries by the others you have not read, oldest first; advances your cursor unless "
        "peek.",
        title="Read new entries",
        command="log read",
        tool="log_read",
        acts="required",
        kind=CURSOR,
        full=True,
        params=(Param("peek", "bool", PEEK, help="leave the cursor where it is", default=False),),
    ),
    Operation(
        "log_tail",
        f"{LOG}:tail",
        "the last entries of the log",
        "nexus log tail -n 5",
        description="The last n entries of the live log, oldest first.",
        title="Last log entries",
        command="log tail",
        tool="log_tail",
        full=True,
        params=(
            Param(
                "n",
                "int",
                "How many results at most.",
                help="how many (default 10)",
                default=10,
                flag="-n",
                mcp=COUNT,
                cli={"type": "positive"},
            ),
        ),
    ),
    Operation(
        "log_owed",
        f"{LOG}:owed",
        "entries waiting for this agent's acknowledgement",
        "nexus log owed --agent lyra --json",
        description="Entries by the others that wait for your acknowledgement.",
        title="What you owe",
        command="log owed",
        tool="log_owed",
        acts="required",
        full=True,
    ),
    Operation(
        "log_repair",
        f"{LOG}:repair",
        "move a torn tail to .nexus/quarantine/",
        "nexus log repair",
        description="Move a torn tail (a writer killed mid-write) out of the log into .nexus/quarantine/.",
        title="Repair a torn log tail",
        command="log repair",
        tool="log_repair",
        kind=SET,
    ),
    Operation(
        "log_recover",
        f"{LOG}:recover",
        "print an entry's original text from the watcher's shadow (--restore puts it back)",
        "nexus log recover 01KB7Q2V4J6M8P0R2T4W6Y8A0C --restore",
        description="The original text of an entry as the watcher first saw it (after a history edit).",
        title="Recover an entry's original",
        command="log recover",
        tool="log_recover",
        full=True,
        params=(
            Param(
                "id",
                description="A log entry id, as shown in brackets in the brief.",
                help="the entry id",
                required=True,
                flag="id",
            ),
            Param(
                "restore",
                "bool",
                help="replace the edited (or re-insert the missing) entry with the original",
                default=False,
                surfaces=ONLY_CLI,
            ),
        ),
    ),
    Operation(
        "races",
        f"{LOG}:races",
        "entries by different agents written without seeing each other",
        "nexus races --unresolved --json",
        description="Pairs of entries by different agents written without seeing each other.",
        title="Races to reconcile",
        command="races",
        tool="races",
        full=True,
        params=(
            Param(
                "unresolved",
                "bool",
                "true: only races not reconciled yet.",
                help="only races no reconcile entry resolves",
                default=False,
            ),
        ),
    ),
    Operation(
        "reconcile",
        f"{LOG}:reconcile",
        "resolve a race",
        "nexus log append --agent ella --channel general --type reconcile --ack A --ack B --summary ...",
        description="Resolve a race: a `reconcile` entry that acknowledges both entries (both stay in the "
        "log).",
        title="Reconcile a race",
        tool="reconcile",
        acts="required",
        kind=ADD,
        agent_tool=True,
        why_not="log append --type reconcile --ack A --ack B",
        params=(
            Param("a", description="The id of the first entry of the race.", required=True),
            Param("b", description="The id of the second entry of the race.", required=True),
            Param("summary", description="One line: what now holds.", required=True),
            BODY,
            Param("channel", description=CHANNEL, default="general"),
        ),
    ),
    # ------------------------------------------------------------ decisions and the project state
    Operation(
        "decide",
        f"{RECORD}:decide",
        "record a decision (a signed note + a decision entry)",
        'nexus decide --agent ella --title "Secrets live in the OS keychain" '
        '--decision "Never in .env files" --rationale "Leaked twice" [--supersedes D-0001]',
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
        "nexus state diff 2 4",
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
        "nexus state restore --agent ella --version 2 --expect 5",
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
    # ------------------------------------------------------------ checkpoints
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
            Param(
                "stale_minutes",
                "float",
                help="idle time that counts as a probable crash",
                setting="stale_checkpoint_minutes",
                surfaces=ONLY_CLI,
            ),
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
