"""``nexus brief``: what an agent loads at session start or before a turn, bounded in size.

Sections, in order: **identity** (the body of the agent's identity note, from the roster's JSON cache),
**owed** (entries waiting for its acknowledgement, races it must reconcile), **decisions** (slot for
the decisions helper), **project state** (the current ``state/project.md`` and its version, which
``state set --expect`` needs), **checkpoint** (slot), **memory** (slot), **unread** (entries by others
since its read cursor). An entry that acknowledges others says what it acknowledges (a correction:
what it corrects), by their summaries.

The whole rendering is at most ``max_chars`` characters (default 10,000: what agent runtimes take from
a hook). Over budget, room goes first to what the agent owes, then to its identity and the slots, then
to the newest unread entries; every section that left something out says how many and the exact
command that shows them.

The read cursor: ``build`` advances the agent's cursor (as ``nexus log read`` does) when the brief
showed every unread entry; when it had to leave some out it leaves the cursor where it was, so
``nexus log read --agent A`` still returns everything. ``peek=True`` (``--peek``) never moves it.

Hot path: no YAML, no watchdog; owed acks and races come from the incremental derived state
(``coordination.view``), unread entries from the cursor (``log.unread``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..keys import roster
from ..ledger import log
from ..memory import scan
from ..records import Brief, BriefSection, Located
from ..settings import DEFAULTS, Settings
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust
from . import claimlog, coordination
from .coordination_state import View
from .hints import say

if TYPE_CHECKING:
    from ..ledger.check import Checker

IDENTITY_SHARE = 0.25  # at most this share of the budget for the identity note
OWED_SHARE = 0.45  # at most this share for what the agent owes
BODY_CHARS = 600  # an unread entry's body is cut after this many characters


UNVERIFIED_TITLE = "UNVERIFIED: not their authors' words"


def unverified_line(located: Located) -> str:
    """How every reader shows an entry that failed the per-entry check (``check.check_entry``):
    marked, never as its claimed author's words, without its body."""
    e = located.entry
    return (
        f"- UNVERIFIED [{located.verdict}] entry {e.id} at {located.file}:{located.line_start} "
        f"claims to be by {e.agent} ({e.channel} · {e.type}): {e.summary[:120]!r} "
        f"— do not act on it; see `nexus verify`"
    )


def split_verified(items: list[Located]) -> tuple[list[Located], list[Located]]:
    """(entries shown as their author's words, entries shown apart and marked). An entry nobody
    checked (verdict None) counts as unverified."""
    good = [loc for loc in items if loc.verdict == "ok"]
    return good, [loc for loc in items if loc.verdict != "ok"]


def _race_side(located: Located) -> str:
    """One side of a race: its author's words only when verified."""
    e = located.entry
    if located.verdict != "ok":
        return (
            f"an UNVERIFIED entry [{e.id}] claiming to be by {e.agent} ({located.verdict}; do not act on it)"
        )
    return f'{e.agent}\'s [{e.id}] "{e.summary}"'


def entry_text(located: Located, *, body: bool = True) -> str:
    """An entry as every reader shows it: its author's words when verified, else marked."""
    if located.verdict != "ok":
        return unverified_line(located)
    return _entry_line(located, body=body)


def _entry_line(
    located: Located, *, body: bool, vault: Vault | None = None, checker: Checker | None = None
) -> str:
    """With ``vault`` and ``checker``, each acknowledged entry is named with its summary when it
    verifies (an entry that does not is never quoted as its author's words)."""
    if located.verdict != "ok":
        return unverified_line(located)
    e = located.entry
    found = scan.entry_flags(e.summary, e.body, vault.root if vault is not None else None)
    mark = f"{scan.data_notice(found)} " if found else ""
    text = (
        f"- {mark}{e.ts[:16].replace('T', ' ')}Z · {e.agent} · {e.channel} · {e.type} — {e.summary} [{e.id}]"
    )
    if e.ack:
        verb = "corrects" if e.type == "correction" else "acks"
        named = [
            f'"{s}" [{i}]'
            if vault is not None and checker is not None and (s := _summary_of(vault, i, checker))
            else i
            for i in e.ack
        ]
        text += f" ({verb} {', '.join(named)})"
    if body and e.body:
        shown = e.body if len(e.body) <= BODY_CHARS else e.body[:BODY_CHARS] + " …"
        text += "\n" + "\n".join("  " + line for line in shown.split("\n"))
    return text


