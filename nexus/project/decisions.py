"""The decision register: each decision a signed note that is never edited, only superseded.

* ``decisions/D-0007-slug.md`` – one note per decision (properties a person reads + Decision /
  Rationale / Alternatives / Sources sections + the machine fields in a ``%% nexus:meta %%`` comment,
  see meta.py), signed by its author over its canonical fields and body.
* ``Decisions.md`` – the register a person reads: every decision, active first, with links.
* a ``decision`` entry in the live log for each one (agents must acknowledge it).

Ids are allocated under an exclusive lock and each note is created with ``O_EXCL``, so concurrent
agents never share an id. Superseding flips the old note's ``status`` to ``superseded`` and names its
successor: the only change a decision note ever gets, signed by the superseding author (and logged by
the new decision's entry). ``decision_check.check_notes`` (called by ``verify``) catches any
other edit.

Hot paths (the brief) read ``.nexus/cache/decisions.json``, keyed by the folder listing's names,
mtimes and sizes, so a brief never parses every note.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from ..errors import InputError, NotFoundError
from ..ledger.logfiles import missing_entry
from ..records import Decision
from ..storage import durable, meta, properties
from ..storage.locks import exclusive
from ..storage.text import check_body, check_line
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust

SIGN_CONTEXT = b"nexus/decision/v1\n"
STATUS_CONTEXT = b"nexus/decision-status/v1\n"
REGISTER = "Decisions.md"
ID_RE = re.compile(r"D-(\d{4,})")
NOTE_RE = re.compile(r"(D-\d{4,})-[a-z0-9-]*\.md")
SUPERSEDED_MARK = "%% nexus:superseded %%"
CACHE = "decisions.json"
_SECTIONS = ("Decision", "Rationale", "Alternatives", "Sources")


def folder(vault: Vault) -> Path:
    return vault.inside(vault.root / "decisions")


def slug(title: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return words[:40].rstrip("-") or "decision"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ------------------------------------------------------------------ canonical forms and signatures


def _canonical(data: dict[str, Any]) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def signed_body(body: str) -> str:
    """The part of the body the author's signature covers: everything before the superseded notice."""
    cut = body.find(SUPERSEDED_MARK)
    return (body if cut < 0 else body[:cut]).rstrip()


_LINK_RE = re.compile(r"\[\[([^\]\[|#]+)\|(D-\d{4,})\]\]")
LINKED = ("supersedes", "superseded_by")  # decision ids a note shows as links to the named note


def id_of(value: Any) -> Any:
    """The decision id a ``supersedes``/``superseded_by`` value names: ``D-0001`` as older notes
    write it, or the label of a link ``[[decisions/D-0001-slug|D-0001]]``; anything else as it is
    (it then matches no signature)."""
    if isinstance(value, str) and (m := _LINK_RE.fullmatch(value.strip())) is not None:
        return m.group(2)
    return value


def link_target(value: Any) -> str | None:
    """The note a ``supersedes``/``superseded_by`` link points at (None for a plain id)."""
    if isinstance(value, str) and (m := _LINK_RE.fullmatch(value.strip())) is not None:
        return m.group(1).strip()
    return None


def decision_bytes(props: dict[str, Any], body: str) -> bytes:
    """What the author signs: id, title, author, date, supersedes, refs and the body's hash (the
    same logical content in both note forms: a ``supersedes`` link counts as the id it names)."""
    data = {k: props.get(k) for k in ("id", "title", "author", "date", "supersedes", "refs")}
    data["supersedes"] = id_of(data["supersedes"])
    if props.get("renumbered_from"):  # renumbered at a merge (gitsync): signed with its first number
        data["id"] = props["renumbered_from"]
    data["v"] = 1
    data["body_sha256"] = hashlib.sha256(signed_body(body).encode("utf-8")).hexdigest()
    return SIGN_CONTEXT + _canonical(data)


def status_bytes(props: dict[str, Any]) -> bytes:
    """What the superseding author signs when flipping a decision to ``superseded``."""
    data = {k: props.get(k) for k in ("id", "status", "superseded_by", "superseded_at")}
    data["superseded_by"] = id_of(data["superseded_by"])
    data["v"] = 1
    return STATUS_CONTEXT + _canonical(data)


# ------------------------------------------------------------------ rendering and reading


def _body(
    did: str, title: str, decision: str, rationale: str, alternatives: str | None, sources: list[str]
) -> str:
    lines = [
        f"# {did} · {title}",
        "",
        "## Decision",
        "",
        decision.strip(),
        "",
        "## Rationale",
        "",
        rationale.strip(),
        "",
        "## Alternatives",
        "",
        (alternatives or NONE_RECORDED).strip(),
        "",
        "## Sources",
        "",
    ]
    lines += sources or ["_None._"]
    return "\n".join(lines) + "\n"


