"""The ``NEXUS_*`` environment variables: every one nexus reads, the setting it gives and its default.

``docs/settings.md`` holds them as one table, which :func:`table` writes (a test keeps the two the
same). An entry point warns, in one line, about a ``NEXUS_*`` variable nexus does not read (a typo
would otherwise be silently ignored): :func:`unknown`.
"""

from __future__ import annotations

from collections.abc import Mapping

from .settings import _ENV, DEFAULTS
from .suggest import did_you_mean

# the variables that are not settings of nexus.md: (what they give, the default)
OTHERS = {
    "NEXUS_VAULT": (
        "the vault (as `--vault`)",
        "the nearest folder holding `nexus.md`, walking up from here",
    ),
    "NEXUS_HOME": (
        "the folder of private keys and pinned keys, outside the vault",
        "the per-user config folder",
    ),
    "NEXUS_AGENT": ("the identity `nexus-hook` and the Hermes provider act as (as `--agent`)", "–"),
    "NEXUS_SESSION": (
        "the session `nexus-hook` counts what is new for, when the runtime names none",
        "`default`",
    ),
    "NEXUS_MCP_FRONT": ("how `nexus mcp` starts: `lazy`, `auto`, `front` or `sdk`", "`lazy`"),
    "NEXUS_IN_SYNC": ("set by `nexus sync` for git's children while it merges (not for people)", "unset"),
    "NEXUS_CLAIMS_OVERRIDE": (
        "`1` lets one commit through the claims guard (`nexus git setup --guard`) and says so",
        "unset",
    ),
    "NEXUS_HOOK_SERVER": (
        "`off` runs every `nexus-hook` in its own process, without the warm hook server",
        "on",
    ),
}

# read by the test suite's own helpers and scripts (fault injection, fuzzing, the Hermes tests, the
# runtimes' cache), not by nexus: not warned about, not listed for people
TESTS = frozenset({"NEXUS_FAULT", "NEXUS_FUZZ_SEED", "NEXUS_HERMES_SITE", "NEXUS_RUNTIMES", "NEXUS_TEST_RUN"})


def _default(value: object) -> str:
    if isinstance(value, tuple):
        return "`" + ",".join(str(v) for v in value) + "`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def names() -> list[str]:
    """Every ``NEXUS_*`` variable nexus reads."""
    return [*OTHERS, *_ENV.values()]


def table() -> str:
    """The Markdown table of every variable: name, what it sets (a ``nexus.md`` property for a
    setting), default."""
    rows = ["| variable | sets | default |", "|---|---|---|"]
    rows += [f"| `{name}` | {what} | {default} |" for name, (what, default) in OTHERS.items()]
    rows += [
        f"| `{variable}` | `{setting}` in `nexus.md` | {_default(getattr(DEFAULTS, setting))} |"
        for setting, variable in _ENV.items()
    ]
    return "\n".join(rows) + "\n"


def unknown(env: Mapping[str, str]) -> list[str]:
    """One warning line for each ``NEXUS_*`` variable in ``env`` that nexus does not read."""
    known = names()
    tails = [k.removeprefix("NEXUS_") for k in known]  # compared without the prefix they all share
    return [
        f"warning: {name} is not a nexus variable, ignored"
        f"{did_you_mean(name.removeprefix('NEXUS_'), tails, quote='NEXUS_').replace('NEXUS_?', '?')} "
        "(docs/settings.md lists them)"
        for name in sorted(env)
        if name.startswith("NEXUS_") and name not in known and name not in TESTS
    ]


if __name__ == "__main__":  # the table for docs/settings.md
    print(table(), end="")