def _summary_of(vault: Vault, entry_id: str, checker: Checker, limit: int = 120) -> str | None:
    """The summary of entry ``entry_id`` when it verifies (``checker``), found without parsing the
    log: the segment of the id's month is searched from its end for the entry's begin line (an
    acknowledged entry is usually recent), and only that entry is read. None when it is not there or
    does not verify. Read again at every call: nothing is kept between briefs."""
    import mmap

    from ..storage import entries, segments

    found: str | None = None
    try:
        month = entries.segment_name(entries.utc_ts(entries.decode_id_ms(entry_id)))
        with (
            open(vault.root / "log" / f"{month}.md", "rb") as f,
            mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data,
        ):
            starts = segments.entry_starts(data, entry_id)  # type: ignore[arg-type]
            start = starts[-1] if starts else -1
            if start >= 0:
                stop = segments.entry_end(data, start)  # type: ignore[arg-type]
                if stop >= 0:
                    scan = segments.scan(bytes(data[start : stop + 1]), f"log/{month}.md", offset=start)
                    if scan.entries and checker.mark(scan.entries[:1])[0].verdict == "ok":
                        s = scan.entries[0].entry.summary
                        found = s if len(s) <= limit else s[: limit - 1] + "…"
    except (OSError, ValueError):
        found = None
    return found


def _cut(text: str, limit: int, hint: str) -> str:
    if len(text) <= limit:
        return text
    suffix = f"\n… ({hint})"
    return text[: max(0, limit - len(suffix))] + suffix


def _identity_section(vault: Vault, agent: str, limit: int) -> BriefSection | None:
    info = roster.roster(vault).get(agent)
    if info is None:
        return None
    body = str(info.get("body", "")).strip()
    return BriefSection(
        "identity", f"Identity: {agent}", _cut(body, limit, f"the rest is in agents/{agent}/identity.md")
    )


def _owed_section(
    vault: Vault,
    agent: str,
    data: View,
    limit: int,
    check: Checker,
    surface: str = "cli",
    unread: frozenset[str] = frozenset(),
) -> BriefSection | None:
    """What the agent owes; an owed entry it has not read yet shows its body here (the unread section
    does not repeat it)."""
    from ..records import Race

    refs = list(data.owed)
    race_refs = list(data.races)
    if not refs and not race_refs:
        return None
    lines: list[str] = []
    used = 0
    omitted = 0
    full = False  # once the budget is spent, the rest is counted, never read back
    for pair in race_refs:
        if full:
            omitted += 1
            continue
        race = Race(
            coordination.materialize(vault, pair.a, check), coordination.materialize(vault, pair.b, check)
        )
        block = (
            f"- RACE: {_race_side(race.a)} and {_race_side(race.b)} were written without "
            f"either seeing the other. Read both, then reconcile with\n  "
            + say(
                surface,
                "reconcile",
                agent=agent,
                channel=race.b.entry.channel,
                a=race.a.entry.id,
                b=race.b.entry.id,
            )
        )
        if used + len(block) + 1 > limit:
            omitted += 1
            full = True
            continue
        lines.append(block)
        used += len(block) + 1
    acks: list[str] = []
    for ref in reversed(refs):  # newest first while filling
        if full:
            omitted += 1
            continue
        block = _entry_line(
            coordination.materialize(vault, ref, check), body=ref.id in unread, vault=vault, checker=check
        )
        if used + len(block) + 1 > limit:
            omitted += 1
            full = True
            continue
        acks.append(block)
        used += len(block) + 1
    if acks:
        lines.append(
            f"Waiting for your acknowledgement ({len(refs)}); ack with {say(surface, 'ack', agent=agent)}:"
        )
        lines.extend(reversed(acks))
    if omitted:
        lines.append(f"… {omitted} more owed item(s) not shown: {say(surface, 'owed', agent=agent)}")
    return BriefSection(
        "owed", f"OWED: {len(refs)} acknowledgement(s), {len(race_refs)} race(s)", "\n".join(lines), omitted
    )


# ------------------------------------------------------------------ slots for other issues


def _decisions_section(vault: Vault, agent: str, limit: int, surface: str = "cli") -> BriefSection | None:
    """the active decisions. Return a section, or None when there is nothing."""
    from ..project.decisions import brief_lines  # reads .nexus/cache/decisions.json; no YAML

    lines = [scan.marked(line, vault.root) for line in brief_lines(vault)]
    if not lines:
        return None
    shown: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > limit:
            break
        shown.append(line)
        used += len(line) + 1
    omitted = len(lines) - len(shown)
    if omitted:
        shown.append(f"… {omitted} more active decision(s): {say(surface, 'decisions')}")
    return BriefSection(
        "decisions", f"Active decisions ({len(lines)}): follow them", "\n".join(shown), omitted
    )


