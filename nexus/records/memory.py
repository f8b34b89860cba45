"""Memory: a bounded store's answer, archived entries, facts, the bank's facts."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class MemoryResult:
    """What a write to ``MEMORY.md``/``USER.md`` reports: the live entries and the usage.

    ``backup`` is the vault-relative copy kept when the file had been edited by hand in a way nexus
    would not write back byte for byte (``None`` otherwise).
    """

    target: str  # memory or user
    agent: str | None  # None for the shared USER.md
    path: str  # vault-relative
    message: str
    entries: tuple[str, ...]
    chars: int
    limit: int
    changed: bool
    backup: str | None = None
    skipped: tuple[str, ...] = ()  # what an import left out, one line each (why)

    @property
    def percent(self) -> int:
        return min(100, self.chars * 100 // self.limit) if self.limit > 0 else 0

    @property
    def usage(self) -> str:
        return f"{self.percent}% — {self.chars:,}/{self.limit:,} chars"

    @property
    def warning(self) -> str | None:
        if self.percent > 80:
            return (
                f"{self.path} is {self.usage}: above 80%; consolidate (`nexus memory consolidate`) "
                f"or remove entries before it fills"
            )
        return None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            entries=list(self.entries),
            skipped=list(self.skipped),
            usage=self.usage,
            percent=self.percent,
            entry_count=len(self.entries),
            warning=self.warning,
            success=True,
        )
        return data


@dataclass(frozen=True)
class ArchivedEntry:
    """A memory entry moved to ``archive/memory/ID.md`` by sweep or consolidate (restorable)."""

    id: str
    target: str
    agent: str | None
    text: str
    first_seen: str
    archived: str
    reason: str
    path: str  # vault-relative

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Fact:
    """One note of the memory index (``memory/NAME.md``), or a retired one under ``archive/facts/``."""

    name: str
    description: str
    type: str  # user, feedback, project, reference
    body: str
    created: str
    path: str  # vault-relative
    approved_by: str | None = None
    approved_at: str | None = None
    source: str | None = None
    retired: bool = False
    invalid: str | None = None  # why the note could not be read (it is listed, never used)

    @property
    def link(self) -> str:
        return f"[[{self.path.removesuffix('.md')}|{self.name}]]"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["link"] = self.link
        return data


@dataclass(frozen=True)
class BankFact:
    """One fact an agent retained in its bank (``agents/A/bank.md``), with its review state."""

    id: str  # AGENT-N, also the block id
    agent: str
    type: str  # decision, fact, failure, preference
    content: str
    retained: str
    status: str  # pending, approved, rejected
    source: str | None = None  # a log entry id
    reviewed_by: str | None = None
    reviewed_at: str | None = None
    why: str | None = None
    fact: str | None = None  # name of the memory-index fact it was promoted to
    path: str = ""  # vault-relative bank note

    @property
    def link(self) -> str:
        return f"[[{self.path.removesuffix('.md')}#^{self.id}|{self.id}]]"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["link"] = self.link
        return data


# ------------------------------------------------------------------ coordination
