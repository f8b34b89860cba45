"""The claims' operations, declared: take, renew, release, list, the commit guard's check. Their
functions are in ``nexus/operations/claims.py``.
"""

from __future__ import annotations

from ..spec import ADD, ONLY_CLI, Operation, Param

CLAIMS = "nexus.operations.claims"
TTL_HELP = "how long: 45m, 2h, 1h30m (default 30m, at most 24h)"
PROJECT_HELP = "the project folder (default: the git repository of the current folder)"
CLAIM_ID = "The claim's id."

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "claim",
        f"{CLAIMS}:claim",
        "take paths (globs relative to the project) or task:NAME for a while; refused if another "
        "agent holds them",
        'nexus claim "src/parser/**" --agent ella --ttl 45m --reason "rewriting the lexer"',
        description="Take paths (globs from the project root) or task:NAME for a while; refused if another "
        "agent holds them.",
        title="Claim paths",
        command="claim take",
        tool="claim",
        acts="required",
        kind=ADD,
        agent_tool=True,
        params=(
            Param(
                "patterns",
                "list",
                "Globs or task:NAME.",
                help="path globs relative to the project root, or task:NAME",
                required=True,
                flag="patterns",
                cli={"nargs": "+", "metavar": "PATTERN"},
            ),
            Param("reason", description="Why, one line.", help="why, one line", required=True),
            Param("ttl", description="45m, 2h (max 24h).", help=TTL_HELP, default="30m"),
            Param(
                "mode",
                description="or shared.",
                help="exclusive: no one else; shared: others may share, not take it exclusively",
                default="exclusive",
                choices=("exclusive", "shared"),
                surfaces=ONLY_CLI,  # (over MCP a claim is exclusive: the default tool set stays small)
            ),
            Param("project", help=PROJECT_HELP, surfaces=ONLY_CLI),
        ),
    ),
    Operation(
        "claim_renew",
        f"{CLAIMS}:renew",
        "move the expiry of your active claim",
        "nexus claim renew 01KB7Q2V4J6M8P0R2T4W6Y8A0C --agent ella --ttl 1h",
        description="Keep your active claim longer: a new expiry, TTL from now.",
        title="Renew a claim",
        command="claim renew",
        tool="claim_renew",
        acts="required",
        kind=ADD,
        params=(
            Param("id", description=CLAIM_ID, help="the claim's id", required=True, flag="id"),
            Param(
                "ttl", description="How long from now: 45m, 2h (at most 24h).", help=TTL_HELP, default="30m"
            ),
        ),
    ),
    Operation(
        "release",
        f"{CLAIMS}:release",
        "end a claim at once (its holder, or a person for anyone's)",
        "nexus claim release 01KB7Q2V4J6M8P0R2T4W6Y8A0C --agent ella",
        description="End your claim.",
        title="Release a claim",
        command="claim release",
        tool="release",
        acts="required",
        kind=ADD,
        agent_tool=True,
        params=(Param("id", description=CLAIM_ID, help="the claim's id", required=True, flag="id"),),
    ),
    Operation(
        "claims",
        f"{CLAIMS}:listing",
        "the active claims: holder, what, expiry, reason (--free task:*: the tasks nobody holds)",
        "nexus claims --free 'task:*' --json",
        description="The active claims (holder, patterns, expiry, reason); free='task:*': tasks nobody "
        "holds.",
        title="List claims",
        command="claims",
        tool="claims",
        params=(
            Param(
                "free",
                description="A task glob: list the tasks nobody holds.",
                help="list the tasks matching this glob (task:*) that nobody holds now",
            ),
            Param("project", help=PROJECT_HELP + "; only its claims", surfaces=ONLY_CLI),
            Param(
                "all",
                "bool",
                "true: ended and lost claims too.",
                help="ended and lost claims too",
                default=False,
            ),
        ),
    ),
    Operation(
        "claims_check",
        f"{CLAIMS}:check",
        "which of these paths another agent holds exclusively (exit 1 if any): the commit guard",
        "nexus claims check --agent ella --project . src/parser/lexer.py",
        command="claims check",
        acts="optional",
        agent_help="who asks (their own claims pass)",
        why_not="the question `nexus git setup --guard`'s pre-commit hook asks; agents are stopped at "
        "the edit",
        params=(
            Param(
                "paths",
                "list",
                help="paths relative to the project root (or absolute inside it)",
                required=True,
                flag="paths",
                cli={"nargs": "+", "metavar": "PATH"},
            ),
            Param("project", help=PROJECT_HELP),
        ),
    ),
)
