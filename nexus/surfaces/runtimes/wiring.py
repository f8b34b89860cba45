"""What ``nexus setup`` computes and how it is applied: a list of file changes, all computed before
anything is written (a file that cannot be parsed stops everything), then each changed file backed up
and replaced atomically. A second run computes no change; ``--check`` is the same computation,
reporting instead of writing; ``--dry-run`` prints the diff.
"""

from __future__ import annotations

import difflib
import os
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...storage import durable
from .configfiles import read_text

SCOPES = ("project", "user")


@dataclass(frozen=True)
class Wiring:
    """Everything a runtime's files need: who, which vault and keys, where, and the commands."""

    agent: str
    vault: Path
    keys_home: Path
    scope: str  # project | user
    project: Path  # the project folder (project scope)
    home: Path  # the user's home folder (user scope, and runtimes that only have one)
    nexus: str  # the `nexus` command (an absolute path when known)
    hook: str  # the `nexus-hook` command
    env: dict[str, str] = field(default_factory=dict)  # HERMES_HOME and the like, as the caller saw them

    def hook_command(self, event: str, *extra: str) -> str:
        parts = [
            self.hook,
            event,
            "--agent",
            self.agent,
            "--vault",
            str(self.vault),
            "--home",
            str(self.keys_home),
            *extra,
        ]
        return " ".join(shlex.quote(p) for p in parts)

    def hook_marker(self, event: str) -> str:
        """What identifies an earlier nexus hook for this agent and event (any vault)."""
        return f" {event} --agent {self.agent} "

    def mcp_server(self) -> dict[str, object]:
        """The stdio MCP server entry (`mcpServers` shape), vault and keys passed explicitly."""
        return {
            "command": self.nexus,
            "args": ["mcp", "--agent", self.agent],
            "env": {"NEXUS_VAULT": str(self.vault), "NEXUS_HOME": str(self.keys_home)},
        }


@dataclass(frozen=True)
class Change:
    """One file and what nexus wants in it: ``merge`` maps its current text (None: missing) to the new."""

    path: Path
    what: str  # one line: what this file gets
    merge: Callable[[str | None], str]
    mode: int | None = None  # e.g. 0o755 for an executable


@dataclass(frozen=True)
class Outcome:
    """One file wiring a runtime did or would change: its old and new text, and the backup made."""

    path: Path
    what: str
    old: str | None
    new: str
    backup: Path | None = None

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                (self.old or "").splitlines(keepends=True),
                self.new.splitlines(keepends=True),
                fromfile=str(self.path) if self.old is not None else "/dev/null",
                tofile=str(self.path),
            )
        )


def compute(changes: list[Change]) -> list[Outcome]:
    """Every file's new text; raises (nothing written) if any existing file cannot be merged."""
    out = []
    for change in changes:
        old = read_text(change.path)
        out.append(Outcome(change.path, change.what, old, change.merge(old)))
    return out


def apply(changes: list[Change]) -> list[Outcome]:
    """Write every changed file atomically, each existing one backed up first beside it."""
    outcomes = compute(changes)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    done = []
    modes = {c.path: c.mode for c in changes}
    for o in outcomes:
        if not o.changed:
            done.append(o)
            continue
        backup = None
        mode = modes.get(o.path) or 0o644
        if o.old is not None:  # kept beside it, with the file's own permissions (a config may be 0600)
            mode = os.stat(o.path).st_mode & 0o777
            backup = o.path.with_name(f"{o.path.name}.nexus-backup-{stamp}")
            durable.replace(backup, o.path.read_bytes(), mode=mode)
        durable.replace(o.path, o.new.encode("utf-8"), mode=mode)
        done.append(Outcome(o.path, o.what, o.old, o.new, backup))
    return done
