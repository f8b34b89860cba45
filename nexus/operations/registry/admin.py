"""The whole vault's operations, declared: verify, identities and trusted keys, the handoff, search
and its index. Their functions are in ``nexus/operations/admin.py``.
"""

from __future__ import annotations

from ..spec import ADD, ONLY_CLI, SET, Operation, Param, how_many, stale_minutes

ADMIN = "nexus.operations.admin"

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "verify",
        f"{ADMIN}:verify",
        "check framing, signatures, chains and ids; exit 1 on problems. "
        "Checks only what changed since the last verify, after proving the rest unchanged",
        "nexus verify --json\n  nexus verify --full",
        description="Check the log's framing, signatures, chains and ids, and the decision notes.",
        title="Verify the vault",
        command="verify",
        tool="verify",
        params=(
            Param(
                "full",
                "bool",
                help="check every entry from scratch instead of only what changed since the last verify",
                default=False,
                surfaces=ONLY_CLI,
            ),
        ),
    ),
    Operation(
        "agent_list",
        f"{ADMIN}:agents",
        "list identities",
        "nexus agent list --json",
        description="The identities in the vault (agents and people).",
        title="List identities",
        command="agent list",
        tool="agent_list",
        full=True,
    ),
    Operation(
        "agent_trusted",
        f"{ADMIN}:trusted",
        "list the keys this machine trusts, by name",
        "nexus agent trusted --json",
        description="The keys this machine trusts for each name (pinned on first use), and changed keys.",
        title="List trusted keys",
        command="agent trusted",
        tool="agent_trusted",
    ),
    Operation(
        "handoff",
        f"{ADMIN}:handoff",
        "write handoff/YYYY-MM-DD.md: the night's work, decisions, corrections, races, crashes…",
        "nexus handoff --since last",
        description="Write the morning handoff note (handoff/YYYY-MM-DD.md) and return it.",
        title="Write the morning handoff",
        command="handoff",
        tool="handoff",
        kind=ADD,
        params=(
            Param(
                "since",
                description="`last` (since the previous handoff), an ISO time, or 12h / 7d.",
                help="'last' (the previous handoff; default), an ISO time, or hours like 12h",
                default="last",
                mcp={"nullable": True},
            ),
            stale_minutes(),
        ),
    ),
    # ------------------------------------------------------------ search
    Operation(
        "search",
        f"{ADMIN}:search",
        "ranked search by words and meaning over the log and every note, with provenance",
        'nexus search "how do we stop two deploys at once" --since 7d -n 5',
        description="Ranked search over the log and every note, by words and by meaning (any language). "
        "Each hit says where it came from (file, lines, Obsidian link, author, time, signature verified).",
        title="Search the vault",
        command="search",
        tool="search",
        agent_tool=True,
        params=(
            Param(
                "query",
                description='Words, "phrases", prefix*, field:value (agent, type, channel, status, path, '
                "kind), AND OR NOT, ( ).",
                help='words, "phrases", prefix*, field:value, AND OR NOT, ( )',
                required=True,
                flag="query",
            ),
            Param(
                "agent", description="Only entries by this agent.", help="only entries/notes by this agent"
            ),
            Param(
                "type",
                description="Only entries of this type.",
                help="only this type (note, decision, checkpoint, state, memory…)",
            ),
            Param(
                "channel",
                description="Only entries on this channel.",
                help="only log entries on this channel",
            ),
            Param(
                "since",
                description="From this time: ISO, or 12h / 7d ago.",
                help="UTC time (2026-11-30, 2026-11-30T04:00) or age (30m, 12h, 2d)",
            ),
            Param(
                "until",
                description="Up to this time: ISO, or 12h / 7d ago.",
                help="UTC time or age, as --since",
            ),
            Param(
                "path",
                description="Only notes under this vault path.",
                help="only files matching this glob (decisions/*, log/2026-11.md)",
            ),
            Param(
                "mode",
                description="hybrid (default): words and meaning; text: words only; meaning: meaning only.",
                help="hybrid (default): words and meaning; text: words only; meaning: by meaning only",
                choices=("hybrid", "text", "meaning"),
                default="hybrid",
            ),
            how_many("how many hits (default 10)"),
        ),
    ),
    Operation(
        "index_rebuild",
        f"{ADMIN}:index_rebuild",
        "rebuild the search index from the vault",
        "nexus index rebuild",
        description="Rebuild the search index from the vault (it is derived; nothing is lost).",
        title="Rebuild the search index",
        command="index rebuild",
        tool="index_rebuild",
        kind=SET,
    ),
    Operation(
        "index_status",
        f"{ADMIN}:index_status",
        "what the search index holds and whether it is current",
        "nexus index status --json",
        description="What the search index holds and which files changed since they were indexed.",
        title="Search index status",
        command="index status",
        tool="index_status",
    ),
)