def superseded_tail(by_note: str, by_id: str, at: str, who: str) -> str:
    return (
        f"\n\n{SUPERSEDED_MARK}\n> [!warning] Superseded\n> Replaced by [[{by_note}|{by_id}]] on "
        f"{at.replace('T', ' ')} ({who}). Kept for the record; do not follow it.\n"
    )


NONE_RECORDED = "_None recorded._"


def _section(body: str, name: str) -> str:
    m = re.search(rf"^## {name}\n(.*?)(?=^## |\Z)", signed_body(body) + "\n", re.S | re.M)
    return m.group(1).strip() if m else ""


def _record(vault: Vault, path: Path, props: dict[str, Any], body: str) -> Decision:
    return Decision(
        id=str(props["id"]),
        title=str(props["title"]),
        status=str(props.get("status", "active")),
        author=str(props["author"]),
        date=str(props["date"]),
        decision=_section(body, "Decision"),
        rationale=_section(body, "Rationale"),
        alternatives=_section(body, "Alternatives"),
        supersedes=_opt(id_of(props.get("supersedes"))),
        superseded_by=_opt(id_of(props.get("superseded_by"))),
        refs=tuple(str(r) for r in props.get("refs") or ()),
        entry=_opt(props.get("entry")),
        path=vault.rel(path),
    )


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def read_note(vault: Vault, path: Path) -> tuple[dict[str, Any], str]:
    """(properties, body) of a decision note in either form (machine fields in the ``nexus:meta``
    comment, or in the properties as older notes have them); the body without the comment."""
    props, body = properties.parse(path.read_text(encoding="utf-8"), vault.rel(path))
    return meta.merged(props, body, meta.DECISION)


_read = read_note

_SHOWN_FIRST = ("id", "title", "status", "author", "date", "supersedes", "superseded_by", "superseded_at")


def note_text(vault: Vault, props: dict[str, Any], body: str) -> str:
    """A decision note: what a person reads as properties (a ``supersedes``/``superseded_by`` id as a
    link to its note), the machine fields in the ``nexus:meta`` comment at its end."""
    shown, hidden = meta.apart(props, meta.DECISION)
    for key in LINKED:
        value = shown.get(key)
        if value is None:
            shown.pop(key, None)
        elif isinstance(value, str) and ID_RE.fullmatch(value) and (note := note_of(vault, value)):
            shown[key] = f"[[decisions/{note.stem}|{value}]]"
    ordered = {k: shown[k] for k in _SHOWN_FIRST if k in shown}
    ordered.update((k, v) for k, v in shown.items() if k not in ordered)
    return properties.render(ordered, meta.attach(body, hidden))


_PROP_ID_RE = re.compile(r'^id:\s*["\']?(D-\d{4,})["\']?\s*$', re.M)


