"""``nexus setup RUNTIME``: wire an agent runtime to a nexus vault where that runtime reads its own
configuration (Claude Code, Codex, Hermes Agent, OpenClaw, Cursor). One module per runtime says which
files it gets (and, optionally, how to read an existing wiring back and what the runtime itself
needs: ``wiring.py`` says the shape); ``configfiles`` merges without clobbering; ``wiring`` computes,
diffs, applies and probes. :func:`setup` and :func:`check` are what the command runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ...errors import InputError
from ...suggest import closest
from . import wiring
from .wiring import Change, Finding, Outcome, Wired, Wiring

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


def changes(runtime: str, w: Wiring) -> list[Change]:
    plan: Callable[[Wiring], list[Change]] = module(runtime).changes
    return plan(w)


def reads_back(runtime: str) -> bool:
    """Whether ``runtime``'s module can say who an existing wiring acts as (``wired``)."""
    return hasattr(module(runtime), "wired")


def wired(runtime: str, scope: str, project: Path, home: Path, env: dict[str, str]) -> Wired | None:
    """Who an existing wiring of ``runtime`` acts as (None: not wired, or the runtime cannot say)."""
    read: Callable[..., Wired | None] | None = getattr(module(runtime), "wired", None)
    return read(scope, project, home, env) if read else None


@dataclass(frozen=True)
class Plan:
    """What setup would write: the changes kept, the ones the user left out, and the outcomes."""

    outcomes: list[Outcome]
    behalf: list[Change]  # written on the user's behalf (kept)
    skipped: list[Change]  # left out with --skip


def plan(runtime: str, w: Wiring, skip: list[str], *, write: bool) -> Plan:
    """Compute (and with ``write`` apply) the wiring, less the on-behalf changes named in ``skip``."""
    planned = changes(runtime, w)
    names = wiring.behalf_names(planned)
    unknown = [s for s in skip if s not in names]
    if unknown:
        choices = ", ".join(names) or "nothing (this runtime writes nothing on your behalf)"
        raise InputError(f"--skip {unknown[0]!r}: {runtime} can leave out {choices}")
    kept = [c for c in planned if c.behalf not in skip]
    outcomes = wiring.apply(kept) if write else wiring.compute(kept)
    return Plan(
        outcomes, [c for c in kept if c.behalf], [c for c in planned if c.behalf and c.behalf in skip]
    )


def behalf_lines(p: Plan, *, done: bool) -> list[str]:
    """One line per thing written on the user's behalf, with how to leave it out."""
    changed = {o.path for o in p.outcomes if o.changed}
    lines = []
    for c in p.behalf:
        verb = ("wrote" if c.path in changed else "kept") if done else "would write"
        lines.append(f"on your behalf: {verb} {c.what} in {c.path} ({c.why}; leave out: --skip {c.behalf})")
    lines += [f"left out:       {c.what} in {c.path} ({c.why})" for c in p.skipped]
    return lines


def check(runtime: str, w: Wiring, key: Path) -> tuple[bool, list[dict[str, Any]], list[str]]:
    """``--check``: the agent's key where the wiring points, every file nexus writes (its entries
    there) and the runtime's own view. Returns whether the runtime would really use nexus, the
    findings as data, and the lines to print."""
    fix = w.setup_command(runtime)
    findings = [
        Finding(
            key.is_file(),
            f"{w.agent}'s private key in {w.keys_home}",
            f"{fix} --keys-home FOLDER (the keys folder that holds keys/…/{w.agent}.pem)",
        )
    ]
    findings += [
        Finding(ok, f"{c.what} in {c.path}", "" if ok else fix)
        for c in changes(runtime, w)
        for ok in [wiring.present(c)]
    ]
    own: Callable[[Wiring], list[Any]] | None = getattr(module(runtime), "check", None)
    for found in own(w) if own is not None else []:
        # a Finding, or (what is missing, the command that adds it)
        findings.append(found if isinstance(found, Finding) else Finding(False, found[0], found[1]))
    ok = all(f.ok for f in findings)
    lines = [
        f"{'ok' if f.ok else 'MISSING':<8} {f.what}" + ("" if f.ok else f"  → {f.fix}") for f in findings
    ]
    if ok:
        lines.append(f"{runtime} uses nexus: vault {w.vault} as {w.agent}")
    else:
        first = next(f for f in findings if not f.ok)
        lines.append(f"{runtime} would not use nexus: {first.what} is missing → {first.fix}")
    data = [{"ok": f.ok, "what": f.what, "fix": f.fix} for f in findings]
    return ok, data, lines
