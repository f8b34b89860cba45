"""The set-up operations, declared: what a person does once in a shell (a vault, identities, keys,
git, imports). None has an MCP tool; each says why. Their functions are in
``nexus/operations/setup.py``.
"""

from __future__ import annotations

from ..spec import CHANGE, Operation, Param

SETUP = "nexus.operations.setup"

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "init",
        f"{SETUP}:init",
        "create a vault (safe to run again)",
        "nexus init ~/vault",
        command="init",
        needs_vault=False,
        why_not="creates a vault: set-up, done once by a person in a shell",
        params=(
            Param("path", help="folder to create the vault in", default=".", flag="path", cli={"nargs": "?"}),
            Param("force", "bool", help="use a folder that holds other files", default=False),
        ),
    ),
    Operation(
        "agent_add",
        f"{SETUP}:agent_add",
        "create an identity with its key pair",
        "nexus agent add ella   |   nexus agent add sam --human",
        command="agent add",
        why_not="creates a key pair on the machine: set-up, done by a person",
        params=(
            Param("name", help="lowercase letters, digits and dashes", required=True, flag="name"),
            Param("human", "bool", help="a person, not an agent", default=False),
        ),
    ),
    Operation(
        "agent_trust",
        f"{SETUP}:agent_trust",
        "trust the key NAME's identity note declares now (accept a key rotation)",
        "nexus agent trust ella",
        command="agent trust",
        why_not="accepting a changed key is a person's decision, never an agent's",
        params=(Param("name", required=True, flag="name"),),
    ),
    Operation(
        "agent_rotate",
        f"{SETUP}:agent_rotate",
        "give NAME a new signing key, announced by an entry signed with the old one",
        "nexus agent rotate ella",
        command="agent rotate",
        why_not="makes a key pair on the machine and replaces a private key: done by a person",
        params=(Param("name", required=True, flag="name"),),
    ),
    Operation(
        "log_resolve_fork",
        f"{SETUP}:resolve_fork",
        "end a fork of an agent's chain: a signed reconcile that goes on from one branch",
        "nexus log resolve-fork --agent ella --keep 01KB7Q2V4J6M8P0R2T4W6Y8A0C",
        command="log resolve-fork",
        acts="required",
        why_not="which of an agent's two histories goes on is a person's call, after reading both",
        params=(
            Param("keep", help="an entry on the branch to go on from", required=True, cli={"metavar": "ID"}),
        ),
    ),
    Operation(
        "memory_import_hermes",
        f"{SETUP}:import_hermes",
        "import a Hermes memories folder (MEMORY.md to the agent, USER.md to the vault)",
        "nexus memory import-hermes ~/.hermes/memories --agent ella",
        command="memory import-hermes",
        acts="required",
        why_not="a one-off migration from files on disk, run from a shell",
        params=(Param("folder", help="a Hermes home or its memories/ folder", required=True, flag="folder"),),
    ),
    Operation(
        "git_setup",
        f"{SETUP}:git_setup",
        "make the vault a git repository nexus merges: merge driver, .gitattributes, .gitignore, hooks",
        "nexus git setup",
        command="git setup",
        why_not="configures a git clone (driver, hooks): set-up, done once per clone by a person",
        params=(
            Param(
                "guard",
                help="instead: install the claims guard (a pre-commit check) in the code repository REPO",
                cli={"metavar": "REPO"},
            ),
        ),
    ),
    Operation(
        "git_resolve",
        f"{SETUP}:git_resolve",
        "resolve the conflict markers a plain `git merge` left, as the nexus merge driver would",
        "nexus git resolve --json",
        command="git resolve",
        kind=CHANGE,
        why_not="repairs a clone after a merge without the driver: a person's act, from a shell",
    ),
    Operation(
        "log_import_copies",
        f"{SETUP}:import_copies",
        "import entries from file-sync conflict copies of segments (Syncthing, Dropbox…), archive them",
        "nexus log import-copies --json",
        command="log import-copies",
        why_not="the watcher and `nexus sync` do it on their own; maintenance from a shell",
    ),
)
