"""Pure value types shared by every module: frozen dataclasses, no I/O.

Each record kind written to the vault is described in ``vault_template/NEXUS-FORMAT.md``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Entry:
    """One signed entry of the live-context log.

    ``seq`` and ``prev`` chain an agent's entries (one chain per agent); ``seen`` is the id of the last
    entry its author had read when writing it; ``key`` identifies the public key that signs it; ``via``
    names the process that signed on a person's behalf (``"watcher"``), or is ``None``.
    """

    id: str
    ts: str
    agent: str
    channel: str
    type: str
    summary: str
    body: str | None
    ack: tuple[str, ...]
    seen: str | None
    seq: int
    prev: str | None
    key: str
    sig: str = ""
    via: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ack"] = list(self.ack)
        return data


@dataclass(frozen=True)
class Located:
    """An entry and where it stands: segment file (vault-relative), 1-based line range, byte range."""

    entry: Entry
    file: str
    line_start: int
    line_end: int
    offset: int
    end_offset: int

    def to_json(self) -> dict[str, Any]:
        data = self.entry.to_json()
        data.update(
            file=self.file, line_start=self.line_start, line_end=self.line_end, link=self.link
        )
        return data

    @property
    def link(self) -> str:
        """Obsidian wikilink to the entry's block."""
        note = self.file[:-3] if self.file.endswith(".md") else self.file
        return f"[[{note}#^{self.entry.id}]]"


@dataclass(frozen=True)
class Problem:
    """One thing ``verify`` found wrong."""

    kind: str  # torn-tail, framing, stray-text, edited, forged, unknown-agent, key-mismatch, missing,
    #            reordered, duplicate, history-edit, ...
    file: str
    line: int
    message: str
    entry_id: str | None = None
    agent: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        who = f" {self.entry_id}" if self.entry_id else ""
        return f"{self.file}:{self.line}: {self.kind}{who}: {self.message}"


@dataclass(frozen=True)
class Identity:
    """An agent or a person, as its identity note declares it."""

    name: str
    kind: str  # "agent" or "human"
    public_key: str  # "ed25519:<base64>"
    key_id: str  # first 16 hex digits of sha256(raw public key)
    created: str
    path: str  # vault-relative path of the identity note

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AppendResult:
    """What ``log.append`` acknowledges once the entry is durable."""

    located: Located
    quarantined: tuple[str, ...] = field(default=())  # torn tails moved aside during this append

    def to_json(self) -> dict[str, Any]:
        data = self.located.to_json()
        data["quarantined"] = list(self.quarantined)
        return data


@dataclass(frozen=True)
class Checkpoint:
    """An agent's working context (``agents/NAME/checkpoint.md``); ``seq`` counts its versions."""

    agent: str
    task: str
    step: str
    next: str
    status: str  # in-progress, blocked, done
    files: tuple[str, ...]
    notes: str
    saved: str  # UTC, 2026-11-30T04:41:07Z
    seq: int

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["files"] = list(self.files)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Checkpoint:
        return cls(
            agent=str(data["agent"]), task=str(data["task"]), step=str(data["step"]),
            next=str(data["next"]), status=str(data["status"]),
            files=tuple(str(f) for f in data.get("files") or ()), notes=str(data.get("notes") or ""),
            saved=str(data["saved"]), seq=int(data["seq"]),
        )



@dataclass(frozen=True)
class Decision:
    """A recorded decision (``decisions/D-NNNN-slug.md``); never edited, only superseded."""

    id: str  # D-0007
    title: str
    status: str  # active, superseded
    author: str
    date: str
    decision: str
    rationale: str
    alternatives: str
    supersedes: str | None
    superseded_by: str | None
    refs: tuple[str, ...]
    entry: str | None  # id of its `decision` entry in the log
    path: str  # vault-relative

    @property
    def link(self) -> str:
        return f"[[{self.path.removesuffix('.md')}|{self.id}]]"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["refs"] = list(self.refs)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Decision:
        return cls(**{**data, "refs": tuple(data.get("refs") or ())})



@dataclass(frozen=True)
class StateVersion:
    """One accepted version of the project state (``state/history/vNNNN.md``)."""

    version: int
    author: str
    kind: str  # agent or human (a person's edit in Obsidian)
    ts: str
    summary: str
    sha256: str
    restored_from: int | None
    content: str
    path: str  # vault-relative

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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

    @property
    def percent(self) -> int:
        return min(100, self.chars * 100 // self.limit) if self.limit > 0 else 0

    @property
    def usage(self) -> str:
        return f"{self.percent}% — {self.chars:,}/{self.limit:,} chars"

    @property
    def warning(self) -> str | None:
        if self.percent > 80:
            return (f"{self.path} is {self.usage}: above 80%; consolidate (`nexus memory consolidate`) "
                    f"or remove entries before it fills")
        return None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(entries=list(self.entries), usage=self.usage, percent=self.percent,
                    entry_count=len(self.entries), warning=self.warning, success=True)
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
