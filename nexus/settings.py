"""Settings, resolved in one visible order: argument, ``NEXUS_*`` environment, vault config, default.

The vault config is the frontmatter of the vault's ``nexus.md`` note (Markdown stays canonical). Only
entry points (``cli.py``, ``mcp_server.py``, ``hooks.py``, the Hermes provider's ``initialize``) call
:func:`resolve` (through :func:`nexus.workspace.resolve`); library code never reads the environment, it
takes the resolved :class:`Settings` (or one of its values) as a parameter. The defaults live here only:
a library parameter that has a default takes it from :data:`DEFAULTS`.

Settings (argument / environment / ``nexus.md`` property, default):

- vault: ``--vault`` / ``NEXUS_VAULT`` / – (else walk up from the current folder)
- key folder: – / ``NEXUS_HOME`` / – , default the per-user config folder
- brief budget in characters: ``--max-chars`` / ``NEXUS_BRIEF_MAX_CHARS`` / ``brief_max_chars``, 10000
- types that need an ack: – / ``NEXUS_ACK_TYPES`` (commas) / ``ack_types``,
  correction, decision, handoff, question
- race window in seconds: – / ``NEXUS_RACE_WINDOW`` / ``race_window_seconds``, 60
- stale checkpoint in minutes: – / ``NEXUS_STALE_MINUTES`` / ``stale_checkpoint_minutes``, 30
- memory limit in characters: – / ``NEXUS_MEMORY_CHARS`` / ``memory_chars``, 2200
- user profile limit: – / ``NEXUS_USER_CHARS`` / ``user_chars``, 1375
- sweep age in days: ``--older-than`` / ``NEXUS_SWEEP_DAYS`` / ``sweep_days``, 7
- watcher rescan in seconds: ``--rescan`` / ``NEXUS_RESCAN_SECONDS`` / ``rescan_seconds``, 5
- MCP tool set: ``--tools`` / ``NEXUS_MCP_TOOLS`` / ``mcp_tools``, agent (or all)
- search stemming languages: – / ``NEXUS_SEARCH_LANGUAGES`` (commas) / ``search_languages``, en
- warm hook server's idle time in minutes: – / ``NEXUS_HOOK_SERVER_IDLE`` / ``hook_server_idle_minutes``, 15
- warm hook server: – / ``NEXUS_HOOK_SERVER`` (``off``) / – , on (read by ``nexus-hook`` itself, before
  anything else of nexus: ``surfaces/hook_client.py``)
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .errors import InputError

DEFAULT_ACK_TYPES = ("correction", "decision", "handoff", "question")


@dataclass(frozen=True)
class Settings:
    """Every setting nexus reads, with its default (resolved by :func:`resolve`)."""

    brief_max_chars: int = 10_000
    ack_types: tuple[str, ...] = DEFAULT_ACK_TYPES
    race_window_seconds: int = 60
    stale_checkpoint_minutes: float = 30.0
    memory_chars: int = 2_200
    user_chars: int = 1_375
    sweep_days: int = 7
    rescan_seconds: float = 5.0
    mcp_tools: str = "agent"
    search_languages: tuple[str, ...] = ("en",)
    hook_server_idle_minutes: float = 15.0


DEFAULTS = Settings()

_ENV = {
    "brief_max_chars": "NEXUS_BRIEF_MAX_CHARS",
    "ack_types": "NEXUS_ACK_TYPES",
    "race_window_seconds": "NEXUS_RACE_WINDOW",
    "stale_checkpoint_minutes": "NEXUS_STALE_MINUTES",
    "memory_chars": "NEXUS_MEMORY_CHARS",
    "user_chars": "NEXUS_USER_CHARS",
    "sweep_days": "NEXUS_SWEEP_DAYS",
    "rescan_seconds": "NEXUS_RESCAN_SECONDS",
    "mcp_tools": "NEXUS_MCP_TOOLS",
    "search_languages": "NEXUS_SEARCH_LANGUAGES",
    "hook_server_idle_minutes": "NEXUS_HOOK_SERVER_IDLE",
}


def _coerce(name: str, value: Any, origin: str) -> Any:
    """``value`` as the setting's type, or InputError: one line naming the setting, the value and
    where it came from (``origin``). Whole numbers stay whole (1.5 seconds is refused, never cut to 1);
    no number is negative, NaN or infinite."""
    default = getattr(DEFAULTS, name)

    def refuse(what: str) -> InputError:
        return InputError(f"setting {name}: {value!r} from {origin} is not {what}")

    if isinstance(default, tuple):
        if isinstance(value, str):
            return tuple(v.strip() for v in value.split(",") if v.strip())
        if isinstance(value, list | tuple) and all(isinstance(v, str | int | float) for v in value):
            return tuple(str(v) for v in value)
        raise refuse("a list of words (commas between them)")
    if isinstance(default, str):
        if isinstance(value, str):
            return value
        raise refuse("a word")
    whole = isinstance(default, int)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise refuse("a whole number" if whole else "a number")
    try:
        number = float(value)
    except ValueError:
        raise refuse("a whole number" if whole else "a number") from None
    if not math.isfinite(number) or number < 0:
        raise refuse("a number of 0 or more")
    if whole:
        if number != int(number) or (isinstance(value, str) and not value.strip().isdigit()):
            raise refuse("a whole number")
        return int(number)
    return number


def resolve(
    args: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    vault_config: Mapping[str, Any] | None = None,
) -> Settings:
    """Each setting from the first of: argument, environment, vault config, default. A value that is
    not of the setting's kind raises InputError naming the setting and where it came from."""
    args = args or {}
    env = os.environ if env is None else env
    vault_config = vault_config or {}
    values: dict[str, Any] = {}
    for f in fields(Settings):
        for source, origin in (
            (args.get(f.name), "the command line"),
            (env.get(_ENV[f.name]), f"the environment ({_ENV[f.name]})"),
            (vault_config.get(f.name), "nexus.md"),
        ):
            if source is not None:
                values[f.name] = _coerce(f.name, source, origin)
                break
    return Settings(**values)


def keys_home(env: Mapping[str, str] | None = None) -> Path:
    """Where private keys live: ``NEXUS_HOME`` or the per-user config folder (never in a vault)."""
    env = os.environ if env is None else env
    if env.get("NEXUS_HOME"):
        return Path(env["NEXUS_HOME"]).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("nexus", appauthor=False))


def origin(name: str, env: Mapping[str, str], vault_config: Mapping[str, Any]) -> str:
    """Where a setting not given as an argument took its value, as a person would find it:
    ``NEXUS_BRIEF_MAX_CHARS=-5``, ``nexus.md's brief_max_chars: -5``, or ``the default brief_max_chars``
    (the order of :func:`resolve`)."""
    variable = _ENV.get(name)
    if variable and env.get(variable) is not None:
        return f"{variable}={env[variable]}"
    if vault_config.get(name) is not None:
        return f"nexus.md's {name}: {vault_config[name]}"
    return f"the default {name}"
