"""What one command line resolves and runs: the vault it names (``--vault``, ``NEXUS_VAULT``, else up
from here), its workspace (the settings its options give, over ``NEXUS_*``, ``nexus.md`` and the
defaults), where a setting came from (for the error naming it), progress for long work, and an
operation of the registry run with the values of its options.

Each function imports what it needs inside itself, so a command pays only for its own imports (the
hot-path commands never import YAML, Whoosh, watchdog or MCP).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from .console import emit, read_bytes, read_text

# command-line options that give a setting (argument -> Settings field)
SETTING_ARGS = {
    "brief_max_chars": "brief_max_chars",
    "sweep_days": "sweep_days",
    "rescan_seconds": "rescan_seconds",
    "tools": "mcp_tools",
}


def vault(args: argparse.Namespace) -> Any:
    from ..storage.vault import find

    return find(args.vault, os.environ.get("NEXUS_VAULT"), Path.cwd())


def keys_home() -> Path:
    from .. import settings

    return settings.keys_home()


def trust() -> Any:
    """What this machine trusts (``nexus.trust.Trust``): the pins beside the keys, found when first asked."""
    from ..trust import Trust

    return Trust(keys_home)


def workspace(args: argparse.Namespace, opened: Any = None) -> Any:
    """The vault, the settings (argument, ``NEXUS_*``, ``nexus.md``, default) and the keys folder."""
    from ..workspace import for_vault

    given = {f: getattr(args, a) for a, f in SETTING_ARGS.items() if getattr(args, a, None) is not None}
    opened = opened if opened is not None else vault(args)
    ws = for_vault(opened, os.environ, args=given)
    # (a float given here is kept as given: the resolver's coercion would round 0.5 minute to 0)
    return ws.with_settings(stale_checkpoint_minutes=getattr(args, "stale_minutes", None))


def origin(args: argparse.Namespace, setting: str) -> str:
    """Where a setting's value came from on this command line: its flag and value when one was
    given, else the variable or the ``nexus.md`` property (``settings.origin``)."""
    from .. import settings
    from ..operations import BY_NAME, CLI

    op = BY_NAME.get(getattr(args, "operation", ""))
    for param in op.params_for(CLI) if op else ():
        if param.setting == setting and getattr(args, param.name, None) is not None:
            return f"{param.cli_flag} {getattr(args, param.name)}"
    return settings.origin(setting, os.environ, vault(args).config())


def progress(args: argparse.Namespace, label: str) -> Any:
    """Progress for long work: a bar with an estimate on a terminal after two seconds; nothing when
    stderr is not a terminal or the command prints JSON (``progress.py``)."""
    from ..storage.progress import bar

    return bar(label, enabled=not getattr(args, "json", False))


def param_value(args: argparse.Namespace, param: Any) -> Any:
    """A parameter's value from the command line (a --X-file option's file read as text)."""
    source = getattr(args, f"{param.name}_file", None) if param.file_flag else None
    if not source:
        return getattr(args, param.name, None)
    if param.cli.get("decode") == "lenient":
        # undecodable bytes become lone surrogates, which the text rules make visible
        return read_bytes(source, f"{param.name} file").decode("utf-8", errors="surrogateescape")
    return read_text(source, param.file_flag)


def run_operation(args: argparse.Namespace) -> int:
    """Run the operation a generated command stands for, and print its result."""
    from ..operations import BY_NAME, CLI, Call

    op = BY_NAME[args.operation]
    kwargs: dict[str, Any] = {}
    overrides: dict[str, Any] = {}
    for param in op.params_for(CLI):
        value = param_value(args, param)
        if param.setting:
            overrides[param.setting] = value
        else:
            kwargs[param.name] = value
    opened = vault(args) if op.needs_vault else None  # (`init` makes one)
    call = Call(
        opened,  # type: ignore[arg-type]
        agent=getattr(args, "agent", None) or "",
        surface=CLI,
        settings=lambda: workspace(args, opened).with_settings(**overrides).settings,
        keys=keys_home,
        progress=lambda label: progress(args, label),
        colour=sys.stdout.isatty() and not os.environ.get("NO_COLOR"),
    )
    result = op.function()(call, **{k: v for k, v in kwargs.items() if v is not None})
    notes = list(getattr(result, "notes", ()))
    if not getattr(args, "json", False):
        notes += getattr(result, "text_notes", ())
    for note in notes:
        sys.stderr.write(f"nexus: {note}\n")
    emit(args, result.to_json(), result.text())
    return int(getattr(result, "exit_code", 0))
