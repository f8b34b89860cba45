"""Writes that belong together: a note and the log entry that records it (a checkpoint's change, a
decision, a state version).

The entry is appended first: a failed append leaves nothing (``log.py`` cuts the segment back), so
nothing else is written either. When the note's write fails after the entry landed, the command fails
and its retry completes the pair: :func:`append_once` finds that the signer's newest entry is already
this very entry and returns it instead of appending a second copy, and the retry writes the note.
A command that exits 0 has written both.
"""

from __future__ import annotations

from typing import Any

from ..records import Located
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust
from . import log, tailstate

LOOK_BACK = 64  # a retry follows its failure: the entry it left is among the newest entries


def _same(located: Located, channel: str, type: str, summary: str, body: str | None) -> bool:
    e = located.entry
    return (e.channel, e.type, e.summary.strip(), (e.body or "").strip()) == (
        channel,
        type,
        summary.strip(),
        (body or "").strip(),
    )


def landed(
    vault: Vault, agent: str, channel: str, type: str, summary: str, body: str | None
) -> Located | None:
    """The agent's newest entry when it is exactly this one (a retry's first half already there). The
    segment's last entries are read, not the tail state: an append whose tail state could not be saved
    (a full disk) is still found."""
    for located in reversed(tailstate.tail(vault, LOOK_BACK)):
        if located.entry.agent == agent:
            return located if _same(located, channel, type, summary, body) else None
    return None


def append_once(
    vault: Vault,
    signer: Any,
    *,
    channel: str,
    type: str,
    summary: str,
    body: str | None = None,
    ack: tuple[str, ...] = (),
    via: str | None = None,
    trust: Trust = NO_PINS,
) -> Located:
    """Append the entry of a note-and-entry pair, or return it when a failed attempt already appended it
    (the caller holds the lock of the note's kind, so no other write of this pair runs meanwhile).
    ``trust``: the machine's pins (``log.append``)."""
    found = landed(vault, signer.name, channel, type, summary, body)
    if found is not None:
        return found
    return log.append(
        vault, signer, channel=channel, type=type, summary=summary, body=body, ack=ack, via=via, trust=trust
    ).located
