"""Operations on the live log: the brief, appending, acknowledging, reading, races, repair and recovery.

Each function takes a :class:`~nexus.operations.spec.Call` and its parameters and returns a result
with its JSON and its text; the surfaces (``cli.py``, ``mcp_server.py``) only read input and print.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .spec import Answer, Call

if TYPE_CHECKING:
    from pathlib import Path

    from ..records import AppendResult, Located


def entry_text(located: Located, root: Path | None = None) -> str:
    """An entry as the command line prints it (header, acks, indented body); an entry the safety scan
    flags is marked as data, not instructions, in front of its header."""
    from ..memory import scan

    e = located.entry
    found = scan.entry_flags(e.summary, e.body, root)
    head = f"{e.ts} · {e.agent} · {e.channel} · {e.type} — {e.summary}  [{e.id}]"
    if found:
        head = f"{scan.data_notice(found)}\n{head}"
    if e.ack:
        head += f"\n  acks: {', '.join(e.ack)}"
    if e.body:
        head += "\n" + "\n".join("  " + line for line in e.body.split("\n"))
    return head


def entries_text(items: list[Located], empty: str, root: Path | None = None) -> str:
    """Verified entries as their authors' words; anything else after them, apart and marked."""
    from ..team.brief import UNVERIFIED_TITLE, split_verified, unverified_line

    good, suspect = split_verified(items)
    parts = [entry_text(i, root) for i in good]
    if suspect:
        parts.append(
            f"{UNVERIFIED_TITLE} ({len(suspect)}):\n" + "\n".join(unverified_line(i) for i in suspect)
        )
    return "\n\n".join(parts) or empty


def listing(items: list[Any], text: str, root: Path | None = None) -> Answer:
    """A list of records: a JSON array on the command line, ``{"items": [...]}`` for a tool. An entry
    the safety scan flags carries ``"flagged"``: the marker, data and not instructions."""
    data = [_flagged(i, i.to_json(), root) for i in items]
    return Answer(data, text, mcp={"items": data})


def _flagged(item: Any, data: dict[str, Any], root: Path | None) -> dict[str, Any]:
    from ..memory import scan

    entry = getattr(item, "entry", None)
    found = scan.entry_flags(entry.summary, entry.body, root) if entry is not None else ()
    return data | {"flagged": scan.data_notice(found)} if found else data


def brief(call: Call, *, peek: bool = False) -> Answer:
    from ..team import brief as brief_mod
    from ..team.claims import git_project

    built = brief_mod.build(
        call.vault,
        call.agent,
        call.settings,
        peek=peek,
        surface=call.surface,
        project=git_project(Path.cwd()),
        trust=call.trust,
    )
    text = brief_mod.render(built)
    return Answer(built.to_json(), text, mcp=text)


def _appended(result: AppendResult) -> Answer:
    """What an append acknowledges: the whole entry on the command line; to an agent, the id and
    where the entry is (it wrote the rest)."""
    from ..storage.text import body_notice

    located = result.located
    ref: dict[str, Any] = {
        "id": located.entry.id,
        "file": located.file,
        "lines": [located.line_start, located.line_end],
        "link": located.link,
    }
    notes = [f"moved a torn tail (a writer killed mid-write) to {q}" for q in result.quarantined]
    if result.quarantined:
        ref["quarantined"] = list(result.quarantined)
    if result.body_changed:
        ref["note"] = body_notice(list(result.body_changed))
        notes.append(f"note: {ref['note']}")
    return Answer(result.to_json(), located.entry.id, notes=tuple(notes), mcp=ref)


def append(
    call: Call,
    *,
    channel: str,
    type: str,
    summary: str,
    body: str | None = None,
    ack: list[str] | None = None,
) -> Answer:
    from ..ledger import log

    return _appended(
        log.append(
            call.vault,
            call.signer(),
            trust=call.trust,
            channel=channel,
            type=type,
            summary=summary,
            body=body,
            ack=tuple(ack or ()),
        )
    )


def acknowledge(
    call: Call,
    *,
    ids: list[str],
    summary: str = "acknowledged",
    channel: str = "general",
    body: str | None = None,
) -> Answer:
    return append(call, channel=channel, type="ack", summary=summary, body=body, ack=ids)


def reconcile(
    call: Call, *, a: str, b: str, summary: str, body: str | None = None, channel: str = "general"
) -> Answer:
    return append(call, channel=channel, type="reconcile", summary=summary, body=body, ack=[a, b])


def read(call: Call, *, peek: bool = False) -> Answer:
    from ..ledger import log
    from ..team.coordination import entry_checker

    items = log.unread(
        call.vault, call.agent, advance=not peek, checker=entry_checker(call.vault, call.trust)
    )
    root = call.vault.root
    return listing(items, entries_text(items, "nothing new", root), root)


def tail(call: Call, *, n: int = 10) -> Answer:
    from ..ledger import log
    from ..team.coordination import entry_checker

    items = log.tail(call.vault, n, checker=entry_checker(call.vault, call.trust))
    root = call.vault.root
    return listing(items, entries_text(items, "the log is empty", root), root)


def owed(call: Call) -> Answer:
    from ..team import acks

    st = call.settings
    items = acks.owed(
        call.vault, call.agent, st.ack_types, race_window=st.race_window_seconds, trust=call.trust
    )
    text = (
        "\n\n".join(entry_text(i, call.vault.root) for i in items) or f"{call.agent} owes no acknowledgements"
    )
    return listing(items, text, call.vault.root)


def repair(call: Call) -> Answer:
    from ..ledger import log

    moved = log.repair_tail(call.vault, call.trust)
    return Answer(
        {"quarantined": moved}, "\n".join(f"moved a torn tail to {m}" for m in moved) or "no torn tail"
    )


def recover(call: Call, *, id: str, restore: bool = False) -> Answer:
    from ..ledger import log, shadow

    original = shadow.original(call.vault, id)
    text = original.text
    if restore:
        log.restore_entry(call.vault, id)
        text = f"restored {id} in {original.file} from the shadow"
    return Answer(original.to_json(), text)


def races(call: Call, *, unresolved: bool = False) -> Answer:
    from ..team import races as races_mod

    st = call.settings
    found = races_mod.find_races(
        call.vault, st.race_window_seconds, ack_types=st.ack_types, unresolved=unresolved, trust=call.trust
    )
    lines = []
    for race in found:
        a, b = race.a.entry, race.b.entry
        state = f"resolved by {race.resolved_by}" if race.resolved_by else "UNRESOLVED"
        lines.append(f"{a.id} ({a.agent}: {a.summary})  ×  {b.id} ({b.agent}: {b.summary})  {state}")
    return listing(found, "\n".join(lines) or "no races")