def _renamed_id(path: Path) -> str | None:
    """The id of a decision note renamed in Obsidian (its name no longer starts with it), from its
    ``id`` property; None for any other note."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(2048)
    except OSError:
        return None
    if not head.startswith("---"):
        return None
    m = _PROP_ID_RE.search(head.split("\n---", 1)[0])
    return m.group(1) if m else None


def note_ids(vault: Vault) -> dict[Path, str]:
    """Every decision note and its id: ``D-NNNN-slug.md`` by name, and notes a person renamed in
    Obsidian by their ``id`` property (a rename never loses a decision)."""
    try:
        names = os.listdir(folder(vault))
    except FileNotFoundError:
        return {}
    out: dict[Path, str] = {}
    for n in sorted(names):
        if (m := NOTE_RE.fullmatch(n)) is not None:
            out[folder(vault) / n] = m.group(1)
        elif n.endswith(".md") and not n.startswith(".") and (did := _renamed_id(folder(vault) / n)):
            out[folder(vault) / n] = did
    return out


def note_files(vault: Vault) -> list[Path]:
    return list(note_ids(vault))


def note_of(vault: Vault, did: str) -> Path | None:
    return next((p for p, i in note_ids(vault).items() if i == did), None)


def renamed_notes(vault: Vault) -> dict[str, str]:
    """Vault path -> the path it had when written (both without ``.md``), for each decision note
    whose name no longer follows from its id and title."""
    out: dict[str, str] = {}
    for path, did in note_ids(vault).items():
        try:
            props, _ = _read(vault, path)
        except (InputError, OSError):
            continue
        canonical = f"{did}-{slug(str(props.get('title', '')))}"
        if path.stem != canonical:
            out[f"decisions/{path.stem}"] = f"decisions/{canonical}"
    return out


def _stamp(vault: Vault) -> list[list[Any]]:
    out: list[list[Any]] = []
    try:
        with os.scandir(folder(vault)) as it:
            for d in it:
                if d.name.endswith(".md"):
                    st = d.stat()
                    out.append([d.name, st.st_mtime_ns, st.st_size])
    except FileNotFoundError:
        pass
    return sorted(out)


def all_decisions(vault: Vault) -> list[Decision]:
    """Every decision, oldest first, from the derived cache when the folder has not changed."""
    stamp = _stamp(vault)
    cache = vault.state / "cache" / CACHE
    try:
        cached = json.loads(cache.read_bytes())
        if cached.get("stamp") == stamp:
            return [Decision.from_json(d) for d in cached["decisions"]]
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        pass
    out = []
    for path in note_files(vault):
        try:
            props, body = _read(vault, path)
            out.append(_record(vault, path, props, body))
        except (InputError, KeyError, TypeError, ValueError, OSError):
            continue  # verify names a damaged note; the register skips it
    durable.replace(
        cache,
        json.dumps({"stamp": stamp, "decisions": [d.to_json() for d in out]}, ensure_ascii=False).encode(),
        durable=False,
    )
    return out


def active(vault: Vault) -> list[Decision]:
    return [d for d in all_decisions(vault) if d.status == "active"]


def find(vault: Vault, did: str) -> Decision:
    for d in all_decisions(vault):
        if d.id == did:
            return d
    raise NotFoundError(f"no decision {did} (see `nexus decisions --all`)")


def chain(vault: Vault, did: str) -> tuple[Decision, list[Decision], list[Decision]]:
    """A decision, the ones it replaced (newest first: what it superseded, what that one superseded…)
    and the ones that replaced it (in order, to the one in force)."""
    by_id = {d.id: d for d in all_decisions(vault)}
    d = by_id.get(did.strip().upper())
    if d is None:
        raise NotFoundError(f"no decision {did} (see `nexus decisions --all`)")
    back: list[Decision] = []
    cur = d
    while cur.supersedes and cur.supersedes in by_id and by_id[cur.supersedes] not in back:
        cur = by_id[cur.supersedes]
        back.append(cur)
    forward: list[Decision] = []
    cur = d
    while cur.superseded_by and cur.superseded_by in by_id and by_id[cur.superseded_by] not in forward:
        cur = by_id[cur.superseded_by]
        forward.append(cur)
    return d, back, forward


def show(vault: Vault, did: str) -> dict[str, Any]:
    """Everything about one decision (``nexus decisions show``, the ``decisions_show`` tool): its
    fields, rationale and alternatives, who decided and when, its sources, and the supersession chain
    both ways (``in_force``: the decision that holds now)."""
    d, back, forward = chain(vault, did)
    return {
        **d.to_json(),
        "link": d.link,
        "supersedes_chain": [x.id for x in back],
        "superseded_by_chain": [x.id for x in forward],
        "in_force": (
            forward[-1].id
            if forward and forward[-1].status == "active"
            else d.id
            if d.status == "active"
            else None
        ),
    }


def show_text(info: dict[str, Any]) -> str:
    """``show`` for a person."""
    status = (
        info["status"]
        if info["status"] == "active"
        else (f"SUPERSEDED by {info['superseded_by']}; in force now: {info['in_force'] or 'none'}")
    )
    lines = [
        f"{info['id']} · {info['title']}  ({status})",
        f"decided by {info['author']} at {info['date'].replace('T', ' ')} · {info['path']}"
        + (f" · entry {info['entry']}" if info["entry"] else ""),
        "",
    ]
    for name in ("decision", "rationale", "alternatives"):
        text = info[name] or "—"
        lines += [name.capitalize(), *("  " + ln for ln in text.splitlines()), ""]
    older = " ← ".join([info["id"], *info["supersedes_chain"]])
    newer = " → ".join([info["id"], *info["superseded_by_chain"]])
    lines.append(f"Supersedes: {older if info['supersedes_chain'] else 'nothing'}")
    if info["superseded_by_chain"]:
        lines.append(f"Superseded by: {newer}")
    else:
        lines.append("Superseded by: " + ("nothing (in force)" if info["status"] == "active" else "unknown"))
    if info["refs"]:
        lines.append("Sources: " + ", ".join(info["refs"]))
    return "\n".join(lines)


def one_line(d: Decision, limit: int = 160) -> str:
    first = " ".join(d.decision.split())
    return first if len(first) <= limit else first[: limit - 1] + "…"


def brief_lines(vault: Vault) -> list[str]:
    """What every brief shows: each active decision, title and one line (cached; no YAML)."""
    return [f"- {d.id} {d.title} — {one_line(d)} ({d.link})" for d in active(vault)]


# ------------------------------------------------------------------ deciding


def _checked_input(
    title: str,
    texts: dict[str, str | None],
    supersedes: str | None,
    refs: tuple[str, ...],
) -> tuple[str, dict[str, str | None]]:
    """The title and the decision's texts as stored (decision and rationale required), or InputError."""
    from ..storage import entries

    title = check_line(title, "title")
    clean_texts = {}
    for label, value in texts.items():
        clean = check_body(value, 16 * 1024)
        if clean is None and label != "alternatives":
            raise InputError(f"{label} is empty")
        if clean is not None and ("%% nexus:" in clean or re.search(r"^## ", clean, re.M)):
            raise InputError(f"{label} must not contain '%% nexus:' or a line starting with '## '")
        clean_texts[label] = clean
    if supersedes is not None and not ID_RE.fullmatch(supersedes):
        raise InputError(f"--supersedes {supersedes!r} is not a decision id like D-0007")
    for ref in refs:
        if not entries.ID_RE.fullmatch(ref):
            raise InputError(f"--ref {ref!r} is not an entry id (26 characters, as printed by append)")
    return title, clean_texts


