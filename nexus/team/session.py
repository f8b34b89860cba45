"""A runtime session's edges and turns: what it was told, so each turn tells only what is new.

Agent runtimes (Claude Code, Codex, Hermes Agent, OpenClaw) call in at session start, before every
turn, before compacting and at the end. This module is what those calls do, whichever surface makes
them (``nexus-hook``, the Hermes provider):

- :func:`start`: the agent's brief (identity, what it owes, decisions in force, its checkpoint, its
  memory and memory index, what the others wrote), and a record of what it was told;
- :func:`turn`: only what is new since this session's last injection — new entries by the others,
  newly owed acknowledgements, new races, new decisions — and the empty string when nothing is;
- :func:`pre_compact`: saves the agent's checkpoint before the runtime drops context;
- :func:`wrote_this_turn`: whether the agent appended an entry since the turn began (the opt-in Stop
  check);
- :func:`end`: the decisions and corrections the agent logged during the session go to its own
  bank, pending a person's approval (nothing reaches memory without it).

The record lives in ``.nexus/sessions/KEY.json`` (KEY: a hash of the agent and the runtime's session
id), derived and disposable: a missing record means "tell everything unread". Reading new entries advances
the agent's read cursor as ``nexus brief`` does, so what it appends next says it saw them.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..storage import durable
from ..trust import NO_PINS

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..ledger.check import Checker
    from ..records import BankFact, Checkpoint, Located
    from ..settings import Settings
    from ..storage.vault import Vault
    from ..trust import Trust

# CPython's own SHA-256 (the digest hashlib gives): hashlib loads OpenSSL first, 5 to 30 ms of the quiet
# per-turn hook (a fresh process on a 2-core machine) for the one digest that names the record.
try:
    from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]  # Python 3.11
except ImportError:  # pragma: no cover
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]  # 3.12 on
    except ImportError:
        from hashlib import sha256  # type: ignore[assignment,unused-ignore]

RETAINED_TYPES = {"decision": "decision", "correction": "fact"}  # entry type -> bank fact type
RECENT_ENTRIES = 200  # how far back end() and wrote_this_turn() look in the log


def record_path(vault: Vault, agent: str, session_id: str) -> Path:
    """The record's file, named by a hash of agent and session (no name reaches the path unchecked)."""
    raw = f"{agent}\0{session_id}".encode("utf-8", "surrogatepass")
    return vault.state / "sessions" / f"{sha256(raw).hexdigest()[:24]}.json"


def _load(vault: Vault, agent: str, session_id: str) -> dict[str, Any] | None:
    try:
        data = json.loads(record_path(vault, agent, session_id).read_bytes())
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _save(vault: Vault, agent: str, session_id: str, data: dict[str, Any]) -> None:
    durable.replace(record_path(vault, agent, session_id), json.dumps(data).encode("utf-8"), durable=False)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def stamp(vault: Vault) -> list[Any]:
    """Sizes and times of every log segment and of the decisions folder: when they have not moved, nothing
    new can be owed, unread, racing or decided (a few stats, no parsing)."""
    out: list[Any] = []
    log_dir = os.fspath(vault.log_dir)
    try:
        names = sorted(os.listdir(log_dir))
    except FileNotFoundError:
        names = []
    for name in names:
        if name.endswith(".md"):
            st = os.stat(os.path.join(log_dir, name))
            out.append([name, st.st_size, st.st_mtime_ns])
    with contextlib.suppress(FileNotFoundError):
        out.append(["decisions", os.stat(os.path.join(vault.root, "decisions")).st_mtime_ns])
    return out


def known(vault: Vault, agent: str, session_id: str) -> bool:
    """Whether this session has a record: it started (or had a prompt) with nexus. Reads one file."""
    return _load(vault, agent, session_id) is not None


def quiet(vault: Vault, agent: str, session_id: str, *, prompt: str | None = None) -> bool:
    """True (and the turn recorded) when nothing changed since this session's last injection: the
    per-turn hook then says nothing without loading the brief's machinery."""
    record = _load(vault, agent, session_id)
    if record is None or record.get("stamp") != stamp(vault):
        return False
    record.update(turn_at=_now(), prompt=(prompt or "")[:300] or record.get("prompt"))
    _save(vault, agent, session_id, record)
    return True


def unchanged(vault: Vault, agent: str, session_id: str) -> bool:
    """True when nothing was appended since this session's last injection (its start or its last
    prompt): nothing new for the session's end to retain. Reads only; a few stats."""
    record = _load(vault, agent, session_id)
    return record is not None and record.get("stamp") == stamp(vault)


def _newest_id(vault: Vault, check: Checker) -> str | None:
    """The id of the log's newest entry (where this session's own entries begin), read with the
    operation's checker: its signature is taken from the machine's memo when checked before."""
    from ..ledger import log

    last = log.tail(vault, 1, checker=check)
    return last[0].entry.id if last else None


