"""The brief's and the log's operations, declared: reading, appending, acknowledging, races. Their
functions are in ``nexus/operations/log.py``.
"""

from __future__ import annotations

from ..spec import ADD, CURSOR, ONLY_CLI, SET, Operation, Param, how_many, stale_minutes

LOG = "nexus.operations.log"
CHANNEL = "The topic: lowercase letters, digits and dashes, e.g. `build`."
BODY = Param("body", description="Optional details in Markdown.", help="the entry's body (Markdown)")
PEEK = "true: look without moving your read cursor."
ENTRY_TYPES = ("note", "question", "correction", "handoff")

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "brief",
        f"{LOG}:brief",
        "what an agent loads before a turn: identity, what it owes, unread entries (bounded)",
        "nexus brief --agent ella --max-chars 8000",
        description="Your brief, as Markdown: identity, what you owe (acks, races), decisions in force, "
        "your checkpoint and memory, and what the others wrote since you last read. Call it when your "
        "context holds no nexus brief (hooks inject it where they are wired). Advances your read cursor "
        "unless peek.",
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
            stale_minutes("idle time that counts as a probable crash (default: the vault's setting, 30)"),
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
        params=(how_many(),),
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
)