def decide(
    vault: Vault,
    signer: Any,
    *,
    title: str,
    decision: str,
    rationale: str,
    alternatives: str | None = None,
    supersedes: str | None = None,
    refs: tuple[str, ...] = (),
    trust: Trust = NO_PINS,
) -> Decision:
    """Record a decision (note + signed log entry); flip the one it supersedes. Returns the new one.
    ``trust``: the machine's pins (``log.append``)."""
    from ..ledger import pairs

    given = {"decision": decision, "rationale": rationale, "alternatives": alternatives}
    title, texts = _checked_input(title, given, supersedes, refs)
    missing = missing_entry(vault, refs)  # named as given (--ref), not as the entry's acks it becomes
    if missing is not None:
        raise InputError(f"--ref {missing}: no entry with this id in the log")
    folder(vault).mkdir(exist_ok=True)
    with exclusive(vault.lock("decisions")):
        old_path: Path | None = None
        old_props: dict[str, Any] = {}
        old_body = ""
        repeat = _repeat(vault, signer.name, title, texts, supersedes)
        if supersedes is not None:
            old_path = note_of(vault, supersedes)
            if old_path is None:
                raise NotFoundError(f"no decision {supersedes} to supersede")
            old_props, old_body = _read(vault, old_path)
            if repeat is not None:  # a retry: finish what the failed attempt left (the flip, the register)
                if old_props.get("status") == "active":
                    _flip(
                        vault,
                        signer,
                        old_path,
                        old_props,
                        old_body,
                        f"decisions/{repeat[0].stem}",
                        repeat[1]["id"],
                    )
                write_register(vault)
                return _record(vault, *repeat)
            if old_props.get("status") != "active":
                raise InputError(
                    f"{supersedes} is already {old_props.get('status')}; supersede "
                    f"{id_of(old_props.get('superseded_by')) or 'its successor'} instead"
                )
        if repeat is not None:
            write_register(vault)
            return _record(vault, *repeat)
        numbers = [int(i[2:]) for i in note_ids(vault).values()]
        did = f"D-{(max(numbers) + 1 if numbers else 1):04d}"
        path = folder(vault) / f"{did}-{slug(title)}.md"
        note = f"decisions/{path.stem}"
        sources = [f"- {_entry_link(vault, r)}" for r in refs]
        if old_path is not None:
            sources.append(f"- Supersedes [[decisions/{old_path.stem}|{supersedes}]]")
        body = _body(
            did, title, texts["decision"] or "", texts["rationale"] or "", texts["alternatives"], sources
        )
        props: dict[str, Any] = {
            "id": did,
            "title": title,
            "status": "active",
            "author": signer.name,
            "date": _now(),
            "supersedes": supersedes,
            "superseded_by": None,
            "refs": list(refs),
            "entry": None,
        }
        props["key"] = signer.key_id
        props["sig"] = signer.sign(decision_bytes(props, body))
        props["tags"] = ["nexus/decision"]
        props["aliases"] = [did]
        summary = f"{did}: {title}" + (f" (supersedes {supersedes})" if supersedes else "")
        entry_body = f"{one_line(_record(vault, path, props, body), 400)}\n\nDecision note: [[{note}|{did}]]"
        if supersedes:
            entry_body += f"\nSupersedes [[decisions/{old_path.stem}|{supersedes}]]" if old_path else ""
        # the entry first (ledger/pairs.py): a failed append writes nothing, and the retry of a decision
        # whose note failed after its entry landed (the same number, the same text) reuses that entry
        located = pairs.append_once(
            vault,
            signer,
            channel="decisions",
            type="decision",
            summary=summary[:200],
            body=entry_body,
            ack=tuple(refs),
            trust=trust,
        )
        props["entry"] = located.entry.id
        durable.create_exclusive(path, note_text(vault, props, body).encode("utf-8"))
        if old_path is not None:
            _flip(vault, signer, old_path, old_props, old_body, note, did)
        write_register(vault)
    return _record(vault, path, props, body)


