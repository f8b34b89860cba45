"""The claim and release entries, read from the log incrementally and kept in ``.nexus/claims.json``.

The file is derived: a mark per segment (``ledger/marks.py``: where the reading stopped) and the
verified claim and release events found before it, each with its segment. A segment whose mark no
longer holds (a merge, an import, an edit rewrote it) is read again from its start; a segment gone
takes its events with it; anything unreadable is rebuilt from the segments. Only entries whose
signature checks against their author's pinned key count (``verify.Checker``).

Events of claims that stopped holding more than ``KEEP_SECONDS`` ago are dropped from the file (the
log keeps them); the names of every task ever claimed are kept, for ``nexus claims --free``.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Any

from ..ledger import log
from ..ledger.logfiles import segment_files
from ..ledger.marks import START, Mark
from ..records import Claim
from ..storage import durable
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust
from .claims import CHANNEL, MAX_TTL_SECONDS, TASK, Event, event_of, fold, iso_ms
from .claimview import FILE

VERSION = 2
KEEP_SECONDS = 14 * 24 * 3600  # ended claims stay this long in the derived file (the handoff's window)


class Book:
    """The events and marks, as loaded or refreshed."""

    def __init__(self, marks: dict[str, Mark], events: list[Event], tasks: set[str]) -> None:
        self.marks, self.events, self.tasks = marks, events, tasks

    def claims(self, now_ms: int | None = None) -> dict[str, Claim]:
        return fold(self.events, int(time.time() * 1000) if now_ms is None else now_ms)


def _path(vault: Vault) -> Any:
    return vault.state / FILE


def _load(vault: Vault) -> Book:
    try:
        raw = json.loads(_path(vault).read_bytes())
        if raw.get("v") != VERSION:
            raise ValueError("another layout")
        marks = {}
        for name, m in raw["marks"].items():
            mark = Mark.from_json(m)
            if mark is not None:
                marks[name] = mark
        return Book(marks, [Event.from_json(e) for e in raw["events"]], set(raw["tasks"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Book({}, [], set())


def _save(vault: Vault, book: Book) -> None:
    data = {
        "v": VERSION,
        "marks": {name: m.to_json() for name, m in book.marks.items()},
        "events": [e.to_json() for e in book.events],
        "tasks": sorted(book.tasks),
        "holding": [  # what the pre-tool hook reads while no segment changed (claimview.py)
            [c.id, c.agent, c.project, list(c.patterns), c.mode, iso_ms(c.expires)]
            for c in book.claims().values()
            if c.status == "active"
        ],
    }
    with contextlib.suppress(OSError):  # derived: the next reader reads the segments again
        durable.replace(_path(vault), json.dumps(data, separators=(",", ":")).encode(), durable=False)


def refresh(vault: Vault, trust: Trust = NO_PINS, *, save: bool = True) -> Book:
    """The events as the segments hold them now (reading only what is new since the marks); only
    claim entries that verify with the keys ``trust`` pins count."""
    book = _load(vault)
    files = segment_files(vault)
    names = {name for name, _ in files}
    changed = False
    gone = [name for name in book.marks if name not in names]
    if gone:
        book.marks = {n: m for n, m in book.marks.items() if n in names}
        book.events = [e for e in book.events if e.file.rsplit("/", 1)[-1][:-3] in names]
        changed = True
    found: list[Any] = []
    for name, path in files:
        try:
            size = os.stat(path).st_size
        except OSError:
            continue
        mark = book.marks.get(name, START)
        if mark.unchanged(size) and (name in book.marks):
            continue
        file = vault.rel(path)
        if not mark.holds(path):
            mark = START
            book.events = [e for e in book.events if e.file != file]
        last = None
        for scan in mark.read_chunks(path, file, size):
            found += [loc for loc in scan.entries if loc.entry.channel == CHANNEL]
            last = scan.entries[-1] if scan.entries else last
        after = mark if last is None else Mark.past(last)
        book.marks[name] = Mark(after.offset, after.line, after.last, size)
        changed = True
    if found:
        from ..ledger.check import Checker

        for loc in Checker(vault, trust=trust).mark(found):
            event = event_of(loc.entry, loc.file)
            if loc.verdict == "ok" and event is not None:
                book.events.append(event)
                book.tasks.update(p for p in event.patterns if p.startswith(TASK))
    if changed:
        _prune(book)
        if save:
            _save(vault, book)
    return book


def _prune(book: Book) -> None:
    now = int(time.time() * 1000)
    claims = fold(book.events, now)
    old = now - KEEP_SECONDS * 1000
    ended = {
        cid
        for cid, c in claims.items()
        if c.status != "active" and min(iso_ms(c.expires), iso_ms(c.released_at or c.expires)) < old
    }
    if ended:
        book.events = [e for e in book.events if e.id not in ended and e.claim not in ended]
    seen: set[str] = set()
    unique = []
    for e in sorted(book.events, key=lambda e: e.id):  # (a segment read twice: keep one of each)
        if e.id not in seen:
            seen.add(e.id)
            unique.append(e)
    book.events = unique


NOTE = "Claims.md"
NOTE_STATE = "claims-note.json"  # when Claims.md next changes by time alone (derived, under .nexus/)


def _listed(claims: dict[str, Claim], now: int) -> tuple[list[Claim], list[Claim]]:
    """What ``Claims.md`` lists at ``now``: the claims that hold, and those lost on merge that have
    not expired."""
    from .claims import active

    lost = [c for c in claims.values() if c.status == "lost" and iso_ms(c.expires) > now]
    return active(claims), lost


def note_text(book: Book, now_ms: int | None = None) -> str:
    """``Claims.md``: the claims that hold at ``now_ms`` as a person reads them, each linked to its
    entry and dated, so the note stays true when read later: a claim it lists holds until the date
    and time shown, unless released."""
    from .claims import shown

    now = int(time.time() * 1000) if now_ms is None else now_ms
    claims = book.claims(now)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now // 1000))
    held, lost = _listed(claims, now)
    lines = [
        "---",
        "tags:",
        "  - nexus/claims",
        f"generated: '{stamp}'",
        "---",
        "# Claims",
        "",
        f"> [!info] The claims that held at {stamp}, from the log's `claims` channel. Generated at every",
        "> claim, renewal and release, after a git merge or a sync, and by `nexus watch` when a claim",
        "> listed here expires; edits here are replaced. A claim shown past its expiry has expired.",
        "",
    ]
    lines += [f"- {shown(c, dated=True)}" for c in held] or ["_Nobody holds anything._"]
    if lost:
        lines += ["", "## Lost on merge", ""]
        lines += [
            f"- **{c.agent}**'s claim {c.link} lost to {c.lost_to_agent}'s earlier claim "
            + (claims[c.lost_to].link if c.lost_to in claims else str(c.lost_to))
            for c in lost
        ]
    return "\n".join(lines) + "\n"


def write_note(vault: Vault, book: Book, now_ms: int | None = None) -> None:
    """Regenerate ``Claims.md`` (atomically, durably), and remember when it next changes by time
    alone: the first expiry among the claims it lists."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    durable.replace(vault.root / NOTE, note_text(book, now).encode())
    held, lost = _listed(book.claims(now), now)
    changes_at = min((iso_ms(c.expires) for c in held + lost), default=None)
    with contextlib.suppress(OSError):  # derived: missing, the next watcher pass regenerates once
        data = json.dumps({"changes_at": changes_at}).encode()
        durable.replace(vault.state / NOTE_STATE, data, durable=False)


