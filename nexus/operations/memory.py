"""Operations on memory: the bounded MEMORY.md/USER.md stores (add, replace, remove, snapshot, list,
sweep, restore, consolidate), the memory index of fact notes, and the retention bank (retain, recall,
review: approving or rejecting is a person's act, so only the command line offers it)."""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from .spec import Answer, Call


def _listing(items: list[Any], text: str) -> Answer:
    data = [i.to_json() if hasattr(i, "to_json") else i for i in items]
    return Answer(data, text, mcp={"items": data})


def _store(res: Any) -> Answer:
    """A store's state after a change: usage and entries; the backup of a hand-edited file kept."""
    notes = () if not res.backup else (f"kept the hand-edited file's previous text in {res.backup}",)
    warning = () if not res.warning else (f"warning: {res.warning}",)
    text = f"{res.message} {res.path}: {res.usage}, {len(res.entries)} entries"
    return Answer(res.to_json(), text, notes=notes, text_notes=warning)


def _store_text(res: Any) -> str:
    lines = [f"{res.message} {res.path}: {res.usage}, {len(res.entries)} entries".strip()]
    if res.warning:
        lines.append(f"warning: {res.warning}")
    return "\n".join(lines)


def add(call: Call, *, content: str, target: str = "memory") -> Answer:
    from ..memory import bounded as memory

    return _store(memory.add(call.vault, target, call.agent, content, limit=call.limits()[target]))


def replace(call: Call, *, old_text: str, content: str, target: str = "memory") -> Answer:
    from ..memory import bounded as memory

    limit = call.limits()[target]
    return _store(memory.replace(call.vault, target, call.agent, old_text, content, limit=limit))


def remove(call: Call, *, old_text: str, target: str = "memory") -> Answer:
    from ..memory import bounded as memory

    return _store(memory.remove(call.vault, target, call.agent, old_text, limit=call.limits()[target]))


def snapshot(call: Call) -> Answer:
    from ..memory.snapshot import snapshot

    limits = call.limits()
    snap = snapshot(call.vault, call.agent, memory_limit=limits["memory"], user_limit=limits["user"])
    notes = tuple(f"blocked from the snapshot: {b}" for b in snap.blocked)
    return Answer(snap.to_json(), snap.text or "(memory and user profile are empty)", notes=notes)


def listing(call: Call, *, target: str = "memory") -> Answer:
    from ..memory import bounded as memory

    info = memory.listing(call.vault, target, call.agent, limit=call.limits()[target])
    text = (
        f"{info['label']} [{info['usage']} chars]\n" + "\n".join(info["lines"])
        if info["lines"]
        else f"{info['label']} is empty"
    )
    return Answer(info, text)


def sweep(call: Call) -> Answer:
    from ..memory import archive

    days = float(call.settings.sweep_days)
    report = archive.sweep(call.vault, older_than_days=days, agent=call.agent or None, limits=call.limits())
    lines = [
        f"archived {a.id} from {a.agent + ' memory' if a.agent else 'USER.md'}: {a.text[:70]!r}"
        for a in report.archived
    ]
    lines.append(
        f"{len(report.archived)} plan-shaped entr{'y' if len(report.archived) == 1 else 'ies'} "
        f"archived (older than {report.older_than_days:g} days); {report.kept_plans} younger kept"
        + ("; bring one back with `nexus memory restore ID`" if report.archived else "")
    )
    return Answer(report.to_json(), "\n".join(lines))


def restore(call: Call, *, ids: list[str] | None = None) -> Answer:
    """Bring archived entries or retired facts back; no ids: list what can be restored."""
    from ..memory import archive, facts

    if not ids:
        items = [a.to_json() | {"kind": "memory-entry"} for a in archive.archived(call.vault)]
        items += [f.to_json() | {"kind": "fact", "id": f.name} for f in facts.retired(call.vault)]
        lines = [
            f"{i['id']}  {i['kind']}  {(i.get('text') or i.get('description') or '')[:70]!r}" for i in items
        ]
        return _listing(items, "\n".join(lines) or "nothing archived")
    from ..errors import NexusError

    out: list[Any] = []
    done: list[str] = []
    failed: list[str] = []
    for i in ids:  # each id on its own: one that cannot be restored never hides what was
        try:
            got = (
                archive.restore(call.vault, i, limits=call.limits())
                if archive.ID_RE.fullmatch(i)
                else facts.restore(call.vault, i)
            )
        except NexusError as err:
            if len(ids) == 1:
                raise
            failed.append(f"not restored: {i}: {err}")
            continue
        out.append(got.to_json())
        done.append(f"restored {i}")
    answer = _listing(out, "\n".join(done) or "nothing restored")
    answer.notes, answer.exit_code = tuple(failed), 1 if failed else 0
    return answer