def _flip(
    vault: Vault, signer: Any, old_path: Path, old_props: dict[str, Any], old_body: str, note: str, did: str
) -> None:
    """Mark the superseded decision's note (caller holds the decisions lock)."""
    at = _now()
    old_props.update(status="superseded", superseded_by=f"[[{note}|{did}]]", superseded_at=at)
    old_props["superseded_key"] = signer.key_id
    old_props["superseded_sig"] = signer.sign(status_bytes(old_props))
    old_body = signed_body(old_body) + superseded_tail(note, did, at, signer.name)
    durable.replace(old_path, note_text(vault, old_props, old_body).encode("utf-8"))


def _repeat(
    vault: Vault, author: str, title: str, texts: dict[str, str | None], supersedes: str | None
) -> tuple[Path, dict[str, Any], str] | None:
    """The note of this very decision when a failed attempt already recorded it (note and entry: the
    entry is appended first), so its retry finishes it instead of recording it twice; else None. Only
    the newest decision counts: deciding the same again after another decision is a new decision."""
    newest: tuple[int, Path] | None = None
    for path, did in note_ids(vault).items():
        if did[2:].isdigit() and (newest is None or int(did[2:]) > newest[0]):
            newest = (int(did[2:]), path)
    if newest is None or not newest[1].name.endswith(f"-{slug(title)}.md"):
        return None
    try:
        props, body = _read(vault, newest[1])
    except (InputError, OSError, ValueError):
        return None
    same = (
        props.get("author") == author
        and props.get("title") == title
        and props.get("entry")
        and id_of(props.get("supersedes")) == supersedes
        and all(
            _section(body, name.capitalize()) == ((texts[name] or "").strip() or NONE_RECORDED)
            for name in texts
        )
    )
    return (newest[1], props, body) if same else None


def _entry_link(vault: Vault, entry_id: str) -> str:
    from ..storage import entries

    name = entries.segment_name(entries.utc_ts(entries.decode_id_ms(entry_id)))
    return f"[[log/{name}#^{entry_id}]]"


def write_register(vault: Vault) -> Path:
    """Rewrite ``Decisions.md`` from the decision notes (callers hold the decisions lock)."""
    decisions = all_decisions(vault)
    act = [d for d in decisions if d.status == "active"]
    old = [d for d in decisions if d.status != "active"]
    lines = [
        "# Decisions",
        "",
        "> [!info] How decisions work",
        "> Agents follow every **active** decision. A decision is never edited, only superseded by a",
        "> new one (`nexus decide --supersedes ID`); `nexus decisions show ID` gives its rationale.",
        "",
        f"## Active ({len(act)})",
        "",
    ]
    lines += [
        f"- [[{d.path[:-3]}|{d.id}]] **{d.title}** — {one_line(d)} ({d.author}, {d.date[:10]})"
        for d in reversed(act)
    ] or ["_None yet._"]
    lines += ["", f"## Superseded ({len(old)})", ""]
    by_id = {d.id: d for d in decisions}
    for d in reversed(old):
        succ = by_id.get(d.superseded_by or "")
        to = f"[[{succ.path[:-3]}|{succ.id}]]" if succ else (d.superseded_by or "?")
        lines.append(f"- [[{d.path[:-3]}|{d.id}]] ~~{d.title}~~ → superseded by {to}")
    if not old:
        lines.append("_None._")
    path = vault.root / REGISTER
    text = properties.render(
        {"tags": ["nexus/register"], "aliases": ["Decision register"]}, "\n".join(lines) + "\n"
    )
    durable.replace(path, text.encode("utf-8"))
    return path
