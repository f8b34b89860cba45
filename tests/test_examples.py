"""Every command example nexus prints or documents runs: the example in each command's ``--help`` (the
registry's, and the hand-written commands'), the example in ``nexus --help``, the commands in the
README and every ``nexus …`` line in a code block under ``docs/``.

Each source runs, in its own order, in a vault prepared with what the examples talk about (agents
ella and lyra, a person sam, a question waiting for lyra, a decision, versions of the project state,
a fact, a memory archive, a bank entry). What an example
leaves as a placeholder is given a real value (``ID`` the id of an entry that exists, ``state.md`` a
file that exists…). Every example must exit 0, except the few listed in ``SITUATIONS`` that need a
situation the prepared vault does not have (a fork, an edited entry): each of those must still be
accepted by the parser and fail only with the one-line error it names. Commands that run until
stopped (``watch``, ``mcp``) or talk to a remote (``sync``) are only parsed. An example that is one
plain ``nexus`` command runs through the CLI's ``main`` in this process (the same parsing, handlers,
error lines and exit codes, with the example's environment and folder); one that needs a shell
(a pipe, ``&&``, a redirection, a variable) runs in ``bash -c`` with real ``nexus`` processes. The
README's first session, with its output, is ``test_readme.py``.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Run, run_in_process
from test_readme import session

from nexus.surfaces import cli
from nexus.surfaces.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
ULID = re.compile(r"\b01[0-9A-HJKMNP-TV-Z]{24}\b")

# examples that need a situation the prepared vault does not have: they must parse, then fail with one
# error line (or, where said, may succeed)
SITUATIONS = {
    "nexus log resolve-fork": "needs a fork",
    'nexus log append --agent ella --channel c --type note --summary "next"': "needs a fork (or succeeds)",
    "nexus log recover": "needs an entry an editor changed",
    'nexus memory add --agent ella --content "…"': "needs a full store (or succeeds)",
    "nexus claim renew": "needs a claim's id",
    "nexus claim release": "needs a claim's id",
    "nexus claim src/parser/lexer.py --agent lyra": "needs ella's claim on it (refused)",
    "nexus git setup --guard": "needs a code repository",
}
# serve a runtime until stopped, or need a git remote: parsed only
PARSED_ONLY = ("nexus watch", "nexus mcp", "nexus sync", "nexus git merge-driver", "nexus hermes-provider")
# run in a copy of the vault changed first by a step: what the example makes must not be there yet
BEFORE = {"nexus memory facts add": "nexus memory facts retire search-engine"}
# examples whose documented exit is not 0: the code, when the documentation shows it
EXITS = {"nexus setup --check": 1}


def help_examples() -> Iterator[str]:
    """The example of ``nexus --help`` and of every command's ``--help``, as printed."""
    parser = build_parser()

    def walk(p: argparse.ArgumentParser) -> Iterator[str]:
        if p.epilog:
            for line in p.epilog.split("\n")[1:]:
                yield from (part.strip() for part in line.split("   |   ") if part.strip())
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in dict.fromkeys(action.choices.values()):
                    yield from walk(sub)

    yield from walk(parser)


def document_examples(path: Path) -> Iterator[tuple[str, bool]]:
    """The ``nexus`` command lines in a Markdown file's code blocks (``$ nexus …`` in a console block,
    ``nexus …`` in a shell block; a trailing backslash continues a line; comments dropped), each with
    whether the output printed under it is an error."""
    in_block = False
    found: list[list[Any]] = []
    pending = ""
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith("```"):
            in_block, pending = not in_block, ""
            continue
        if not in_block:
            continue
        if pending:
            line, pending = pending + " " + line.strip(), ""
        text = line.strip()
        text = text[2:] if text.startswith("$ ") else text
        if not re.match(r"nexus(-hook)? ", text):
            if found and found[-1][2] and text:  # the first line printed under a command
                found[-1][1:] = [text.startswith("nexus: error:"), False]
            continue
        if text.endswith("\\"):
            pending = "$ " + text[:-1].rstrip()
            continue
        found.append([re.sub(r"\s+#.*$", "", text), False, True])
    for command, error, _ in found:
        yield command, error


