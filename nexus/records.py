"""Pure value types shared by every module: frozen dataclasses, no I/O.

Each record kind written to the vault is described in ``nexus/vault_template/NEXUS-FORMAT.md``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Entry:
    """One signed entry of the live-context log.

    ``seq`` and ``prev`` chain an agent's entries (one chain per agent; format 2 stores no ``prev``:
    None); ``seen`` is the id of the last entry its author had read when writing it; ``key``
    identifies the public key that signs it (format 2 stores none: "", the reader finds it); ``via``
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
    v: int = 1  # the entry format it is written in (NEXUS-FORMAT.md): 1, or 2 (no key id or prev stored)

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
    # None: not checked yet; "ok": canonical, and signed by its author's trusted key; otherwise
    # "KIND: what is wrong" (a verify finding kind: non-canonical, forged, edited, unknown-agent,
    # key-changed). Readers show only "ok" entries as their author's words.
    verdict: str | None = None

    @property
    def verified(self) -> bool:
        return self.verdict == "ok"

    def to_json(self) -> dict[str, Any]:
        data = self.entry.to_json()
        data.update(file=self.file, line_start=self.line_start, line_end=self.line_end, link=self.link)
        if self.verdict is not None:
            data["verified"] = self.verdict == "ok"
            if self.verdict != "ok":
                data["problem"] = self.verdict
        return data

    @property
    def link(self) -> str:
        """Obsidian wikilink to the entry's block."""
        return block_link(self.file, self.entry.id)


def block_link(file: str, entry_id: str) -> str:
    """Obsidian wikilink to entry ``entry_id``'s block in segment ``file`` (vault-relative)."""
    note = file[:-3] if file.endswith(".md") else file
    return f"[[{note}#^{entry_id}]]"


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
    body_changed: tuple[str, ...] = field(default=())  # how the body was made visible (text.prepare_body)

    def to_json(self) -> dict[str, Any]:
        data = self.located.to_json()
        data["quarantined"] = list(self.quarantined)
        data["body_changed"] = list(self.body_changed)
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
            agent=str(data["agent"]),
            task=str(data["task"]),
            step=str(data["step"]),
            next=str(data["next"]),
            status=str(data["status"]),
            files=tuple(str(f) for f in data.get("files") or ()),
            notes=str(data.get("notes") or ""),
            saved=str(data["saved"]),
            seq=int(data["seq"]),
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
class Notice:
    """A visible notice the watcher wrote into a log segment (restored entries, a history edit)."""

    id: str
    kind: str  # "restored", "history-edit", "recreated"
    file: str  # the segment the notice was written to
    entries: tuple[str, ...]  # the entry ids it is about
    ts: str
    message: str

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["entries"] = list(self.entries)
        return data


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
class ShadowCopy:
    """The watcher's durable copy of a verified entry, byte for byte as it was first seen."""

    id: str
    agent: str
    file: str  # the segment it was seen in (vault-relative)
    sha: str  # sha256 hex of ``text``
    text: str  # from the begin line to the end line, with the final newline

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Section:
    """One section of a Markdown note, split at headings (for the search index)."""

    heading: str  # "" for text before the first heading
    level: int  # 1..6, 0 for text before the first heading
    line_start: int  # 1-based, counting the frontmatter
    line_end: int
    start: int  # byte offsets in the file
    end: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Hit:
    """One search result, with where it came from."""

    kind: str  # "entry" (a log entry) or "section" (a section of a note)
    path: str  # vault-relative file
    line_start: int
    line_end: int
    link: str  # Obsidian wikilink: [[log/2026-11#^ID]] or [[decisions/D-0001-x#Heading]]
    title: str  # the entry's summary, or the section's heading (the note's title when empty)
    snippet: str  # matched words marked **like this**
    score: float
    entry_id: str | None = None
    heading: str | None = None
    agent: str | None = None  # author
    time: str | None = None  # UTC, ISO 8601
    type: str | None = None
    channel: str | None = None
    status: str | None = None  # frontmatter status of a note (active, superseded…)
    superseded: bool = False  # the hit is a superseded decision, its note or its decision entry
    superseded_by: str | None = None  # the decision that replaced it (D-0002)
    verified: bool | None = None  # entry signature checks against the author's public key; None: not an entry

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class IndexStatus:
    """What the search index holds and whether it is up to date with the vault."""

    path: str  # the index folder, vault-relative
    exists: bool
    documents: int
    entries: int
    sections: int
    files: int  # files indexed
    stale_files: tuple[str, ...]  # files changed since they were indexed (indexed at the next search)
    size_bytes: int
    built: str | None  # when the index was last rebuilt from scratch
    updated: str | None  # when it last took in a change
    damaged: str | None = None  # why the index cannot be read (the next search rebuilds it)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["stale_files"] = list(self.stale_files)
        return data


@dataclass(frozen=True)
class RefreshStats:
    """What one refresh of the search index did."""

    files_checked: int
    files_indexed: int
    files_removed: int
    documents_added: int
    rebuilt: bool
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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
