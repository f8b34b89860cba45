"""Search: a note's section, a hit, the index's status, what a refresh did."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


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
