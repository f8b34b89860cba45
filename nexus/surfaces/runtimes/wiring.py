"""What ``nexus setup`` computes and how it is applied, and what ``--check`` asks of every runtime.

A runtime's module (``claude_code.py``, ``codex.py``…) gives:

- ``changes(w: Wiring) -> list[Change]``: the files it gets. A :class:`Change` with ``behalf`` set is
  something written on the user's behalf beyond nexus's own entries (a permission rule, a trust
  record): setup prints one line for it and ``--skip NAME`` leaves it out. Several changes may touch
  one file; they are merged in order.
- ``wired(scope, project, home, env) -> Wired | None`` (optional): who and what an existing wiring acts
  as, read from the runtime's own files, so ``--check`` needs no ``--agent``.
- ``check(w: Wiring) -> list[Finding]`` (optional): the runtime's own view (is the hook enabled, the
  tool allowed, the server answering within the runtime's start-up wait…).

All changes are computed before anything is written (a file that cannot be parsed stops everything),
then each changed file is backed up and replaced atomically. A second run computes no change.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import IdentityError
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

    def setup_command(self, runtime: str) -> str:
        """The one command that wires what is missing."""
        scope = " --scope user" if self.scope == "user" else ""
        return f"nexus setup {runtime} --agent {self.agent}{scope}"


@dataclass(frozen=True)
class Wired:
    """What an existing wiring acts as, read back from a runtime's files."""

    agent: str
    vault: Path | None
    keys_home: Path | None
    found_in: Path


@dataclass(frozen=True)
class Change:
    """One file and what nexus wants in it: ``merge`` maps its current text (None: missing) to the new."""

    path: Path
    what: str  # one line: what this file gets
    merge: Callable[[str | None], str]
    mode: int | None = None  # e.g. 0o755 for an executable
    behalf: str = ""  # the name `--skip` takes when this is written on the user's behalf
    why: str = ""  # why it is needed (printed with it)


@dataclass(frozen=True)
class Finding:
    """One thing the runtime needs to really use nexus, as the runtime itself sees it."""

    ok: bool
    what: str
    fix: str = ""  # the one command (or step) that makes it so


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


def behalf_names(changes: list[Change]) -> list[str]:
    return list(dict.fromkeys(c.behalf for c in changes if c.behalf))


def compute(changes: list[Change]) -> list[Outcome]:
    """Every file's new text, the changes to one file merged in order; raises (nothing written) if
    any existing file cannot be merged."""
    by_path: dict[Path, list[Change]] = {}
    for change in changes:
        by_path.setdefault(change.path, []).append(change)
    out = []
    for path, group in by_path.items():
        old = read_text(path)
        new = old
        for change in group:
            new = change.merge(new)
        assert new is not None
        out.append(Outcome(path, "; ".join(c.what for c in group), old, new))
    return out


def present(change: Change) -> bool:
    """Whether ``change`` is already in its file (merging it would change nothing)."""
    old = read_text(change.path)
    return old is not None and change.merge(old) == old


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


# ------------------------------------------------------------------ the keys the wiring points at


def key_candidates(vault_root: Path, keys_home: Path, default_home: Path, env_home: str | None) -> list[Path]:
    """Keys folders worth looking in when the wired one lacks the agent's key: NEXUS_HOME, the
    per-user default, and the folders beside the vault (where the demo keeps its keys)."""
    found = [Path(env_home)] if env_home else []
    found.append(default_home)
    with contextlib.suppress(OSError):
        found += sorted(p for p in vault_root.resolve().parent.iterdir() if p.is_dir())
    return [p for p in dict.fromkeys(found) if p != keys_home]


def check_key(
    key_path: Callable[[Path], Path], keys_home: Path, agent: str, candidates: list[Path], flag: str
) -> None:
    """Refuse (IdentityError, one line) to wire a keys folder that lacks the agent's private key,
    naming where the key is and the flag that points there."""
    if key_path(keys_home).is_file():
        return
    elsewhere = [home for home in candidates if key_path(home).is_file()]
    if elsewhere:
        raise IdentityError(
            f"no private key for {agent!r} in {keys_home} (the keys folder this would wire); it is in "
            f"{elsewhere[0]}: add `{flag} {elsewhere[0]}`; nothing was written"
        )
    raise IdentityError(
        f"no private key for {agent!r} in {keys_home} ({key_path(keys_home)} is missing), nor in "
        f"{', '.join(map(str, candidates)) or 'any other keys folder'}: point `{flag}` at the folder "
        "that holds it; nothing was written"
    )


# ------------------------------------------------------------------ reading a runtime's files back


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object file, or {} when it is missing or is not one (``--check`` reports, never fails)."""
    try:
        data = json.loads(read_text(path) or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def wired_from_server(entry: Any, found_in: Path) -> Wired | None:
    """The agent, vault and keys of a ``nexus mcp --agent A`` server entry (``mcpServers`` shape)."""
    if not isinstance(entry, dict):
        return None
    args = entry.get("args")
    if not isinstance(args, list) or "--agent" not in args or args.index("--agent") + 1 >= len(args):
        return None
    env = entry.get("env")
    env = env if isinstance(env, dict) else {}
    vault, keys = env.get("NEXUS_VAULT"), env.get("NEXUS_HOME")
    return Wired(
        agent=str(args[args.index("--agent") + 1]),
        vault=Path(vault) if vault else None,
        keys_home=Path(keys) if keys else None,
        found_in=found_in,
    )


# ------------------------------------------------------------------ the server, as the runtime starts it

# What a runtime's MCP client sends first (Claude Code 2.1: the 2026-07-28 discover probe).
DISCOVER = {
    "jsonrpc": "2.0",
    "id": "nexus-check",
    "method": "server/discover",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "nexus-setup-check", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}


def probe_server(entry: Mapping[str, Any], environ: Mapping[str, str], wait: float, cwd: Path) -> Finding:
    """Start the MCP server as the runtime would (its command, args and env) and time its first
    answer: ok when it answers within ``wait`` seconds (the runtime's start-up wait)."""
    command = [str(entry.get("command", "")), *[str(a) for a in entry.get("args") or []]]
    env = {k: v for k, v in environ.items() if k in ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")}
    env.update({str(k): str(v) for k, v in (entry.get("env") or {}).items()})
    what = f"the MCP server answers within {wait:g} s"
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=str(cwd) if cwd.is_dir() else None,
        )
    except OSError as failed:
        return Finding(False, f"{what}: `{command[0]}` cannot start ({failed.strerror})")
    try:
        out, err = proc.communicate((json.dumps(DISCOVER) + "\n").encode(), timeout=wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return Finding(False, f"{what}: no answer after {wait:g} s")
    took = time.monotonic() - start
    answered = any(b'"nexus-check"' in line and b'"result"' in line for line in out.splitlines())
    if not answered:
        detail = (err.decode("utf-8", "replace").strip().splitlines() or ["no answer"])[-1][:200]
        return Finding(False, f"{what}: {detail}")
    return Finding(True, f"the MCP server answered in {took * 1000:.0f} ms (the runtime waits {wait:g} s)")
