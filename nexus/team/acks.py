"""Acknowledgements: entries of an ack-needing type are owed by every other agent until it acks them.

An entry acks others by listing their ids in ``ack`` (``nexus log append --ack ID``). The types that
need acknowledgement are a vault setting (``ack_types``; default correction, decision, handoff,
question). "Every other agent" means every identity of kind ``agent`` except the entry's author: people
never owe acknowledgements (they read in Obsidian, and may still ack). An ack by anyone else than the
author counts for that acker only; acking your own entry changes nothing.

Answers come from the derived state in ``coordination.py`` (incremental; no full parse per call).
"""

from __future__ import annotations

from ..keys import roster
from ..records import Located
from ..settings import DEFAULTS
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust
from . import coordination


def owed(
    vault: Vault,
    agent: str,
    ack_types: tuple[str, ...] = DEFAULTS.ack_types,
    *,
    race_window: float = DEFAULTS.race_window_seconds,
    trust: Trust = NO_PINS,
) -> list[Located]:
    """Entries of an ack-needing type by others that ``agent`` has not acked yet, oldest first.

    A person (an identity of kind ``human``) owes nothing. ``trust``: the machine's pins, which decide
    each entry's verdict.
    """
    from ..storage.text import check_name

    check_name(agent)
    info = roster.roster(vault).get(agent)
    if info is None:
        raise vault.unknown_agent(agent)
    if info.get("kind") == "human":
        return []
    data = coordination.view(vault, agent, ack_types, race_window)
    check = coordination.entry_checker(vault, trust)
    return [coordination.materialize(vault, ref, check) for ref in data.owed]


def unacknowledged(
    vault: Vault,
    ack_types: tuple[str, ...] = DEFAULTS.ack_types,
    *,
    race_window: float = DEFAULTS.race_window_seconds,
) -> dict[str, list[str]]:
    """Entry id -> the agents that still owe it an acknowledgement (only ids someone still owes)."""
    state = coordination.refresh(vault, ack_types, race_window).state
    agents = roster.agents(vault)
    out: dict[str, list[str]] = {}
    for entry_id in sorted(state.pending):
        owers = [a for a in agents if state.pending[entry_id].owed_by(a)]
        if owers:
            out[entry_id] = owers
    return out