def _settings(settings: Settings | None) -> Settings:
    """The settings given, else the defaults (imported only then: the quiet per-turn hook never needs
    them)."""
    from ..settings import DEFAULTS

    return DEFAULTS if settings is None else settings


def _decision_ids(vault: Vault) -> list[str]:
    from ..project import decisions

    return [d.id for d in decisions.active(vault)]


def start(
    vault: Vault,
    agent: str,
    session_id: str,
    settings: Settings | None = None,
    *,
    source: str = "startup",
    surface: str = "cli",
    trust: Trust = NO_PINS,
) -> str:
    """The session-start context (the whole brief; after ``resume`` or ``compact`` the checkpoint is
    part of it) and a fresh record of what the session was told. ``trust``: the machine's pins."""
    from . import brief, coordination

    moment = stamp(vault)
    built = brief.build(vault, agent, _settings(settings), surface=surface, trust=trust)
    text = brief.render(built)
    if source in ("resume", "compact"):
        done = {"resume": "resumed", "compact": "compacted"}[source]
        text = text.replace("\n", f" (session {done}: continue from your checkpoint below)\n", 1)
    earlier = _load(vault, agent, session_id) or {}  # resume, clear, compact: the same session goes on
    _save(
        vault,
        agent,
        session_id,
        {
            "owed": list(built.owed),
            "races": [list(r) for r in built.races],
            "decisions": _decision_ids(vault),
            "started_at": earlier["started_at"]
            if "started_at" in earlier
            else _newest_id(vault, coordination.entry_checker(vault, trust)),
            "turn_at": _now(),
            "source": source,
            "prompt": earlier.get("prompt"),
            "stamp": moment,
        },
    )
    return text


def turn(
    vault: Vault,
    agent: str,
    session_id: str,
    settings: Settings | None = None,
    *,
    prompt: str | None = None,
    surface: str = "cli",
    trust: Trust = NO_PINS,
) -> str:
    """What is new for ``agent`` since this session's last injection, as Markdown; "" when nothing is."""
    from ..ledger import log
    from ..storage.text import check_name
    from . import brief, coordination

    check_name(agent)
    moment = stamp(vault)
    record = _load(vault, agent, session_id) or {"owed": [], "races": [], "decisions": [], "started_at": None}
    check = coordination.entry_checker(vault, trust)
    items, cursor = log.scan_unread(vault, agent, checker=check)
    settings = _settings(settings)
    max_chars = settings.brief_max_chars
    data = coordination.view(vault, agent, settings.ack_types, settings.race_window_seconds)
    told_owed, told_races = set(record.get("owed", [])), {tuple(r) for r in record.get("races", [])}
    new_owed = [ref for ref in data.owed if ref.id not in told_owed]
    new_races = [(r.a, r.b) for r in data.races if (r.a.id, r.b.id) not in told_races]
    told_decisions = set(record.get("decisions", []))
    decisions_now = _decision_ids(vault)
    new_decisions = [d for d in decisions_now if d not in told_decisions]
    record.update(turn_at=_now(), prompt=(prompt or "")[:300] or record.get("prompt"), stamp=moment)
    if not (items or new_owed or new_races or new_decisions):
        _save(vault, agent, session_id, record)
        return ""
    parts: list[str] = []
    share = max_chars * 2 // 5  # races and owed entries: at most this much each; unread gets the rest
    if new_races:
        parts.append(_races_part(vault, agent, new_races, check, surface, share))
    if new_owed:
        parts.append(_owed_part(vault, agent, new_owed, check, surface, share))
    if new_decisions:
        from ..project import decisions

        lines = [
            f"- {d.id} {d.title} — {decisions.one_line(d)} ({d.link})"
            for d in decisions.active(vault)
            if d.id in set(new_decisions)
        ]
        parts.append(f"## New decisions in force: {len(lines)}\n" + "\n".join(lines))
    header = f"# nexus: new since your last turn ({_now()})\n"
    used = len(header) + sum(len(p) + 2 for p in parts)
    owed_ids = frozenset(ref.id for ref in new_owed)
    section, omitted = brief.unread_section(
        agent, items, max(200, max_chars - used - 60), surface, owed_ids, vault
    )
    if section is not None:
        parts.append(f"## {section.title}\n{section.text}")
    if cursor is not None and not omitted:
        log.advance_cursor(vault, agent, cursor)
    record["owed"] = sorted(told_owed | {ref.id for ref in data.owed})
    record["races"] = sorted({*told_races, *((r.a.id, r.b.id) for r in data.races)})
    record["decisions"] = decisions_now
    _save(vault, agent, session_id, record)
    text = header + "\n\n".join(parts) + "\n"
    return text if len(text) <= max_chars else text[: max_chars - 40] + "\n… (cut at the budget)\n"


