"""What nexus's MCP server says the same way whether the front (``mcp_answers.py``) or the SDK server
(``mcp_server.py``) answers: its instructions and version, and :class:`Defer`, by which the front
leaves a request to the SDK. Nothing here imports anything: the front answers before the library loads.
"""

from __future__ import annotations


class Defer(Exception):
    """The front cannot be sure to answer this exactly as the SDK would: the SDK answers it."""


def instructions(agent: str) -> str:
    """The server's ``instructions`` (sent in the ``initialize`` answer)."""
    return (
        f"nexus: shared, durable memory for agents working together. You are {agent!r}. "
        "Your brief (what the others wrote, what you owe, decisions in force, your checkpoint) "
        "is injected into your context at session start and when something is new, where "
        "`nexus setup` wired your runtime's hooks; only when your context holds no nexus brief, "
        "call the `brief` tool at the start of a session and before you act on shared work. "
        "After a meaningful turn record what you did with `log_append`; acknowledge what others "
        "wrote with `acknowledge`; record decisions with `decide`; find anything with `search`; "
        "save your working context with `checkpoint_save`."
    )


def version() -> str:
    from .. import __version__

    return str(__version__)
