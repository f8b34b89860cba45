"""How an instruction inside an answer names the next action, on the surface the answer goes to.

A brief read in a shell says ``nexus log owed --agent ella``; the same brief served over MCP names the
tool (``log_owed``), because an agent talking MCP should call a tool, not type a shell command. Every
text that tells the agent what to do next asks :func:`say` for the words, so the two surfaces never
drift apart. Surfaces: ``cli`` (the default, also what hooks inject) and ``mcp``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

SURFACES = ("cli", "mcp")

_CLI = {
    "ack": "`nexus log append --agent {agent} ... --ack ID`",
    "owed": "run `nexus log owed --agent {agent}` and `nexus races --unresolved`",
    "decisions": "run `nexus decisions`",
    "resume": "`nexus checkpoint resume --agent {agent}`",
    "read": "run `nexus log read --agent {agent}`",
    "fact": "`nexus memory facts show NAME`",
    "snapshot": "`nexus memory snapshot --agent {agent}`",
    "reconcile": (
        "`nexus log append --agent {agent} --channel {channel} --type reconcile "
        '--ack {a} --ack {b} --summary "..."`'
    ),
}
_MCP = {
    "ack": "the `acknowledge` tool (ids: [ID])",
    "owed": "call the `log_owed` tool and `races` (unresolved: true)",
    "decisions": "call the `decisions` tool",
    "resume": "the `checkpoint_resume` tool",
    "read": "call the `log_read` tool",
    "fact": "the `memory_facts_show` tool (name: NAME)",
    "snapshot": "the `memory_snapshot` tool",
    "reconcile": 'the `reconcile` tool (a: "{a}", b: "{b}", summary: "...")',
}


def say(surface: str, action: str, **fields: str) -> str:
    """The words naming ``action`` on ``surface`` (``cli`` unless ``mcp``), with ``fields`` filled in."""
    table = _MCP if surface == "mcp" else _CLI
    return table[action].format(**fields)


_COMMAND = re.compile(r"`nexus ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)*)(?: [^`]*)?`")


def tools_for_commands(text: str, tools: Collection[str], cli_to_tool: Callable[[str], str]) -> str:
    """``text`` with each backticked ``nexus COMMAND …`` that has an MCP tool named as that tool
    (messages from the library name CLI commands; over MCP an agent calls tools). ``cli_to_tool`` maps
    a CLI command (``state show``) to its tool's name (``state_show``)."""

    def swap(match: re.Match[str]) -> str:
        words = match.group(1).split(" ")
        for n in range(len(words), 0, -1):
            name = cli_to_tool(" ".join(words[:n]))
            if name in tools:
                return f"the `{name}` tool"
        return match.group(0)

    return _COMMAND.sub(swap, text)
