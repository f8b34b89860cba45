"""Operations on checkpoints: save, show (flagging a probable crash), resume. Each result is assembled
here once, for every surface."""

from __future__ import annotations

from ..records import Answer, CheckpointView, Resumption
from .spec import Call


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
    from .. import checkpoints

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
    from .. import checkpoints
    from ..errors import NotFoundError

    who = of or call.agent
    cp = checkpoints.load(call.vault, who)
    if cp is None:
        raise NotFoundError(f"{who} has no checkpoint yet")
    crashed = checkpoints.probable_crash(cp, call.settings.stale_checkpoint_minutes)
    earlier = tuple(checkpoints.history(call.vault, who)) if history else None
    return CheckpointView(cp, crashed, earlier)


def resume(call: Call, *, no_log: bool = False) -> Resumption:
    from .. import checkpoints

    got = checkpoints.resume(call.vault, call.agent, keys_home=None if no_log else call.keys_home)
    entry = got["resume_entry"]
    return Resumption(got["checkpoint"], tuple(got["since"]), entry.entry.id if entry else None)
