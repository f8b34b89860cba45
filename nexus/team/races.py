"""Races: two entries by different agents, each written without its author having seen the other.

Definition (deterministic, from the log alone): entries X (by agent A) and Y (by agent B ≠ A) with
X.id < Y.id race when B had not seen X – ``Y.seen`` is null or older than X.id – and Y does not ack X,
and Y was written at most ``window`` seconds after X (times from the ids' milliseconds; the
``race_window_seconds`` setting). A could never have seen the later Y. Entries of type ``reconcile``
never race, nor do refused stale state edits (``state-conflict``: nothing changed, so nothing
competed), nor claims and releases (``claim``, ``release``: checked under the log lock, and merged by
their own rule), nor a person's notes signed by the watcher (``via``). A race is resolved by the first
entry of type ``reconcile`` that acks both ids; meaning is never merged automatically and both
entries always stay.

Answers come from the derived state in ``coordination.py`` (incremental; no full parse per call).
"""

from __future__ import annotations

from ..records import Race
from ..settings import DEFAULTS
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust
from . import coordination


def find_races(
    vault: Vault,
    window_seconds: float = DEFAULTS.race_window_seconds,
    *,
    ack_types: tuple[str, ...] = DEFAULTS.ack_types,
    unresolved: bool = False,
    trust: Trust = NO_PINS,
) -> list[Race]:
    """Every race in the log, ordered by (a id, b id); only unresolved ones when ``unresolved``.
    ``trust``: the machine's pins, which decide each side's verdict."""
    state = coordination.refresh(vault, ack_types, window_seconds).state
    out = []
    check = coordination.entry_checker(vault, trust)
    for race in sorted(state.races, key=lambda r: (r.a.id, r.b.id)):
        if unresolved and race.resolved_by is not None:
            continue
        out.append(
            Race(
                coordination.materialize(vault, race.a, check),
                coordination.materialize(vault, race.b, check),
                race.resolved_by,
            )
        )
    return out


def agent_races(
    vault: Vault,
    agent: str,
    window_seconds: float = DEFAULTS.race_window_seconds,
    *,
    ack_types: tuple[str, ...] = DEFAULTS.ack_types,
    trust: Trust = NO_PINS,
) -> list[Race]:
    """The unresolved races ``agent`` is part of (what its brief lists)."""
    data = coordination.view(vault, agent, ack_types, window_seconds)
    check = coordination.entry_checker(vault, trust)
    return [
        Race(coordination.materialize(vault, r.a, check), coordination.materialize(vault, r.b, check))
        for r in data.races
    ]
