"""Keep docs/cli.md's help blocks equal to what `nexus COMMAND --help` prints.

    .venv/bin/python scripts/cli_docs.py --write    # rewrite every block (and add missing sections)
    .venv/bin/python scripts/cli_docs.py --check    # exit 1 when a block differs (tests/test_docs.py)

Each `## nexus COMMAND` section of docs/cli.md opens with the command's help as the parser built from
the operations registry prints it (usage, description, options, example), between two HTML comments;
the prose after it is written by hand. A command with no section gets one at the end of the file.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "cli.md"
BEGIN = "<!-- help: generated from the registry by `python scripts/cli_docs.py --write` -->"
END = "<!-- end of help -->"
WIDTH = "100"


def commands(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command (``log read``…) and its parser, in the parser's order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                full = f"{prefix} {name}".strip()
                if sub.get_default("handler") is not None:
                    yield full, sub
                yield from commands(sub, full)


def helps() -> dict[str, str]:
    """Each command's help text, formatted ``WIDTH`` columns wide whatever the terminal."""
    sys.path.insert(0, str(ROOT))
    from nexus.surfaces.cli import build_parser

    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        return {name: sub.format_help().rstrip() + "\n" for name, sub in commands(build_parser())}
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def block(text: str) -> str:
    return f"{BEGIN}\n```text\n{text}```\n{END}\n"


def rendered(doc: str, found: dict[str, str]) -> str:
    """``doc`` with every command's block right under its heading (replacing the one there)."""
    out = doc
    missing = []
    for name, text in found.items():
        heading = f"## nexus {name}\n"
        at = out.find(heading)
        if at < 0:
            missing.append(name)
            continue
        start = at + len(heading)
        rest = out[start:].lstrip("\n")
        if rest.startswith(BEGIN):
            rest = rest[rest.index(END) + len(END) :].lstrip("\n")
        out = out[:start] + "\n" + block(text) + "\n" + rest
    for name in missing:
        out = out.rstrip("\n") + f"\n\n## nexus {name}\n\n" + block(found[name])
    return out


def stale(doc: str, found: dict[str, str]) -> list[str]:
    """The commands whose block in ``doc`` is missing or differs from their help now."""
    return [name for name, text in found.items() if f"## nexus {name}\n\n{block(text)}" not in doc]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help="rewrite docs/cli.md's help blocks")
    parser.add_argument("--check", action="store_true", help="exit 1 when a block is out of date")
    args = parser.parse_args()
    found = helps()
    doc = DOCS.read_text(encoding="utf-8")
    if args.write:
        DOCS.write_text(rendered(doc, found), encoding="utf-8")
        return 0
    late = stale(doc, found)
    for name in late:
        print(f"docs/cli.md: `nexus {name}`'s help block is out of date", file=sys.stderr)
    return 1 if late else 0


if __name__ == "__main__":
    raise SystemExit(main())
