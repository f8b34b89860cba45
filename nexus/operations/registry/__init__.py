"""Every operation, declared once (see ``nexus/operations/__init__.py``), a module a group: each
module here declares the operations whose functions are in the ``nexus/operations`` module of the
same name (``log.py`` here: ``nexus/operations/log.py``'s). Cheap to import: strings and small
plain values only; each function is named as ``"module:function"`` and imported when it runs.

Order matters: it is the order of the MCP tool list and of the commands in ``nexus --help``.
"""

from __future__ import annotations

from ..spec import Operation
from . import admin, checkpoint, claims, log, memory, record, session, setup

OPERATIONS: tuple[Operation, ...] = (
    *log.OPERATIONS,  # the brief and the log
    *claims.OPERATIONS,
    *record.OPERATIONS,  # decisions and the project state
    *memory.OPERATIONS,  # memory, facts, bank
    *admin.OPERATIONS,  # the whole vault, search
    *checkpoint.OPERATIONS,
    *setup.OPERATIONS,  # set-up, by a person in a shell
    *session.OPERATIONS,  # a runtime's session (nexus-hook)
)
