"""``nexus setup RUNTIME``: wire an agent runtime to a nexus vault where that runtime reads its own
configuration (Claude Code, Codex, Hermes Agent, OpenClaw, Cursor). One module per runtime says which
files it gets; ``configfiles`` merges without clobbering; ``wiring`` computes, diffs and applies."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from ...errors import InputError
from .wiring import Change, Wiring

RUNTIMES = ("claude-code", "codex", "hermes", "openclaw", "cursor", "gemini-cli", "opencode")
# where a runtime keeps its own files, when the user moved them (read by the entry point, passed down)
ENV_KEYS = ("HERMES_HOME", "CODEX_HOME", "XDG_CONFIG_HOME")


def module(runtime: str) -> ModuleType:
    if runtime not in RUNTIMES:
        raise InputError(f"unknown runtime {runtime!r}: use one of {', '.join(RUNTIMES)}")
    from importlib import import_module

    return import_module(f".{runtime.replace('-', '_')}", __name__)


# runtime -> the module that asks the installed runtime what it makes of the wiring (``--check``):
# ``PROGRAM`` (its executable), ``wired(project, home, env)`` and ``check(wiring, program)``
VIEWS = {"codex": "codex_view", "gemini-cli": "gemini_cli_view", "opencode": "opencode_view"}


def view(runtime: str) -> ModuleType | None:
    from importlib import import_module

    name = VIEWS.get(runtime)
    return import_module(f".{name}", __name__) if name else None


def changes(runtime: str, wiring: Wiring) -> list[Change]:
    plan: Callable[[Wiring], list[Change]] = module(runtime).changes
    return plan(wiring)
