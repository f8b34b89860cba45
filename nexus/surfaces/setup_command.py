"""``nexus setup RUNTIME``: wire an agent runtime to this vault (its files computed, diffed, backed up
and merged by ``runtimes/``), or, with ``--check``, say whether the runtime would really use nexus.

The handler imports what it needs inside itself, so other commands pay nothing for it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Any

from ..errors import InputError
from . import invocation
from .arguments import command
from .console import emit


def _executable(name: str) -> str:
    """The absolute path of one of nexus's commands in this installation, else from PATH, else the name."""
    import shutil
    import sysconfig

    here = Path(sysconfig.get_path("scripts")) / name
    if here.is_file():
        return str(here)
    return shutil.which(name) or name


def _setup_agent(
    args: argparse.Namespace, project: Path, home: Path, env: dict[str, str]
) -> tuple[str | None, str | None, Path | None]:
    """Who ``nexus setup`` wires: ``--agent``, else (``--check``) the agent, vault and keys folder the
    runtime's existing wiring names (None: nothing is wired)."""
    from . import runtimes

    keys = Path(args.keys_home) if args.keys_home else None
    if args.agent is not None:
        return args.agent, args.vault, keys
    found = runtimes.wired(args.runtime, args.scope, project, home, env)
    if found is None and not runtimes.reads_back(args.runtime):
        raise InputError(f"give --agent: nexus does not read {args.runtime}'s wiring back")
    if found is None:
        return None, None, None
    vault = args.vault or (str(found.vault) if found.vault else None)
    return found.agent, vault, keys or found.keys_home


def cmd_setup(args: argparse.Namespace) -> int:
    from ..keys.identity import private_key_path
    from ..settings import keys_home
    from ..storage.text import check_name
    from ..storage.vault import find as find_vault
    from . import runtimes
    from .runtimes import wiring

    scopes = runtimes.scopes(args.runtime)  # an unknown runtime is refused before anything is read
    if args.scope is None:
        args.scope = scopes[0]
    if args.scope not in wiring.SCOPES:
        raise InputError(f"unknown scope {args.scope!r}: use project or user")
    if args.scope not in scopes:
        raise InputError(
            f"{args.runtime} has no {args.scope} scope (it reads only its per-user configuration): "
            f"leave out --scope, or use --scope {scopes[0]}; nothing was changed"
        )
    project, home, env = Path(args.project).resolve(), Path.home(), dict(os.environ)
    agent, vault_path, keys = _setup_agent(args, project, home, env)
    if agent is None:  # --check, and nothing wired: the runtime would not use nexus
        where = project if args.scope == "project" else home
        fix = f"nexus setup {args.runtime} --agent NAME" + (" --scope user" if args.scope == "user" else "")
        line = f"{args.runtime} would not use nexus: it is not wired in {where} ({args.scope} scope) → {fix}"
        emit(
            args,
            {"uses_nexus": False, "agent": None, "checks": [{"ok": False, "what": line, "fix": fix}]},
            line,
        )
        return 1
    vault = find_vault(vault_path, os.environ.get("NEXUS_VAULT"), Path.cwd())
    if not vault.identity_path(check_name(agent)).is_file():
        raise vault.unknown_agent(agent)
    keys = (keys or invocation.keys_home()).resolve()
    w = wiring.Wiring(
        agent=agent,
        vault=vault.root.resolve(),
        keys_home=keys,
        scope=args.scope,
        project=project,
        home=home,
        nexus=_executable("nexus"),
        hook=_executable("nexus-hook"),
        env=env,
    )
    if args.check:
        ok, findings, lines = runtimes.check(args.runtime, w, private_key_path(vault, keys, agent))
        emit(args, {"uses_nexus": ok, "agent": agent, "checks": findings}, "\n".join(lines))
        return 0 if ok else 1
    p = runtimes.plan(args.runtime, w, args.skip or [], write=False)  # a file it cannot merge: refused first
    wiring.check_key(
        lambda folder: private_key_path(vault, folder, agent),
        keys,
        agent,
        wiring.key_candidates(vault.root, keys, keys_home({}), os.environ.get("NEXUS_HOME")),
        "--keys-home",
    )
    if not args.dry_run:
        p = runtimes.plan(args.runtime, w, args.skip or [], write=True)
    data: list[dict[str, Any]] = [
        {
            "path": str(o.path),
            "what": o.what,
            "state": "wired" if not o.changed else "missing" if o.old is None else "outdated",
            "backup": str(o.backup) if o.backup else None,
        }
        for o in p.outcomes
    ]
    behalf = runtimes.behalf_lines(p, done=not args.dry_run)
    changed = sum(o.changed for o in p.outcomes)
    if args.dry_run:
        diffs = "".join(o.diff() for o in p.outcomes if o.changed)
        summary = f"dry run: {changed} file{'s' if changed != 1 else ''} would change; nothing written"
        emit(
            args,
            {"changes": [d for d in data if d["state"] != "wired"], "behalf": behalf},
            "\n".join(filter(None, [diffs.rstrip("\n"), *behalf, summary])),
        )
        return 0
    lines = []
    for o in p.outcomes:
        if not o.changed:
            lines.append(f"unchanged {o.path}")
        elif o.old is None:
            lines.append(f"created   {o.path} — {o.what}")
        else:
            lines.append(f"updated   {o.path} — {o.what} (backup: {o.backup})")
    _prepare(vault, agent, keys)
    emit(args, {"files": data, "behalf": behalf}, "\n".join(lines + behalf))
    return 0


def _prepare(vault: Any, agent: str, keys: Path) -> None:
    """Build the agent's brief once, as a peek (no cursor moves, nothing shown): the derived state the
    session's first hook reads (the settings, roster, decisions, coordination and memory caches in
    ``.nexus/``) is then in place, and a first session in a new vault starts as fast as later ones."""
    from .. import workspace
    from ..operations import Call
    from ..operations.log import brief

    with contextlib.suppress(Exception):  # (else the first hook builds it, and says what is wrong)
        brief(Call.of(workspace.for_vault(vault, os.environ, keys=keys), agent=agent), peek=True)


def add_setup(groups: dict[str, Any]) -> None:
    sub = groups[""]
    p = command(
        sub,
        "setup",
        cmd_setup,
        "wire an agent runtime (claude-code, codex, gemini-cli, opencode, hermes, openclaw, cursor) "
        "to this vault",
        "nexus setup claude-code --agent ella\n  nexus setup --check claude-code",
    )
    p.add_argument("runtime", help="claude-code, codex, gemini-cli, opencode, hermes, openclaw or cursor")
    p.add_argument(
        "--agent", help="the identity the runtime acts as (with --check: read from the wiring when left out)"
    )
    p.add_argument(
        "--keys-home",
        metavar="PATH",
        help="the keys folder to wire (holds keys/VAULT_ID/AGENT.pem; default: NEXUS_HOME, else the "
        "per-user config folder)",
    )
    p.add_argument(
        "--skip",
        action="append",
        metavar="NAME",
        help="leave out one thing setup writes on your behalf (it names each: allow, enable, trust…)",
    )
    p.add_argument(
        "--scope",
        default=None,
        help="project: files in --project (the default for claude-code, codex and cursor); user: files in "
        "your home folder (the only scope, so the default, for hermes: $HERMES_HOME, else ~/.hermes; "
        "and openclaw: ~/.openclaw)",
    )
    p.add_argument("--project", default=".", help="the project folder for project scope (default: here)")
    p.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")
    p.add_argument(
        "--check",
        action="store_true",
        help="say whether the runtime would really use nexus (exit 1 naming what is missing and the fix)",
    )
