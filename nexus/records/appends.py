"""What writing the log answers: an append's acknowledgement, a notice, a shadow copy kept."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .entries import Located


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
class ShadowCopy:
    """The watcher's durable copy of a verified entry, byte for byte as it was first seen."""

    id: str
    agent: str
    file: str  # the segment it was seen in (vault-relative)
    sha: str  # sha256 hex of ``text``
    text: str  # from the begin line to the end line, with the final newline

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