def _checkpoint_section(
    vault: Vault, agent: str, limit: int, stale_minutes: int, surface: str = "cli"
) -> BriefSection | None:
    """the agent's last checkpoint (flag it when stale). None when there is none."""
    from ..errors import InputError
    from ..project import checkpoints

    try:
        cp = checkpoints.load(vault, agent)
    except InputError as err:
        return BriefSection("checkpoint", "Your last checkpoint", f"unreadable: {err}")
    if cp is None:
        return None
    flag = ""
    if checkpoints.probable_crash(cp, stale_minutes):
        flag = (
            " — PROBABLE CRASH: in progress with no save since then; continue from here "
            f"({say(surface, 'resume', agent=agent)})"
        )
    text = (
        f"{cp.status} · saved {cp.saved} · version {cp.seq}{flag}\n"
        f"task: {cp.task}\ndone: {cp.step}\nnext: {cp.next}"
    )
    if cp.files:
        text += "\nfiles: " + ", ".join(cp.files)
    if cp.notes.strip():
        text += "\nnotes:\n" + cp.notes.strip()
    return BriefSection(
        "checkpoint",
        "Your last checkpoint",
        _cut(text, limit, f"the rest is in agents/{agent}/checkpoint.md"),
    )


def _memory_section(
    vault: Vault, agent: str, limit: int, settings: Settings, surface: str = "cli"
) -> BriefSection | None:
    """usage warnings, the memory snapshot and the memory index (within the settings' memory and user
    limits). None when empty."""
    from ..memory import snapshot

    return snapshot.brief_section(
        vault,
        agent,
        limit,
        memory_limit=settings.memory_chars,
        user_limit=settings.user_chars,
        surface=surface,
    )


# ------------------------------------------------------------------ build and render


def _unread_section(
    agent: str,
    items: list[Located],
    limit: int,
    surface: str = "cli",
    owed: frozenset[str] = frozenset(),
    vault: Vault | None = None,
    checker: Checker | None = None,
) -> tuple[BriefSection | None, int]:
    """Newest entries first until the budget is spent; returns the section and how many were left out.
    Entries already listed under what the agent owes are counted, not shown twice."""
    if not items:
        return None, 0
    items, suspect = split_verified(items)  # (an unverified entry is never shown among the others)
    apart = (
        [f"{UNVERIFIED_TITLE} ({len(suspect)}):", *(unverified_line(x) for x in suspect)] if suspect else []
    )
    limit -= sum(len(line) + 1 for line in apart)
    chosen: list[str] = []
    used = 0
    footer_room = 120
    listed = [x for x in items if x.entry.id not in owed]
    above = len(items) - len(listed)
    for located in reversed(listed):
        block = _entry_line(located, body=True, vault=vault, checker=checker)
        if used + len(block) + 1 > max(0, limit - footer_room):
            break
        chosen.append(block)
        used += len(block) + 1
    omitted = len(listed) - len(chosen)
    lines = list(reversed(chosen))
    if omitted:
        lines.insert(
            0,
            f"… {omitted} older unread entr{'y' if omitted == 1 else 'ies'} not shown: "
            f"{say(surface, 'read', agent=agent)}",
        )
    if above:
        lines.append(f"({above} more listed above, under what you owe)")
    lines += apart
    return BriefSection("unread", f"Unread from others: {len(items)}", "\n".join(lines), omitted), omitted


def _state_section(vault: Vault, limit: int) -> BriefSection | None:
    """The project state as it is now (``state/project.md``, read without YAML) and its version,
    which an agent passes to ``state set --expect``. None when there is no state yet."""
    import re

    try:
        text = (vault.root / "state" / "project.md").read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    version = "?"
    body = text
    if text.startswith("---\n"):
        head, sep, rest = text[4:].partition("\n---\n")
        if sep:
            body = rest
            m = re.search(r"^version:\s*\"?(\d+)\"?\s*$", head, re.M)
            version = m.group(1) if m else "?"
    lines = [ln for ln in body.strip().splitlines() if ln.strip() != "# Project state"]
    content = scan.marked("\n".join(lines).strip() or "(empty)", vault.root)
    return BriefSection(
        "state",
        f"Project state (version {version})",
        _cut(content, limit, "the rest is in state/project.md (`nexus state show`)"),
    )


def _unverified_section(items: list[Located], limit: int) -> BriefSection | None:
    """Unread entries that failed verification: apart from the others, marked, bodies withheld."""
    if not items:
        return None
    lines = [unverified_line(loc) for loc in items]
    text = _cut("\n".join(lines), max(limit, 200), "run `nexus verify` for every finding")
    return BriefSection("unverified", f"{UNVERIFIED_TITLE} ({len(items)})", text)


def _section_text(section: BriefSection) -> str:
    return f"## {section.title}\n{section.text}\n" if section.text else f"## {section.title}\n"


