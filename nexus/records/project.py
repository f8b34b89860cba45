"""The project's notes: checkpoints, decisions, versions of the project state."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


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