def consolidate(
    call: Call,
    *,
    text: str | None = None,
    target: str = "memory",
    archive: list[str] | None = None,
    plan: str | None = None,
) -> Answer:
    from ..memory import archive as archive_mod

    limit = call.limits()[target]
    if plan is not None:
        if text is not None or archive:
            raise InputError("give either a plan or text (with archive), not both")
        res, moved = archive_mod.consolidate_plan(call.vault, target, call.agent, plan, limit=limit)
    elif text is not None:
        res, moved = archive_mod.consolidate(
            call.vault, target, call.agent, text, limit=limit, archive=tuple(archive or ())
        )
    else:
        raise InputError("give the new entries (text) or a plan")
    data = res.to_json() | {"archived": [m.to_json() for m in moved]}
    return Answer(data, _store_text(res) + "".join(f"\narchived {m.id}" for m in moved))


def fact_add(call: Call, *, description: str, type: str, body: str = "", name: str | None = None) -> Answer:
    from ..memory import facts

    fact = facts.add(call.vault, name=name, description=description, type=type, body=body or "")
    return Answer(fact.to_json(), f"added {fact.path}")


def fact_list(call: Call, *, retired: bool = False) -> Answer:
    from ..memory import facts

    items = facts.retired(call.vault) if retired else facts.all_facts(call.vault)
    text = "\n".join(
        f"{f.name:<32} {f.type:<9} {f.description}"
        if f.invalid is None
        else f"{f.name:<32} ⚠ invalid note, not used: {f.invalid}"
        for f in items
    )
    return _listing(items, text or "no facts yet")


def fact_show(call: Call, *, name: str) -> Answer:
    from ..memory import facts

    fact = facts.get(call.vault, name)
    return Answer(
        fact.to_json(), f"{fact.name} ({fact.type}) — {fact.description}\n{fact.path}\n\n{fact.body}".rstrip()
    )


def fact_retire(call: Call, *, name: str) -> Answer:
    from ..memory import facts

    fact = facts.retire(call.vault, name)
    text = f"retired {fact.name} to {fact.path}; `nexus memory restore {fact.name}` brings it back"
    return Answer(fact.to_json(), text)


def retain(call: Call, *, type: str, content: str, source: str | None = None) -> Answer:
    from ..memory import bank

    fact = bank.retain(call.vault, call.agent, type=type, content=content, source=source)
    return Answer(fact.to_json(), f"retained {fact.id} (pending review: `nexus review`)")


def recall(call: Call, *, query: str, n: int = 10) -> Answer:
    from ..memory import bank

    hits = bank.recall(call.vault, call.agent, query, limit=n, languages=call.settings.search_languages)
    text = "\n".join(f"{h.id}  {h.type:<10} {h.status:<8} {h.content[:90]}" for h in hits)
    return _listing(hits, text or "nothing recalled")


def review(
    call: Call, *, approve: str | None = None, reject: str | None = None, why: str | None = None
) -> Answer:
    """The facts waiting for review; with approve or reject (a person, ``--agent PERSON``), the gate."""
    from ..memory import bank

    if approve or reject:
        if not call.agent:
            raise InputError("--agent PERSON (a human identity) is required to approve or reject")
        if approve:
            fact = bank.approve(call.vault, approve, call.agent)
        else:
            fact = bank.reject(call.vault, reject or "", call.agent, why=why)
        text = f"{fact.id} {fact.status} by {fact.reviewed_by}" + (
            f"; promoted to memory/{fact.fact}.md" if fact.fact else ""
        )
        return Answer(fact.to_json(), text)
    items = bank.pending(call.vault)
    return _listing(
        items, "\n".join(f"{f.id}  {f.type:<10} {f.content[:90]}" for f in items) or "nothing pending"
    )
