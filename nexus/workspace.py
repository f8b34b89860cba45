"""The workspace a command acts in: the vault, the resolved settings and where this machine's private
keys live (and, in the same folder, what it trusts: ``trust``), travelling together as one value from
the entry point that resolved them.

Only entry points build one (:func:`resolve`: ``cli.py``, ``hooks.py``, ``mcp_server.py``, the Hermes
provider); they read the environment once and pass the result down, so library code never does. The
keys folder is found lazily (the per-user default costs an import of ``platformdirs``, which the
per-turn commands that never sign do not pay).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .settings import Settings
from .trust import Trust

if TYPE_CHECKING:
    from .storage.vault import Vault


class Workspace:
    """A vault, its settings and the keys folder (a path, or how to find it when first asked).

    A value: nothing changes one after it is made (:meth:`with_settings` makes another). A plain class
    with slots rather than a frozen dataclass: the per-turn commands build one, and making a dataclass
    costs an ``exec`` at import."""

    __slots__ = ("keys", "settings", "trust", "vault")

    def __init__(self, vault: Vault, settings: Settings, keys: Path | Callable[[], Path]) -> None:
        self.vault, self.settings, self.keys = vault, settings, keys
        self.trust = Trust(keys)  # the pins, the memo, the seal secret: in the keys folder

    def __repr__(self) -> str:
        return f"Workspace({self.vault!r}, {self.settings!r})"

    @property
    def keys_home(self) -> Path:
        return self.keys if isinstance(self.keys, Path) else self.keys()

    def with_settings(self, **changes: Any) -> Workspace:
        """The same workspace with some settings given by an argument (``--stale-minutes``…)."""
        given = {k: v for k, v in changes.items() if v is not None}
        if not given:
            return self
        return Workspace(self.vault, dataclasses.replace(self.settings, **given), self.keys)


def resolve(
    vault: str | None,
    env: Mapping[str, str],
    cwd: Path,
    *,
    args: Mapping[str, Any] | None = None,
    keys: Path | None = None,
) -> Workspace:
    """The workspace an entry point acts in: the vault from ``vault`` (an argument), ``NEXUS_VAULT``,
    else found walking up from ``cwd``; settings in the order argument, environment, ``nexus.md``,
    default; keys from ``keys`` (an argument), ``NEXUS_HOME``, else the per-user config folder."""
    from .storage.vault import find

    return for_vault(find(vault, env.get("NEXUS_VAULT"), cwd), env, args=args, keys=keys)


def for_vault(
    vault: Vault, env: Mapping[str, str], *, args: Mapping[str, Any] | None = None, keys: Path | None = None
) -> Workspace:
    """The workspace of a vault already found (see :func:`resolve` for the order of each setting)."""
    from .settings import keys_home
    from .settings import resolve as resolve_settings

    settings = resolve_settings(args or {}, env, vault.config())
    if keys is None:
        home = env.get("NEXUS_HOME")
        keys_at: Path | Callable[[], Path] = Path(home).expanduser() if home else _Lazy(lambda: keys_home({}))
    else:
        keys_at = keys.expanduser()
    return Workspace(vault, settings, keys_at)


class _Lazy:
    """A value computed on first call, then remembered."""

    def __init__(self, make: Callable[[], Path]) -> None:
        self._make = make
        self._value: Path | None = None

    def __call__(self) -> Path:
        if self._value is None:
            self._value = self._make()
        return self._value
