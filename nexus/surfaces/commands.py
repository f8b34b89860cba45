"""The commands written by hand rather than generated from an operation, each a process of its own
or a program's entry point: ``nexus watch`` (the watcher), ``nexus mcp`` (the MCP server over stdio),
``nexus hermes-provider`` (Hermes Agent's plugin), ``nexus git merge-driver``/``refresh`` (what git
runs) and ``nexus sync``. ``nexus setup`` is in ``setup_command.py``.

Every handler imports what it needs inside itself, so a command pays only for its own imports.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from . import invocation
from .arguments import command, group
from .console import emit


def cmd_watch(args: argparse.Namespace) -> int:
    from ..watch import watcher

    watcher.run(
        invocation.workspace(args),
        settle_seconds=args.settle,
        once=args.once,
        as_json=args.json,
        child_env=os.environ,
    )
    return 0


def add_watch(groups: dict[str, Any]) -> None:
    sub = groups[""]
    p = command(
        sub,
        "watch",
        cmd_watch,
        "watch the vault: derived state, shadow and restore, a person's notes as entries",
        "nexus watch --rescan 5",
    )
    p.add_argument("--once", action="store_true", help="one full pass, then exit")
    p.add_argument(
        "--rescan",
        dest="rescan_seconds",
        type=float,
        help="seconds between full rescans (default: the vault's rescan_seconds, 5)",
    )
    p.add_argument(
        "--settle",
        type=float,
        default=3.0,
        help="seconds a person's text must stay unchanged before it is signed (default 3)",
    )


def cmd_mcp(args: argparse.Namespace) -> int:
    from . import mcp_front  # answers the first requests while the MCP SDK loads, then hands over

    return mcp_front.serve(
        invocation.workspace(args), args.agent, mode=os.environ.get("NEXUS_MCP_FRONT", "lazy")
    )


def add_mcp(groups: dict[str, Any]) -> None:
    sub = groups[""]
    p = command(
        sub,
        "mcp",
        cmd_mcp,
        "serve nexus to an agent runtime over MCP (stdio)",
        "nexus mcp --agent ella",
        json_flag=False,
    )
    p.add_argument("--agent", required=True, help="the identity tools act as (appends are signed by it)")
    p.add_argument(
        "--tools",
        choices=("agent", "all"),
        default=None,
        help="agent (default): the few tools an agent's turns need; all: every tool",
    )


def cmd_hermes_provider(args: argparse.Namespace) -> int:
    from . import hermes

    # the protocol owns standard output: anything else printed goes to standard error
    answers, sys.stdout = sys.stdout, sys.stderr
    try:
        return hermes.serve(sys.stdin, answers)
    finally:
        sys.stdout = answers


def add_hermes(groups: dict[str, Any]) -> None:
    command(
        groups[""],
        "hermes-provider",
        cmd_hermes_provider,
        "answer Hermes Agent's nexus plugin over stdio (the plugin `nexus setup hermes` installs runs it)",
        "nexus hermes-provider < requests.jsonl",
        json_flag=False,
    )


def cmd_git_merge_driver(args: argparse.Namespace) -> int:
    from ..sync import gitsync

    code, lines = gitsync.merge_driver(args.base, args.ours, args.theirs, args.path, env=os.environ)
    for line in lines:
        sys.stderr.write(f"{gitsync.DRIVER_SAYS}{line}\n")
    return code


def cmd_git_refresh(args: argparse.Namespace) -> int:
    from ..sync import gitsync

    if os.environ.get(gitsync.IN_SYNC_ENV):
        return 0  # `nexus sync` refreshes once its merge is done (and holds the locks meanwhile)
    data = gitsync.refresh(invocation.vault(args), args.before, trust=invocation.trust())
    if not args.quiet or args.json:
        emit(
            args,
            data,
            f"{data['arrived']} entries arrived, {len(data['renumbered'])} decisions "
            f"renumbered, {len(data['imported'])} conflict copies imported",
        )
    return 0


def cmd_sync(args: argparse.Namespace) -> int:
    from ..sync import gitsync

    data = gitsync.sync(invocation.vault(args), args.remote, env=os.environ, trust=invocation.trust())
    for line in data["conflicts"]:
        if not args.json:
            sys.stderr.write(f"nexus: listed: {line}\n")
    text = (
        f"synced with {data['remote']}/{data['branch']}: {data['committed']} commit(s), "
        f"{'merged' if data['merged'] else 'nothing to merge'}, "
        f"{'pushed' if data['pushed'] else 'nothing to push'}"
    )
    emit(args, data, text)
    return 0


def add_git(groups: dict[str, Any]) -> None:
    gitp = group(groups, "git")
    p = command(
        gitp,
        "merge-driver",
        cmd_git_merge_driver,
        "what git runs to merge a file nexus manages (registered by `nexus git setup`)",
        "nexus git merge-driver %O %A %B %L %P",
        json_flag=False,
    )
    for name in ("base", "ours", "theirs", "marker", "path"):
        p.add_argument(name)
    p = command(
        gitp,
        "refresh",
        cmd_git_refresh,
        "bring derived state up to date after git changed the vault (run by the git hooks)",
        "nexus git refresh --before ORIG_HEAD",
    )
    p.add_argument("--quiet", action="store_true", help="print nothing")
    p.add_argument(
        "--before",
        metavar="COMMIT",
        help="what the work tree held before git changed it (the hooks pass ORIG_HEAD)",
    )


def add_sync(groups: dict[str, Any]) -> None:
    sub = groups[""]
    p = command(
        sub,
        "sync",
        cmd_sync,
        "commit what nexus manages, fetch, merge through the driver, verify, push (never an "
        "unverified vault)",
        "nexus sync --remote origin",
    )
    p.add_argument("--remote", help="the git remote (default: the branch's upstream, else origin)")
