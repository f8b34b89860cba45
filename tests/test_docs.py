"""Every CLI command is documented: help text, an example in its help, and a section in docs/cli.md."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

from nexus.surfaces.cli import build_parser

DOCS = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def _commands(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                full = f"{prefix} {name}".strip()
                if sub.get_default("handler") is not None:
                    yield full, sub
                yield from _commands(sub, full)


def test_there_are_commands() -> None:
    names = [name for name, _ in _commands(build_parser())]
    assert {"init", "agent add", "log append", "log read", "verify"} <= set(names)


def test_every_command_has_help_and_an_example() -> None:
    for name, sub in _commands(build_parser()):
        assert sub.description, f"`nexus {name}` has no description"
        assert sub.epilog and "example" in sub.epilog and "nexus " in sub.epilog, (
            f"`nexus {name}` has no example in its help"
        )


def test_every_command_has_a_section_in_docs_cli_md_opening_with_its_help() -> None:
    """Command by command, docs/cli.md shows the help the registry gives now (scripts/cli_docs.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cli_docs", DOCS.parent.parent / "scripts" / "cli_docs.py")
    assert spec is not None and spec.loader is not None
    cli_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli_docs)
    found = cli_docs.helps()
    assert set(found) == {name for name, _ in _commands(build_parser())}
    late = cli_docs.stale(DOCS.read_text(encoding="utf-8"), found)
    assert not late, (
        f"docs/cli.md is out of date with the registry for {late}: run "
        "`.venv/bin/python scripts/cli_docs.py --write` (then write the prose of a new section)"
    )


def _options(sub: argparse.ArgumentParser) -> list[tuple[tuple[str, ...], str, object]]:
    return [(tuple(a.option_strings), a.dest, a.default) for a in sub._actions]


def test_a_command_line_builds_only_its_command_word_and_parses_the_same() -> None:
    """`main` builds only the subparsers under the command word it was given (a cost on every
    command); each of them must be the very command the whole parser holds, and nothing else."""
    from nexus.surfaces.cli import command_word

    full = dict(_commands(build_parser()))
    words = {name.split(" ", 1)[0] for name in full}
    for word in words:
        assert command_word(["--vault", "v", word, "x"]) == word
        part = dict(_commands(build_parser(word)))
        assert set(part) == {name for name in full if name.split(" ", 1)[0] == word}, word
        for name, sub in part.items():
            assert _options(sub) == _options(full[name]), name
    assert command_word(["--vault=v", "log", "tail"]) == "log"
    assert command_word(["--help"]) is None and command_word([]) is None
    assert command_word(["lgo", "tail"]) is None  # a typo gets the whole parser's error and choices
