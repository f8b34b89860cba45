"""The parts of ``nexus``'s argument parser: a command (its help ending with an example, ``--vault``
after it, ``--json`` for programs), the groups of commands (``nexus log``, ``nexus claim``…), one
command per operation of the registry with its parameters as options, usage errors as one line with
the close word (``usage.py``), and ``nexus claim PATTERN…`` read as ``nexus claim take PATTERN…``.
The whole parser, with the commands written by hand, is put together in ``cli.py``."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import Any

from ..operations import CLI, OPERATIONS
from . import usage
from .console import one_line
from .invocation import run_operation

Handler = Callable[[argparse.Namespace], int]

# the help of each group of commands (``nexus log``, ``nexus checkpoint``…)
GROUPS = {
    "agent": "identities: agents and people",
    "log": "the live-context log",
    "checkpoint": "per-agent checkpoints",
    "state": "the project state note (versioned)",
    "memory": "bounded agent memory, the user profile, the memory index",
    "memory facts": "the memory index: one note per fact under memory/",
    "index": "the search index under .nexus/index/",
    "git": "the vault as a git repository",
    "claim": "claims: take (`nexus claim PATTERN…` is `nexus claim take PATTERN…`), renew, release",
}


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` finds it: ``COLUMNS``, else standard
    output's terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(1).columns  # (file descriptor 1: standard output)
        except (ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class Formatter(argparse.RawDescriptionHelpFormatter):
    """The help as typed (descriptions and examples keep their lines), as wide as the terminal. argparse
    makes a formatter for every option it adds and, given no width, asks ``shutil``, whose import loads
    zlib, bz2 and lzma: 2 to 3 ms of CPU of every command (``benchmarks/bench_cli.py``)."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        super().__init__(
            prog, indent_increment, max_help_position, _columns() - 2 if width is None else width
        )


class Parser(argparse.ArgumentParser):
    """Usage errors as one line (``nexus: error: …``), like every other error; exit 2. Its commands'
    parsers are Parsers too, each with the :class:`Formatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:
        said = one_line(usage.explain(self.prog, message))
        self.exit(2, f"nexus: error: {self.prog}: {said} (see `{self.prog} --help`)\n")


def command(
    sub: Any, name: str, handler: Handler, help: str, example: str, *, json_flag: bool = True
) -> argparse.ArgumentParser:
    """A command added to the subparsers ``sub``: run by ``handler``, its help ending with ``example``."""
    p: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=help,
        epilog=f"example:\n  {example}",
    )
    p.set_defaults(handler=handler)
    # (also after the command: `nexus mcp --agent ella --vault X`; SUPPRESS keeps one given before it)
    p.add_argument("--vault", default=argparse.SUPPRESS, help="the vault folder (as before the command)")
    if json_flag:
        p.add_argument("--json", action="store_true", help="print JSON for programs")
    return p


def group(groups: dict[str, Any], words: str) -> Any:
    """The subparsers a command with these leading words is added to (made when first asked)."""
    if words not in groups:
        parent, _, last = words.rpartition(" ")
        holder = groups.get(f"command:{words}")  # a command with commands of its own (`decisions show`)
        holder = holder or group(groups, parent).add_parser(last, help=GROUPS.get(words, ""))
        groups[words] = holder.add_subparsers(title=f"{last} commands", metavar="COMMAND")
    return groups[words]


def operation_words() -> set[str]:
    """The command words of the commands generated from the operations (``log``, ``brief``…)."""
    return {op.command.split(" ", 1)[0] for op in OPERATIONS if op.command}


def add_operations(groups: dict[str, Any], only: str | None = None) -> None:
    """One subcommand per operation that has a command (only those under the command word ``only``,
    when given), with its parameters as options."""
    for op in OPERATIONS:
        if not op.command or (only is not None and op.command.split(" ", 1)[0] != only):
            continue
        prefix, _, last = op.command.rpartition(" ")
        p = command(
            group(groups, prefix), last, run_operation, op.summary, op.example, json_flag=op.json_flag
        )
        p.set_defaults(operation=op.name)
        groups[f"command:{op.command}"] = p
        if op.acts != "none":
            p.add_argument("--agent", required=op.acts == "required", help=op.agent_help)
        exclusive: dict[str, Any] = {}
        for param in op.params_for(CLI):
            _add_param(p, param, exclusive)


def _add_param(p: argparse.ArgumentParser, param: Any, groups: dict[str, Any]) -> None:
    """A parameter as an option (or a positional argument, or a --X-file option reading a file;
    options in one ``group`` exclude each other)."""
    kw = _argument_keywords(param)
    target: Any = p
    if "group" in param.cli:
        if param.cli["group"] not in groups:
            groups[param.cli["group"]] = p.add_mutually_exclusive_group(
                required=param.cli.get("group_required", False)
            )
        target = groups[param.cli["group"]]
    elif param.file_flag and param.flag is not None:
        target = p.add_mutually_exclusive_group(required=param.required)
    elif param.flag is not None and not param.cli_flag.startswith("-"):
        p.add_argument(param.cli_flag, **kw)
        return
    if param.flag is not None:
        target.add_argument(
            param.cli_flag, dest=param.name, required=param.required and not param.file_flag, **kw
        )
    if param.file_flag:
        target.add_argument(
            param.file_flag,
            dest=f"{param.name}_file",
            required=param.required and param.flag is None,
            metavar=param.cli.get("file_metavar") or param.file_flag.lstrip("-").replace("-", "_").upper(),
            help=param.cli.get("file_help"),
        )


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} is not a count of 1 or more")
    return n


def _argument_keywords(param: Any) -> dict[str, Any]:
    """argparse's keywords for a parameter: help, type or action, choices, default, nargs, metavar."""
    kw: dict[str, Any] = {"help": param.help}
    if "metavar" in param.cli:
        kw["metavar"] = param.cli["metavar"]
    if param.kind == "bool":
        kw["action"] = "store_true"
    elif param.kind in ("int", "float"):
        kw["type"] = (
            _positive if param.cli.get("type") == "positive" else {"int": int, "float": float}[param.kind]
        )
    elif param.kind == "list" and "nargs" not in param.cli:
        kw["action"] = "append"
    if "nargs" in param.cli:
        kw["nargs"] = param.cli["nargs"]
    if param.choices and param.cli_choices:
        kw["choices"] = param.choices
    if param.default is not None and param.kind != "bool":
        kw["default"] = param.default
    return kw


def claim_words(argv: Sequence[str]) -> list[str]:
    """``nexus claim PATTERN…`` is ``nexus claim take PATTERN…`` (argparse cannot hold patterns and the
    ``renew``/``release`` commands as positionals of one command)."""
    out = list(argv)
    i = 0
    while i < len(out) and out[i].startswith("--vault"):
        i += 1 if "=" in out[i] else 2
    if (
        i + 1 < len(out)
        and out[i] == "claim"
        and out[i + 1] not in ("take", "renew", "release", "-h", "--help")
    ):
        out.insert(i + 1, "take")
    return out