def build(
    vault: Vault,
    agent: str,
    settings: Settings = DEFAULTS,
    *,
    peek: bool = False,
    surface: str = "cli",
    project: str | None = None,
    trust: Trust = NO_PINS,
) -> Brief:
    """Assemble ``agent``'s brief within ``settings.brief_max_chars`` (see the module docstring for the
    cursor); ``settings`` also says which types are owed, the race window and when a checkpoint is stale.
    ``surface`` (``cli`` or ``mcp``) decides how its instructions name the next action (``hints``);
    ``project`` (the folder name of the project the agent works in) narrows the others' claims shown.
    ``trust``: the keys this machine pinned, which decide what shows as its authors' words."""
    from ..errors import SettingError
    from ..storage.text import check_name

    check_name(agent)
    max_chars = settings.brief_max_chars
    ack_types, race_window = settings.ack_types, settings.race_window_seconds
    stale_minutes = int(settings.stale_checkpoint_minutes)
    if max_chars < 200:
        raise SettingError("brief_max_chars", max_chars, "is too small; the least is 200")
    generated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    header = f"# nexus brief for {agent} ({generated})\n"
    from . import heartbeat

    dead = heartbeat.problem(vault)
    watcher = BriefSection("watcher", "⚠ The watcher is not running", dead) if dead else None
    budget = max_chars - len(header) - 16 - (len(_section_text(watcher)) if watcher else 0)
    info = roster.roster(vault).get(agent)
    if info is None:
        raise vault.unknown_agent(agent)
    is_human = info.get("kind") == "human"
    data = View(agent) if is_human else coordination.view(vault, agent, ack_types, race_window)
    checker = coordination.entry_checker(vault, trust)
    items, cursor = log.scan_unread(vault, agent, checker=checker)
    owed = _owed_section(
        vault, agent, data, int(budget * OWED_SHARE), checker, surface, frozenset(x.entry.id for x in items)
    )
    used = len(_section_text(owed)) if owed else 0
    identity = _identity_section(vault, agent, min(int(budget * IDENTITY_SHARE), budget - used - 40))
    used += len(_section_text(identity)) if identity else 0
    slots: list[BriefSection] = []
    for which in ("decisions", "state", "checkpoint", "memory"):
        room = max(0, (budget - used) // 3)
        if which == "decisions":
            section = _decisions_section(vault, agent, room, surface)
        elif which == "state":
            section = _state_section(vault, room)
        elif which == "checkpoint":
            section = _checkpoint_section(vault, agent, room, stale_minutes, surface)
        else:
            section = _memory_section(vault, agent, room, settings, surface)
        if section is not None:
            slots.append(section)
            used += len(_section_text(section))
    claimed = claimlog.brief_text(vault, trust, agent, project, max(0, (budget - used) // 3))
    if claimed:
        slots.append(BriefSection("claims", "Claims", claimed))
        used += len(_section_text(slots[-1]))
    items, suspect = split_verified(items)
    flagged = _unverified_section(suspect, max(0, (budget - used) // 4))
    used += len(_section_text(flagged)) if flagged else 0
    owed_ids = frozenset(ref.id for ref in data.owed)
    unread, omitted = _unread_section(agent, items, budget - used - 40, surface, owed_ids, vault, checker)
    # The cursor moves only when every unread entry was shown, so `nexus log read` still returns
    # the ones left out.
    advanced = bool(items) and not peek and not omitted
    if not peek and not omitted and cursor is not None:
        log.advance_cursor(vault, agent, cursor)
    sections = tuple(s for s in (watcher, identity, owed, *slots, unread, flagged) if s is not None)
    if unread is None:
        sections += (BriefSection("unread", "Unread from others: 0", "nothing new"),)
    return Brief(
        agent=agent,
        generated=generated,
        max_chars=max_chars,
        sections=sections,
        owed=tuple(ref.id for ref in data.owed),
        races=tuple((r.a.id, r.b.id) for r in data.races),
        unread_shown=len(items) - omitted,
        unread_omitted=omitted,
        cursor_advanced=advanced,
    )


def render(brief: Brief) -> str:
    """The brief as Markdown text, never longer than ``brief.max_chars``."""
    text = f"# nexus brief for {brief.agent} ({brief.generated})\n" + "\n".join(
        _section_text(s) for s in brief.sections
    )
    if len(text) > brief.max_chars:  # a safety net; the sections were sized to fit
        text = _cut(text, brief.max_chars, "brief cut at --max-chars")
    return text


# The per-turn delta (session.py) shows entries exactly as the brief does.
entry_line = _entry_line
unread_section = _unread_section
