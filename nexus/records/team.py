"""What a team shares per turn: the brief and its sections, races, claims."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .entries import Located, block_link


@dataclass(frozen=True)
class Race:
    """Two entries by different agents, each written without its author having seen the other.

    ``a`` is the older entry (smaller id). ``resolved_by`` is the id of the first ``reconcile`` entry
    that acks both, or ``None``. Both entries always stay in the log.
    """

    a: Located
    b: Located
    resolved_by: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.a.entry.id, self.b.entry.id)

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a.to_json(), "b": self.b.to_json(), "resolved_by": self.resolved_by}


@dataclass(frozen=True)
class BriefSection:
    """One section of a brief: its name (``identity``, ``owed``, ``decisions``, ``state``, ``checkpoint``,
    ``memory``, ``claims``, ``unread``), heading and rendered text, and how many items it left out."""

    name: str
    title: str
    text: str
    omitted: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Brief:
    """What an agent loads before a turn, bounded by ``max_chars`` once rendered."""

    agent: str
    generated: str
    max_chars: int
    sections: tuple[BriefSection, ...]
    owed: tuple[str, ...]  # ids of entries the agent still has to acknowledge
    races: tuple[tuple[str, str], ...]  # unresolved races the agent is part of
    unread_shown: int
    unread_omitted: int
    cursor_advanced: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "generated": self.generated,
            "max_chars": self.max_chars,
            "sections": [s.to_json() for s in self.sections],
            "owed": list(self.owed),
            "races": [list(r) for r in self.races],
            "unread_shown": self.unread_shown,
            "unread_omitted": self.unread_omitted,
            "cursor_advanced": self.cursor_advanced,
        }


@dataclass(frozen=True)
class Claim:
    """A claim as the log holds it now (``team/claims.py`` folds the ``claim`` and ``release``
    entries): ``id`` is the first claim entry's, ``entry`` the newest (a renewal's); ``status`` is
    ``active``, ``released``, ``expired`` or ``lost`` (to claim ``lost_to``, by the merge rule)."""

    id: str
    agent: str
    project: str
    patterns: tuple[str, ...]
    mode: str  # exclusive | shared
    reason: str
    ts: str
    expires: str
    status: str
    entry: str
    file: str
    released_by: str | None = None
    released_at: str | None = None
    lost_to: str | None = None
    lost_to_agent: str | None = None

    @property
    def link(self) -> str:
        return block_link(self.file, self.id)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["patterns"] = list(self.patterns)
        data["link"] = self.link
        return data
