"""The log's entry as a reader gets it: the entry, where it stands, what verify found wrong."""

from __future__ import annotations

from dataclasses import asdict, dataclass
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
