"""``nexus setup RUNTIME``: wire an agent runtime to a nexus vault where that runtime reads its own
configuration (Claude Code, Codex, Hermes Agent, OpenClaw, Cursor). One module per runtime says which
files it gets; ``configfiles`` merges without clobbering; ``wiring`` computes, diffs and applies."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from ...errors import InputError
from ...suggest import closest
from .wiring import Change, Wiring

RUNTIMES = ("claude-code", "codex", "hermes", "openclaw", "cursor")


def module(runtime: str) -> ModuleType:
    if runtime not in RUNTIMES:
        close = closest(runtime, RUNTIMES)
        hint = f"did you mean {close!r}?" if close else f"use one of {', '.join(RUNTIMES)}"
        raise InputError(f"unknown runtime {runtime!r}: {hint}")
    from importlib import import_module

    return import_module(f".{runtime.replace('-', '_')}", __name__)


def scopes(runtime: str) -> tuple[str, ...]:
    """The scopes a runtime has, its default first (project, where the runtime reads a project's files)."""
    found: tuple[str, ...] = getattr(module(runtime), "SCOPES", ("project", "user"))
    return found


def check(runtime: str, wiring: Wiring) -> list[tuple[str, str]]:
    """The runtime's own view beyond nexus's files (a module's ``check``): each thing that would keep it
    from using nexus, with the one command that adds it; [] when it would use nexus."""
    view: Callable[[Wiring], list[tuple[str, str]]] | None = getattr(module(runtime), "check", None)
    return view(wiring) if view else []


def changes(runtime: str, wiring: Wiring) -> list[Change]:
    plan: Callable[[Wiring], list[Change]] = module(runtime).changes
    return plan(wiring)
