"""Usage errors with a way forward: an unknown command, option or choice on the command line is named
as typed, with the close one (did you mean …) and the help of the command it was typed for.

argparse alone reports a mistyped option of a command that also misses a required one as only the
missing one (``--chanel parser`` says ``--channel`` is required), and an unknown option as the whole
program's ("nexus: unrecognized arguments", with ``nexus --help``); :func:`unknown_option` looks at
the command line first, in the parser of the command it names.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence

from ..suggest import closest, did_you_mean

_CHOICE = re.compile(r"argument (\S+): invalid choice: '([^']*)' \(choose from (.*)\)$", re.S)


def command_parser(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser of the (sub)command a command line names: ``nexus log append``'s for
    ``log append --agent …``, the whole program's when it names none."""
    current = parser
    value_next = False
    for token in argv:
        if value_next:  # the value of an option before it (`--vault V log tail`)
            value_next = False
            continue
        if token.startswith("-"):
            action = current._option_string_actions.get(token)
            value_next = action is not None and action.nargs != 0
            continue
        sub = _subcommands(current)
        if sub is None or token not in sub.choices:
            break
        current = sub.choices[token]
    return current


def unknown_option(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[argparse.ArgumentParser, str] | None:
    """The parser of the command named and what to say, when the command line has an option that
    command does not know (its own options and the program's count); None when all are known."""
    target = command_parser(parser, argv)
    known = set(parser._option_string_actions) | set(target._option_string_actions)
    for token in argv:
        if token == "--":
            break
        name = token.split("=", 1)[0]
        if not re.fullmatch(r"--?[A-Za-z][\w-]*", name) or name in known:
            continue
        if any(k.startswith(name) for k in known if k.startswith("--")) and name.startswith("--"):
            continue  # an unambiguous abbreviation argparse accepts (or reports itself)
        longs = sorted(k for k in known if k.startswith("--") and k not in ("--help", "--version"))
        return target, f"unknown option {name}{did_you_mean(name, longs, quote='')}"
    return None


def explain(prog: str, message: str) -> str:
    """argparse's message, made to name the way forward: an unknown command or choice with the close
    one instead of the list of every choice."""
    m = _CHOICE.search(message)
    if m is None:
        return message
    what, typed, listed = m.groups()
    choices = re.findall(r"'([^']*)'", listed)
    close = closest(typed, choices)
    if what == "COMMAND":
        hint = f" (did you mean `{prog} {close}`?)" if close else ""
        return f"unknown command {typed!r}{hint}"
    return f"argument {what}: invalid choice {typed!r}" + (
        f" (did you mean {close!r}?)" if close else f" (choose from {listed})"
    )


def _subcommands(
    parser: argparse.ArgumentParser,
) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None