def _bounded(refs: list[Any], line: Callable[[Any], str], budget: int, more: str) -> str:
    """Lines for ``refs`` in order while they fit ``budget``; the rest are counted, never read back
    (an agent that comes back to hundreds of new races reads a few of them, at the cost of a few),
    and named in a last line pointing to ``more`` (the command that lists them all)."""
    lines: list[str] = []
    used = 0
    for i, ref in enumerate(refs):
        text = line(ref)
        if used + len(text) + 1 > budget and lines:
            lines.append(f"- … {len(refs) - i} more: {more}")
            break
        lines.append(text)
        used += len(text) + 1
    return "\n".join(lines)


def _races_part(
    vault: Vault, agent: str, pairs: list[tuple[Any, Any]], check: Checker, surface: str, budget: int
) -> str:
    from . import coordination
    from .hints import say

    def line(pair: tuple[Any, Any]) -> str:
        a = coordination.materialize(vault, pair[0], check)
        b = coordination.materialize(vault, pair[1], check)
        return (
            f'- RACE: {a.entry.agent}\'s [{a.entry.id}] "{a.entry.summary}" and '
            f'{b.entry.agent}\'s [{b.entry.id}] "{b.entry.summary}": reconcile with '
            + say(surface, "reconcile", agent=agent, channel=b.entry.channel, a=a.entry.id, b=b.entry.id)
        )

    return f"## New races: {len(pairs)}\n" + _bounded(pairs, line, budget, say(surface, "owed", agent=agent))


def _owed_part(vault: Vault, agent: str, refs: list[Any], check: Checker, surface: str, budget: int) -> str:
    from . import brief, coordination
    from .hints import say

    def line(ref: Any) -> str:
        return brief.entry_line(coordination.materialize(vault, ref, check), body=True, vault=vault)

    return (
        f"## Newly waiting for your acknowledgement: {len(refs)} (ack with "
        f"{say(surface, 'ack', agent=agent)})\n"
        + _bounded(refs, line, budget, say(surface, "owed", agent=agent))
    )


def pre_compact(
    vault: Vault,
    agent: str,
    session_id: str,
    *,
    trigger: str = "auto",
    transcript: str | None = None,
    keys_home: Path | None = None,
) -> Checkpoint:
    """Save the agent's checkpoint before the runtime compacts its context: the task and next step it
    last saved (or the session's last prompt), with a note of the compaction."""
    from ..project import checkpoints

    record = _load(vault, agent, session_id) or {}
    old = checkpoints.load(vault, agent)
    prompt = str(record.get("prompt") or "").split("\n", 1)[0].strip()
    task = old.task if old else (prompt[:200] or "the session's work")
    note = f"Context compacted ({trigger}) at {_now()}"
    if transcript:
        note += f"; transcript: {transcript}"
    notes = "\n".join(x for x in ((old.notes.strip() if old else ""), note) if x)
    cp, _logged = checkpoints.save(
        vault,
        agent,
        task=task,
        step=(old.step if old else f"working on: {prompt[:200] or task}"),
        next=(old.next if old else "re-read the brief and continue the task"),
        status=old.status if old else "in-progress",
        files=old.files if old else (),
        notes=notes[-4000:],
        keys_home=keys_home,
    )
    return cp


def _own_recent(vault: Vault, trust: Trust, agent: str, after: str | None) -> list[Located]:
    from ..ledger import log
    from . import coordination

    return [
        x
        for x in log.tail(vault, RECENT_ENTRIES, checker=coordination.entry_checker(vault, trust))
        if x.entry.agent == agent and (after is None or x.entry.id > after)
    ]


def wrote_this_turn(vault: Vault, agent: str, session_id: str, *, trust: Trust = NO_PINS) -> bool:
    """Whether ``agent`` appended an entry since the session's current turn began."""
    record = _load(vault, agent, session_id) or {}
    since = str(record.get("turn_at") or "")
    return any(x.entry.ts >= since for x in _own_recent(vault, trust, agent, None))


def end(vault: Vault, agent: str, session_id: str, *, trust: Trust = NO_PINS) -> list[BankFact]:
    """Retain the decisions and corrections ``agent`` logged during the session in its own bank,
    pending a person's approval; each entry at most once (its id is the fact's source)."""
    from ..errors import NexusError
    from ..memory import bank

    record = _load(vault, agent, session_id) or {}
    already = {f.source for f in bank.facts_of(vault, agent)}
    kept: list[BankFact] = []
    for located in _own_recent(vault, trust, agent, record.get("started_at")):
        e = located.entry
        if e.type not in RETAINED_TYPES or e.id in already:
            continue
        content = e.summary + (f"\n\n{e.body.strip()[:1500]}" if e.body and e.body.strip() else "")
        try:
            kept.append(bank.retain(vault, agent, type=RETAINED_TYPES[e.type], content=content, source=e.id))
        except NexusError:
            continue  # refused by the safety scan (a secret, an injection): it stays out of the bank
    return kept