def note_due(vault: Vault, now_ms: int | None = None) -> bool:
    """Whether ``Claims.md`` lists a claim that has expired since it was written (or its derived
    record is missing or unreadable); False when there is no note. Reads only."""
    if not (vault.root / NOTE).exists():
        return False
    now = int(time.time() * 1000) if now_ms is None else now_ms
    try:
        changes_at = json.loads((vault.state / NOTE_STATE).read_bytes())["changes_at"]
    except (OSError, ValueError, KeyError, TypeError):
        return True
    return isinstance(changes_at, int) and changes_at <= now


def expire_note(vault: Vault, now_ms: int | None = None) -> bool:
    """Regenerate ``Claims.md`` when a claim it lists has expired (the watcher's pass; a write of
    the log lock's holder, so the newest write wins, as at a claim); whether it did."""
    if not note_due(vault, now_ms):
        return False
    with log.locked(vault):
        if not note_due(vault, now_ms):  # a claim's write regenerated it meanwhile
            return False
        write_note(vault, refresh(vault), now_ms)
    return True


def brief_text(
    vault: Vault, trust: Trust, agent: str, project: str | None, limit: int, now_ms: int | None = None
) -> str:
    """The brief's claims: the agent's own claims lost on merge or expiring soon, and the other
    agents' active claims (in ``project`` when known; tasks always); "" when there are none."""
    from .claims import SOON_SECONDS, active, until

    now = int(time.time() * 1000) if now_ms is None else now_ms
    claims = refresh(vault, trust).claims(now)
    held = active(claims)
    lines: list[str] = []
    for c in sorted(claims.values(), key=lambda c: c.id):
        if c.agent == agent and c.status == "lost" and iso_ms(c.expires) > now - MAX_TTL_SECONDS * 1000:
            what = " ".join(f"`{p}`" for p in c.patterns)
            lines.append(
                f"- ⚠ your claim {c.id} on {what} was LOST on merge to {c.lost_to_agent}'s earlier claim "
                f"{c.lost_to} (taken on another copy of the vault): do not edit those; ask {c.lost_to_agent}"
            )
    for c in held:
        if c.agent == agent and iso_ms(c.expires) - now <= SOON_SECONDS * 1000:
            what = " ".join(f"`{p}`" for p in c.patterns)
            lines.append(f"- your claim {c.id} on {what} expires at {until(c)}: renew it or release it")
    others = [
        c for c in held if c.agent != agent and (project is None or c.project == project or all_tasks(c))
    ]
    lines += [
        f"- {c.agent} holds {' '.join(f'`{p}`' for p in c.patterns)} in {c.project} ({c.mode}) "
        f"until {until(c)}: {c.reason} [claim {c.id}]"
        for c in others
    ]
    text = "\n".join(lines)
    return (
        text
        if len(text) <= limit
        else text[: max(0, limit - 40)].rsplit("\n", 1)[0] + "\n- … (`nexus claims`)"
    )


