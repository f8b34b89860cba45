"""Operations on the shared records: decisions (never edited, only superseded) and the versioned
project state (changed only at the version it was read at)."""

from __future__ import annotations

from typing import Any

from .spec import Answer, Call


def _listing(items: list[Any], text: str) -> Answer:
    data = [i.to_json() if hasattr(i, "to_json") else i for i in items]
    return Answer(data, text, mcp={"items": data})


def decide(
    call: Call,
    *,
    title: str,
    decision: str,
    rationale: str,
    alternatives: str | None = None,
    supersedes: str | None = None,
    refs: list[str] | None = None,
) -> Answer:
    from ..project import decisions

    d = decisions.decide(
        call.vault,
        call.signer(),
        title=title,
        decision=decision,
        rationale=rationale,
        alternatives=alternatives,
        supersedes=supersedes,
        refs=tuple(refs or ()),
        trust=call.trust,
    )
    extra = f" (supersedes {d.supersedes})" if d.supersedes else ""
    return Answer(d.to_json(), f"{d.id} recorded: {d.path}{extra}")


def listing(call: Call, *, all: bool = False) -> Answer:
    from ..project import decisions

    items = decisions.all_decisions(call.vault)
    if not all:
        items = [d for d in items if d.status == "active"]
    lines = [
        f"{d.id}  {d.status:<10} {d.title} — {decisions.one_line(d, 100)}  ({d.author}, {d.date[:10]})"
        for d in items
    ]
    return _listing(items, "\n".join(lines) or "no decisions yet")


def show(call: Call, *, id: str) -> Answer:
    from ..memory import scan
    from ..project import decisions

    info = decisions.show(call.vault, id)
    text = decisions.show_text(info)
    found = scan.flags(text, call.vault.root)
    if found:
        info = {**info, "flagged": scan.data_notice(found)}
        text = f"{scan.data_notice(found)}\n{text}"
    return Answer(info, text)


def state_show(call: Call) -> Answer:
    from ..project import project_state

    vault = call.vault
    version, content, unrecorded = project_state.show(vault)
    notes = (
        [
            f"state/project.md holds a hand edit not recorded yet: the next `state set` (or `nexus watch`) "
            f"records it as version {version}"
        ]
        if unrecorded
        else []
    )
    conflicts = sorted(f"conflicts/{p.name}" for p in (vault.root / "conflicts").glob("state-*.md"))
    text_notes = [  # versions two machines recorded at once (sync)
        f"state conflict: another machine's version is in {note}; read it, set the state that should "
        "stand, then delete the note"
        for note in conflicts
    ]
    data = {
        "version": version,
        "content": content,
        "hand_edit": unrecorded,
        "conflicts": conflicts,
    }
    from ..memory import scan

    found = scan.flags(content, vault.root)
    if found:
        data["flagged"] = scan.data_notice(found)
    shown = f"{scan.data_notice(found)}\n{content}" if found else content
    text = f"version {version}\n\n{shown}" if version else "version 0 (no project state yet)"
    return Answer(
        data,
        text,
        notes=tuple(notes),
        text_notes=tuple(text_notes),
        mcp={"version": version, "content": content, **({"flagged": data["flagged"]} if found else {})},
    )


def _version_json(v: Any) -> dict[str, Any]:
    return {k: val for k, val in v.to_json().items() if k != "content"}


def state_set(call: Call, *, content: str, expect: int, summary: str | None = None) -> Answer:
    from ..project import project_state

    v = project_state.set_state(
        call.vault, call.signer(), expect=expect, content=content, summary=summary, keys_home=call.keys_home
    )
    return Answer(_version_json(v), f"project state is now version {v.version}")


def state_history(call: Call) -> Answer:
    from ..project import project_state

    items = project_state.versions(call.vault)
    lines = [f"v{v.version:<4} {v.ts}  {v.author:<12} {v.kind:<6} {v.summary}" for v in items]
    return _listing([_version_json(v) for v in items], "\n".join(lines) or "no versions yet")


def state_diff(call: Call, *, old: int, new: int | None = None) -> Answer:
    from ..project import project_state

    a = project_state.load_version(call.vault, old)
    b = project_state.load_version(
        call.vault, new if new is not None else project_state.current_version(call.vault)
    )
    text = project_state.diff(a.content, b.content, f"v{a.version}", f"v{b.version}")
    return Answer({"old": a.version, "new": b.version, "diff": text}, text or "no difference")


def state_restore(call: Call, *, version: int, expect: int) -> Answer:
    from ..project import project_state

    v = project_state.restore(
        call.vault, call.signer(), version=version, expect=expect, keys_home=call.keys_home
    )
    return Answer(_version_json(v), f"restored version {version} as version {v.version}")