def sources() -> list[tuple[str, list[tuple[str, bool]]]]:
    """Each source of examples and its examples, in order, each with whether it shows an error."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_session = {command for command, _ in session(readme)}  # run with its output by test_readme
    listed = [
        ("--help", [(example, False) for example in help_examples()]),
        ("README.md", [e for e in document_examples(ROOT / "README.md") if e[0] not in first_session]),
    ]
    listed += [(f"docs/{d.name}", list(document_examples(d))) for d in sorted((ROOT / "docs").glob("*.md"))]
    return [(name, examples) for name, examples in listed if examples]


class Scene:
    """A vault holding what the examples talk about (made once), and a fresh copy of it for each
    example, so that every example runs against the same vault whatever ran before it."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.base = where / "base"
        self.ids: list[str] = []
        self.archived = ""
        self.runs = 0
        home = self.base / "home"
        home.mkdir(parents=True)
        vault = home / "vault"
        env = self.env(self.base)
        self.run("nexus init vault", env, home)
        for name in ("ella", "lyra", "sam --human"):
            self.run(f"nexus agent add {name}", env, vault)
        for who, summary in (("ella", "sqlite?"), ("lyra", "yes, sqlite")):
            self.ids.append(
                self.run(
                    f"nexus log append --agent {who} --channel db --type question --summary '{summary}'",
                    env,
                    vault,
                )
            )
        self.run(
            "nexus decide --agent ella --title 'Tokens in the keychain' --decision 'Never in .env'"
            " --rationale 'Leaks'",
            env,
            vault,
        )
        for version in range(3):
            self.run(
                f"printf '# Project state\\n\\n- step {version}\\n'"
                f" | nexus state set --agent ella --expect {version} --file -",
                env,
                vault,
            )
        for content in (
            "CI runs on a 2-core box",
            "old plan: try FTS5 first",
            "plan: migrate the CI next week",
        ):
            self.run(f"nexus memory add --agent ella --content '{content}'", env, vault)
        for content in ("Sam prefers short answers", "Sam's timezone is Europe/Paris"):
            self.run(f'nexus memory add --target user --content "{content}"', env, vault)
        (vault / "keep.md").write_text(
            "CI runs on a 2-core box\n§\nold plan: try FTS5 first\n", encoding="utf-8"
        )
        self.run("nexus memory consolidate --agent ella --file keep.md --archive migrate", env, vault)
        self.archived = next((vault / "archive" / "memory").glob("m-*.md")).stem
        self.run(
            "nexus memory facts add --type project --description 'The build uses make' --name build-tool",
            env,
            vault,
        )
        self.run("nexus memory facts retire build-tool", env, vault)
        self.run(
            "nexus memory facts add --type project --description 'Search uses Whoosh' --name search-engine",
            env,
            vault,
        )
        self.run(
            "nexus checkpoint save --agent ella --task 'Port the parser' --step 'lexer' --next 'grammar'",
            env,
            vault,
        )
        for content in ("Search uses Whoosh, not FTS5", "Entries are signed", "Logs are monthly"):
            self.run(f"nexus retain --agent ella --type decision --content '{content}'", env, vault)
        # the files and folders the examples name
        (vault / "state.md").write_text("# Project state\n\n- from a file\n", encoding="utf-8")
        (vault / "new.md").write_text("CI runs on a 2-core box\n", encoding="utf-8")
        (vault / "plan.txt").write_text("keep 1\narchive 2\n", encoding="utf-8")
        hermes = home / ".hermes" / "memories"
        hermes.mkdir(parents=True)
        (hermes / "MEMORY.md").write_text("The build uses make\n§\nTests run with pytest\n", encoding="utf-8")

    def env(self, at: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXUS_", "HERMES_"))}
        env.update(
            HOME=str(at / "home"),
            NEXUS_HOME=str(at / "keys"),
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            NO_COLOR="1",
        )
        return env

    def run(self, command: str, env: dict[str, str], cwd: Path) -> str:
        proc = shell(command, env, cwd)
        assert proc.returncode == 0, f"{command}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
        return proc.stdout.strip()

    def example(self, typed: str) -> Run | subprocess.CompletedProcess[str]:
        """Run one example in a fresh copy of the vault (``init``: in an empty home folder; ``agent
        add``: in a fresh vault with nobody in it yet)."""
        self.runs += 1
        at = self.where / f"run-{self.runs}"
        if typed.startswith(("nexus init", "nexus agent add")):
            (at / "home").mkdir(parents=True)
            env = self.env(at)
            if typed.startswith("nexus init"):
                return shell(typed, env, at / "home")
            self.run("nexus init vault", env, at / "home")
        else:
            shutil.copytree(self.base, at, symlinks=True)
            env = self.env(at)
            for start, step in BEFORE.items():
                if typed.startswith(start):
                    self.run(step, env, at / "home" / "vault")
        return shell(typed, env, at / "home" / "vault")

    def typed(self, example: str) -> str:
        """The example with its placeholders given real values (an entry id: one that exists)."""
        text = example.replace("%O %A %B %L %P", "a b c 7 p")
        text = text.replace("m-20261130t044107z-3fa2b1", self.archived)
        ids = iter(self.ids * 4)
        return re.sub(r"\b01[0-9A-HJKMNP-TV-Z]{24}\b|\b01KB[0-9A-Z]*…|\bID\b", lambda m: next(ids), text)


# what makes a line the shell's to run: pipes, lists, redirections, expansions, globs, escapes
SHELL_SYNTAX = re.compile(r"[|&;<>$`*?~(){}\\\[\]!#]")


def shell(command: str, env: dict[str, str], cwd: Path) -> Run | subprocess.CompletedProcess[str]:
    """``command`` as typed at a prompt in ``cwd`` with ``env``, standard input empty: one plain
    ``nexus`` command through ``cli.main`` in this process, anything else in ``bash -c``."""
    words = shlex.split(command) if not SHELL_SYNTAX.search(command) else []
    if words and words[0] == "nexus":
        return run_in_process(words[1:], env=env, cwd=cwd)
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def _parses(example: str) -> str | None:
    """None when the parser accepts every ``nexus`` command of the example (a shell line may chain
    several with ``&&`` or ``;``); else what it said."""
    words = shlex.split(example, comments=True)
    commands: list[list[str]] = [[]]
    redirect = False
    for word in words:
        if redirect or word in ("<", ">", ">>"):  # a redirection and its file: the shell's, not nexus's
            redirect = not redirect
            continue
        if word in ("&&", ";", "||", "|"):
            commands.append([])
        else:
            commands[-1].append(word.rstrip(";"))
            if word.endswith(";"):
                commands.append([])
    for command in commands:
        if command and command[0] == "nexus":
            try:
                cli._parse(command[1:])  # as `nexus` parses it, usage checks included
            except SystemExit as exit:
                return f"exit {exit.code}"
    return None


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Scene:
    """The prepared vault, made once for every source (each example runs in a copy of it)."""
    return Scene(tmp_path_factory.mktemp("examples"))


@pytest.mark.parametrize("source", [name for name, _ in sources()])
def test_every_example_runs_as_printed(source: str, scene: Scene, capsys: pytest.CaptureFixture[str]) -> None:
    examples = dict(sources())[source]
    failed: list[str] = []
    for example, shows_error in examples:
        typed = scene.typed(example)
        said = _parses(typed)
        if said is not None:
            failed.append(
                f"{example}\n  not accepted by the parser: {said} {capsys.readouterr().err.strip()}"
            )
            continue
        if typed.startswith(PARSED_ONLY):
            continue
        proc = scene.example(typed)
        one_error = proc.returncode != 0 and proc.stderr.startswith("nexus: error: ")
        situation = next((k for k in SITUATIONS if typed.startswith(k)), None)
        exit = next((v for k, v in EXITS.items() if typed.startswith(k)), 0)
        if shows_error and one_error:
            continue
        if situation and (one_error or proc.returncode == 0):
            continue
        if proc.returncode == exit and not shows_error:
            continue
        failed.append(
            f"{example}\n  ran as: {typed}\n  exit {proc.returncode} (the documentation shows "
            f"{'an error' if shows_error else f'exit {exit}'}): {(proc.stderr or proc.stdout).strip()[:300]}"
        )
    assert not failed, f"examples in {source} that do not run as printed:\n" + "\n".join(failed)


def test_the_documents_examples_are_found() -> None:
    """The extraction finds commands, continuation lines and printed errors (a test that finds
    nothing would pass everything)."""
    found = dict(sources())
    assert len(found["--help"]) > 50 and len(found["docs/cli.md"]) > 60
    cli = dict(found["docs/cli.md"])
    assert cli["nexus state set --agent lyra --expect 0 --file state.md"] is True
    assert cli["nexus state set --agent lyra --expect 3 --file state.md"] is False
    assert any(c.startswith("nexus decide") and "--rationale" in c for c in cli)
    assert "nexus init vault && cd vault && nexus agent add ella && nexus log tail" in dict(found["--help"])


def test_the_user_docs_hold_no_work_notes() -> None:
    """README.md and docs/ are for users: no issue numbers, no "used to", no issue comments (the
    measurements page, rewritten on its own, aside)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [
        f"{page.name}:{n}: {line.strip()}"
        for page in pages
        if page.name != "performance.md"
        for n, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1)
        if re.search(r"\bissues? [0-9]|issue-[0-9]|<!-- issue|\bused to\b", line, re.IGNORECASE)
    ]
    assert not found, found