def all_tasks(c: Claim) -> bool:
    return all(p.startswith(TASK) for p in c.patterns)


def handoff_lines(
    vault: Vault, trust: Trust, start_ms: int, until_ms: int
) -> tuple[list[str], dict[str, list[str]]]:
    """The handoff's claims section (Markdown lines) and its items: held now, expired without a
    release in the window (a crashed agent, probably), lost on merge."""
    from .claims import active, shown

    claims = refresh(vault, trust).claims(until_ms)
    held = active(claims)
    expired = [
        c for c in claims.values() if c.status == "expired" and start_ms <= iso_ms(c.expires) <= until_ms
    ]
    lost = [c for c in claims.values() if c.status == "lost" and iso_ms(c.expires) >= start_ms]
    md: list[str] = []
    if held:
        md += ["**Held now** (through the night, unless released):", "", *[f"- {shown(c)}" for c in held], ""]
    if expired:
        md += ["**Expired without a release** (a crashed agent, probably):", ""]
        md += [
            f"- {c.agent}: {' '.join(f'`{p}`' for p in c.patterns)} at {c.expires} — {c.reason} · {c.link}"
            for c in sorted(expired, key=lambda c: c.id)
        ]
        md.append("")
    if lost:
        md += ["**Lost on merge** (taken on two copies of the vault; the earlier claim holds):", ""]
        md += [
            f"- {c.agent}'s {' '.join(f'`{p}`' for p in c.patterns)} {c.link} lost to "
            f"{c.lost_to_agent}'s claim {c.lost_to}"
            for c in sorted(lost, key=lambda c: c.id)
        ]
        md.append("")
    items = {"held": [c.id for c in held], "expired": [c.id for c in expired], "lost": [c.id for c in lost]}
    return md, items
