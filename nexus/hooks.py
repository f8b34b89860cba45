"""``nexus-hook``: the entry point agent runtimes call from their hooks.

Claude Code and Codex run hook commands and treat exit code 2 as "block the turn"; argparse exits 2 on
a usage error. So this entry point parses its few arguments by hand and ALWAYS exits 0: whatever goes
wrong becomes one line of context (and a line on stderr), never a blocked session.

    nexus-hook session-start --agent ella     # the brief, at session start
    nexus-hook prompt --agent ella            # the brief, before every turn (only what is new)

Context a hook injects is capped by the runtimes at about 10,000 characters, which is the brief's
default budget. The hook reads the runtime's JSON event from stdin when there is one and ignores it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

EVENTS = ("session-start", "prompt")
USAGE = "usage: nexus-hook session-start|prompt --agent NAME [--vault PATH] [--max-chars N]"


def _parse(argv: Sequence[str]) -> tuple[str, dict[str, str]]:
    if not argv or argv[0] not in EVENTS:
        raise ValueError(USAGE)
    opts: dict[str, str] = {}
    rest = list(argv[1:])
    while rest:
        key = rest.pop(0)
        if key not in ("--agent", "--vault", "--max-chars") or not rest:
            raise ValueError(USAGE)
        opts[key[2:]] = rest.pop(0)
    if "agent" not in opts:
        opts["agent"] = os.environ.get("NEXUS_AGENT", "")
    if not opts["agent"]:
        raise ValueError(USAGE + " (or set NEXUS_AGENT)")
    return argv[0], opts


def context(event: str, agent: str, vault_arg: str | None, max_chars: int | None) -> str:
    """The text to inject for ``event``; raises NexusError when the vault or agent is wrong."""
    from . import brief
    from .settings import resolve
    from .vault import find

    vault = find(vault_arg, os.environ.get("NEXUS_VAULT"), Path.cwd())
    settings = resolve({"brief_max_chars": max_chars} if max_chars else {}, os.environ, vault.config())
    built = brief.build(
        vault,
        agent,
        max_chars=settings.brief_max_chars,
        ack_types=settings.ack_types,
        race_window=settings.race_window_seconds,
        stale_minutes=settings.stale_checkpoint_minutes,
    )
    return brief.render(built)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if not sys.stdin.isatty():
            sys.stdin.read()  # the runtime's event JSON: drained so the runtime never blocks on it
    except (OSError, ValueError):
        pass
    try:
        event, opts = _parse(argv)
        max_chars = int(opts["max-chars"]) if "max-chars" in opts else None
        sys.stdout.write(context(event, opts["agent"], opts.get("vault"), max_chars))
        sys.stdout.write("\n")
    except Exception as err:  # a hook must never block the agent: report and exit 0
        message = f"nexus: the live context could not be loaded: {err}"
        sys.stdout.write(message + "\n")
        sys.stderr.write(message + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
