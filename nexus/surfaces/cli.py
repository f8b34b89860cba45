"""The ``nexus`` command line: parse, call one library function, print.

The parser holds every command (or, for a command line, only those under its command word): one per
operation of the registry (``arguments.py``), and the few written by hand (``commands.py``,
``setup_command.py``). Every command that a program would read has ``--json``; every command's help
ends with an example. Errors are one line on stderr and a non-zero exit; nothing is written when input
is refused.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import MemoryFullError, NexusError, SettingError, StaleEditError
from . import commands, invocation, usage
from .arguments import Handler, Parser, add_operations, claim_words, group, operation_words
from .console import emit
from .setup_command import add_setup

# the command words of the commands written by hand, and what adds them (the rest come from the
# operations)
HAND_WRITTEN: dict[str, Callable[[dict[str, Any]], None]] = {
    "watch": commands.add_watch,
    "mcp": commands.add_mcp,
    "setup": add_setup,
    "hermes-provider": commands.add_hermes,
    "git": commands.add_git,
    "sync": commands.add_sync,
}


def command_word(argv: Sequence[str]) -> str | None:
    """The command word of a command line (``log`` in ``nexus --vault V log append …``), or None when
    there is none or it is not a command: then the whole parser is built, for the help or the error."""
    rest = list(argv)
    while rest and rest[0].startswith("--vault"):
        rest = rest[1:] if "=" in rest[0] else rest[2:]
    if not rest or rest[0].startswith("-"):
        return None
    return rest[0] if rest[0] in set(HAND_WRITTEN) | operation_words() else None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command-line parser: every command, or only those under the command word ``only`` (what a
    command line needs: building all ~60 subparsers costs ~30 ms, a fifth of a short command)."""
    parser = Parser(
        prog="nexus",
        description="Shared, durable, inspectable memory for AI agents, in a Markdown vault.",
        epilog="example:\n  nexus init vault && cd vault && nexus agent add ella && nexus log tail",
    )
    parser.add_argument("--vault", help="the vault folder (else NEXUS_VAULT, else walk up from here)")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    groups: dict[str, Any] = {"": sub}
    if only is None:
        group(groups, "log")  # first in the help
    add_operations(groups, only)
    for word, add in HAND_WRITTEN.items():
        if only is None or only == word:
            add(groups)
    return parser


def _version() -> str:
    from .. import __version__

    return f"nexus {__version__}"


def _parse(argv: Sequence[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The parser and the parsed command line; a usage error names what was typed, with the close
    word and the help of the command it was typed for (``usage.py``)."""
    from ..variables import unknown

    for warning in unknown(os.environ):  # a misspelt NEXUS_* variable would be ignored silently
        sys.stderr.write(f"nexus: {warning}\n")
    argv = claim_words(argv)
    parser = build_parser(command_word(argv))
    mistyped = usage.unknown_option(parser, argv)
    if mistyped is not None:
        mistyped[0].error(mistyped[1])
    args, extra = parser.parse_known_args(argv)
    if extra:
        usage.command_parser(parser, argv).error(f"unexpected argument(s): {' '.join(extra)}")
    return parser, args


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser, args = _parse(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except SettingError as err:  # named as the person gave it: the flag, the variable or nexus.md
        sys.stderr.write(f"nexus: error: {err.given_as(invocation.origin(args, err.setting))}\n")
        return err.exit_code
    except StaleEditError as err:  # the version moved: the current one and a diff, to edit again
        sys.stderr.write(f"nexus: error: {err}\n{err.diff}")
        if getattr(args, "json", False):
            emit(args, {"error": str(err), "current": err.current, "diff": err.diff}, "")
        return err.exit_code
    except NexusError as err:
        sys.stderr.write(f"nexus: error: {err}\n")
        if getattr(args, "json", False) and isinstance(err, MemoryFullError):
            # a program reads the store's state from the answer instead of parsing the message
            emit(
                args,
                {
                    "error": "memory-full",
                    "message": str(err).split("\n", 1)[0],
                    "usage": err.usage,
                    "entries": list(err.entries),
                },
                "",
            )
        return err.exit_code
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    except OSError as err:  # a disk error (EIO, ENOSPC…): one line; an append it stopped left no entry
        where = f": {err.filename}" if err.filename else ""
        sys.stderr.write(f"nexus: error: {err.strerror or err}{where} (nothing was acknowledged)\n")
        return 1
