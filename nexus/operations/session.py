"""Operations a runtime's hooks run at a session's edges and turns (``nexus-hook``): the brief at the
start, only what is new before each turn, the checkpoint before compacting, the Stop check, and
retention at the end. Each answers with the text to inject (``""``: nothing) and, for Stop, whether
to block; ``hooks.py`` turns that into the JSON the runtime reads."""

from __future__ import annotations

from .spec import Answer, Call

BLOCK_REASON = (
    "nexus: you wrote no log entry this turn. Append one (the `log_append` tool, or "
    '`nexus log append --agent {agent} --channel TOPIC --type note --summary "..."`) '
    "saying what you did, then stop."
)


def start(call: Call, *, session_id: str, source: str = "startup") -> Answer:
    from ..team import session

    text = session.start(call.vault, call.agent, session_id, call.settings, source=source, trust=call.trust)
    return Answer({"context": text}, text)


def prompt(call: Call, *, session_id: str, prompt: str | None = None) -> Answer:
    from ..team import session

    if session.quiet(call.vault, call.agent, session_id, prompt=prompt):
        return Answer({"context": ""}, "")  # nothing moved since the last injection: the fastest answer
    text = session.turn(call.vault, call.agent, session_id, call.settings, prompt=prompt, trust=call.trust)
    return Answer({"context": text}, text)


def pre_compact(
    call: Call, *, session_id: str, trigger: str = "auto", transcript: str | None = None
) -> Answer:
    from ..team import session

    cp = session.pre_compact(
        call.vault,
        call.agent,
        session_id,
        trigger=trigger,
        transcript=transcript,
        keys_home=call.keys_home,
    )
    return Answer({"checkpoint": cp.seq}, "")


def stop(
    call: Call,
    *,
    session_id: str,
    retain: bool = False,
    block_without_entry: bool = False,
    stop_hook_active: bool = False,
) -> Answer:
    """Never blocks unless asked, and then at most once per turn (``stop_hook_active``); ``retain``:
    what session-end does, for runtimes without that event (Codex)."""
    from ..team import session

    if retain:
        session.end(call.vault, call.agent, session_id, trust=call.trust)
    if (
        block_without_entry
        and not stop_hook_active
        and not session.wrote_this_turn(call.vault, call.agent, session_id, trust=call.trust)
    ):
        reason = BLOCK_REASON.format(agent=call.agent)
        return Answer({"decision": "block", "reason": reason}, reason)
    return Answer({}, "")


def end(call: Call, *, session_id: str) -> Answer:
    from ..team import session

    session.end(call.vault, call.agent, session_id, trust=call.trust)
    return Answer({}, "")
