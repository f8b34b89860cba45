"""Operations on checkpoints: save, show (flagging a probable crash), resume. Each result is assembled
here once, for every surface."""

from __future__ import annotations

from typing import Any

from ..records import Checkpoint, Located
from .log import entry_text
from .spec import Answer, Call


def save(
    call: Call,
    *,
    task: str,
    step: str,
    next: str,
    status: str = "in-progress",
    files: list[str] | None = None,
    notes: str | None = None,
) -> Answer:
    from ..project import checkpoints

    cp, logged = checkpoints.save(
        call.vault,
        call.agent,
        task=task,
        step=step,
        next=next,
        status=status,
        files=tuple(files or ()),
        notes=notes,
        keys_home=call.keys_home,
    )
    brief = {"agent": cp.agent, "saved": cp.saved, "version": cp.seq, "status": cp.status, "logged": logged}
    return Answer({**cp.to_json(), "logged": logged}, f"checkpoint {cp.seq} saved ({cp.status})", mcp=brief)


def show(call: Call, *, of: str | None = None, history: bool = False) -> CheckpointView:
    from ..errors import NotFoundError
    from ..project import checkpoints

    who = of or call.agent
    cp = checkpoints.load(call.vault, who)
    if cp is None:
        raise NotFoundError(f"{who} has no checkpoint yet")
    crashed = checkpoints.probable_crash(cp, call.settings.stale_checkpoint_minutes)
    earlier = tuple(checkpoints.history(call.vault, who)) if history else None
    return CheckpointView(cp, crashed, earlier)


def resume(call: Call, *, no_log: bool = False) -> Resumption:
    from ..project import checkpoints

    got = checkpoints.resume(call.vault, call.agent, keys_home=None if no_log else call.keys_home)
    entry = got["resume_entry"]
    return Resumption(got["checkpoint"], tuple(got["since"]), entry.entry.id if entry else None)


class CheckpointView:
    """A checkpoint as shown (``checkpoint show``): flagged when it looks like a crash, with its earlier
    versions when asked. (Plain classes here, not dataclasses: ``checkpoint save``, a per-turn command,
    imports this module, and making a dataclass costs an ``exec`` at import.)"""

    __slots__ = ("checkpoint", "history", "probable_crash")

    def __init__(
        self, checkpoint: Checkpoint, probable_crash: bool, history: tuple[Checkpoint, ...] | None = None
    ) -> None:
        self.checkpoint, self.probable_crash, self.history = checkpoint, probable_crash, history

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {**self.checkpoint.to_json(), "probable_crash": self.probable_crash}
        if self.history is not None:
            data["history"] = [c.to_json() for c in self.history]
        return data

    def text(self) -> str:
        text = checkpoint_text(self.checkpoint, self.probable_crash)
        if self.history is not None:
            text += "\n\nhistory:\n" + "\n".join(
                f"  #{c.seq} {c.saved} {c.status:<11} {c.step} → {c.next}" for c in self.history
            )
        return text


class Resumption:
    """What a new session needs (``checkpoint resume``): the checkpoint, the log entries since it was
    saved, and the ``resume`` entry that says so (None when none was logged)."""

    __slots__ = ("checkpoint", "resume_entry", "since")

    def __init__(self, checkpoint: Checkpoint, since: tuple[Located, ...], resume_entry: str | None) -> None:
        self.checkpoint, self.since, self.resume_entry = checkpoint, since, resume_entry

    def to_json(self) -> dict[str, Any]:
        return {
            "checkpoint": self.checkpoint.to_json(),
            "since": [loc.to_json() for loc in self.since],
            "resume_entry": self.resume_entry,
        }

    def text(self) -> str:
        others = [loc for loc in self.since if loc.entry.id != self.resume_entry]
        return (
            "Resume from this checkpoint:\n"
            + checkpoint_text(self.checkpoint, False)
            + f"\n\n{len(others)} log entries since it was saved:\n"
            + ("\n\n".join(entry_text(loc) for loc in others) or "  (none)")
        )


def checkpoint_text(cp: Checkpoint, crashed: bool) -> str:
    """A checkpoint as a person reads it in a terminal."""
    flag = "  ⚠ probable crash: in-progress with no activity since it was saved" if crashed else ""
    lines = [
        f"{cp.agent} · {cp.status} · version {cp.seq} · saved {cp.saved}{flag}",
        f"task:  {cp.task}",
        f"done:  {cp.step}",
        f"next:  {cp.next}",
    ]
    if cp.files:
        lines.append("files: " + ", ".join(cp.files))
    if cp.notes.strip():
        lines += ["notes:", *("  " + line for line in cp.notes.rstrip().split("\n"))]
    return "\n".join(lines)
