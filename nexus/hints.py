"""How an instruction inside an answer names the next action, on the surface the answer goes to.

A brief read in a shell says ``nexus log owed --agent ella``; the same brief served over MCP names the
tool (``log_owed``), because an agent talking MCP should call a tool, not type a shell command. Every
text that tells the agent what to do next asks :func:`say` for the words, so the two surfaces never
drift apart. Surfaces: ``cli`` (the default, also what hooks inject) and ``mcp``.
"""

from __future__ import annotations

SURFACES = ("cli", "mcp")

_CLI = {
    "ack": "`nexus log append --agent {agent} ... --ack ID`",
    "owed": "run `nexus log owed --agent {agent}` and `nexus races --unresolved`",
    "decisions": "run `nexus decisions`",
    "resume": "`nexus checkpoint resume --agent {agent}`",
    "read": "run `nexus log read --agent {agent}`",
    "fact": "`nexus memory facts show NAME`",
    "snapshot": "`nexus memory snapshot --agent {agent}`",
    "reconcile": ('`nexus log append --agent {agent} --channel {channel} --type reconcile '
                  '--ack {a} --ack {b} --summary "..."`'),
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
