"""The one set of operations: every capability declared once, and the surfaces generated over it.

An :class:`Operation` is a declaration, not code: its names on each surface (the ``nexus`` command
words, the MCP tool name), its help and example, its parameters (:class:`Param`: type, closed set,
description for a model, help for a person, flag on the command line), and the function that does
the work as a ``"module:function"`` string, imported only when the operation runs. Building the
command-line parser or the MCP tool list therefore imports nothing but this module, which is what
keeps the per-turn commands fast.

The function takes a :class:`Call` (the workspace, the acting agent, the surface) and the
parameters as keywords, and returns a result that knows its JSON (``to_json``) and its text
(``text``); ``records.Answer`` is the plain one. ``cli.py`` turns the declarations into argparse
subcommands, ``mcp_server.py`` into tools with the same names, descriptions and schemas; a
surface adds nothing of its own but how it reads input and prints output.

Adding a command: declare it in its group's module of ``registry/`` (``registry/log.py``…; they make
:data:`OPERATIONS`, in order), write its function in the group's module under ``nexus/operations/``,
document it in ``docs/cli.md`` and/or ``docs/mcp.md``. The tests check every declared surface is
reachable and documented.
"""

from __future__ import annotations

from .registry import OPERATIONS
from .spec import ADD, BOTH, CHANGE, CLI, CURSOR, HOOK, MCP, READ, SET, Call, Operation, Param

BY_NAME = {op.name: op for op in OPERATIONS}
BY_COMMAND = {op.command: op for op in OPERATIONS if op.command}
BY_TOOL = {op.tool: op for op in OPERATIONS if op.tool}
BY_HOOK = {op.hook: op for op in OPERATIONS if op.hook}

__all__ = [
    "ADD",
    "BOTH",
    "BY_COMMAND",
    "BY_HOOK",
    "BY_NAME",
    "BY_TOOL",
    "CHANGE",
    "CLI",
    "CURSOR",
    "HOOK",
    "MCP",
    "OPERATIONS",
    "READ",
    "SET",
    "Call",
    "Operation",
    "Param",
]
