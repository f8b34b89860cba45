"""The morning handoff: the page a person reads to learn what the agents did overnight.

``build`` gathers, for a time window, every item a person needs – most important first, each once,
each linked to its source – and renders Markdown; ``write`` saves it as ``handoff/YYYY-MM-DD.md``
(``-2``, ``-3``… for later handoffs the same day). Sections, in order:

1. a summary callout (counts);
2. **Waiting for you** – integrity problems from ``verify``, checkpoints that probably crashed or are
   blocked, facts waiting for a person's approval (retention bank), open questions;
3. **Corrections** and who has not acknowledged them;
4. **Races** not yet reconciled;
5. **Decisions** made and superseded;
6. **Checkpoints** in progress, recovered after a crash, done;
7. **Project state** changes;
8. **Work by agent** – everything else, grouped by agent and channel.

The window and its entries are ``handoff_window.py``'s; the page's Markdown is ``handoff_page.py``'s.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..memory import scan
from ..records import Located
from ..settings import DEFAULTS, Settings
from ..storage import durable, meta, properties
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust
from .handoff_page import Page, for_terminal, render, said
from .handoff_window import Window, folder, scan_path, window

SHOWN_RACES = 10


@dataclass
class Handoff:
    """A morning handoff: the window it covers, its page, its items, and where its scan stopped."""

    since: str | None
    until: str
    last_entry: str | None = None  # the newest entry covered: `--since last` starts after it
    last_state_version: int = 0
    markdown: str = ""
    items: dict[str, Any] = field(default_factory=dict)
    scan: dict[str, Any] | None = None  # where this handoff's scan stopped (saved by ``write``)

    def to_json(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "until": self.until,
            "last_entry": self.last_entry,
            "last_state_version": self.last_state_version,
            "items": self.items,
            "markdown": self.markdown,
        }

    def for_terminal(self, *, colour: bool) -> str:
        """The page for a terminal: wikilinks shortened; ANSI colour when ``colour``."""
        return for_terminal(self.markdown, colour=colour)


def _integrity(w: Window, page: Page, items: dict[str, Any]) -> None:
    items["integrity"] = [p.to_json() for p in w.report.errors]
    for p in w.report.errors:
        target = p.file.removesuffix(".md")
        # an entry verify could read has its block id; broken framing may not
        link = f"[[{target}#^{p.entry_id}]]" if p.entry_id and p.kind != "framing" else f"[[{target}]]"
        what = f"{p.kind} {p.entry_id}" if p.entry_id else p.kind
        page.waiting.append(f"- ⚠ **integrity** {what}: {p.message} — {link}")


def _crashes(
    vault: Vault, w: Window, settings: Settings, page: Page, items: dict[str, Any]
) -> tuple[dict[str, Any], set[str]]:
    """Every agent's checkpoint, and the agents whose checkpoint looks like a crash."""
    from ..project import checkpoints

    cps = checkpoints.all_checkpoints(vault)
    stale = float(settings.stale_checkpoint_minutes)
    crashed = {
        a
        for a, cp in cps.items()
        if checkpoints.probable_crash(cp, stale, last_activity=w.activity.get(a), now=w.now)
    }
    items["checkpoints"] = [{**cp.to_json(), "probable_crash": a in crashed} for a, cp in cps.items()]
    for a in sorted(crashed):
        cp = cps[a]
        page.waiting.append(
            f"- ⚠ **{a} probably crashed** during “{cp.task}”: in progress, idle since "
            f"{cp.saved.replace('T', ' ')}; last step “{cp.step}”, next “{cp.next}” — "
            f"[[agents/{a}/checkpoint]] (`nexus checkpoint resume --agent {a}`)"
        )
    for a, cp in sorted(cps.items()):
        if cp.status == "blocked":
            page.waiting.append(
                f"- ⛔ **{a} is blocked** on “{cp.task}”: {cp.step}; needs: {cp.next} — "
                f"[[agents/{a}/checkpoint]]"
            )
    page.counts["crashed"] = len(crashed)
    return cps, crashed


def _pending_facts(vault: Vault, page: Page, items: dict[str, Any]) -> None:
    from ..memory import bank

    pending = bank.pending(vault)
    items["pending_facts"] = [f.id for f in pending]
    if pending:
        page.waiting.append(
            f"- 📥 **{len(pending)} fact(s) wait for your approval** in the retention bank "
            "(tick them in memory/REVIEW.md, or `nexus review`):"
        )
        page.waiting += [
            f"  - {f.agent} · {f.type}: {' '.join(f.content.split())[:200]} — {f.link}" for f in pending
        ]


def _owed(vault: Vault, state: Any, found: list[Located]) -> dict[str, list[str]]:
    """Entry id -> the agents that still owe it an acknowledgement, for the window's entries only
    (the coordination state answers per id: no pass over every entry that ever needed one)."""
    from ..keys import roster

    agents = roster.agents(vault)
    out: dict[str, list[str]] = {}
    for loc in found:
        item = state.pending.get(loc.entry.id)
        if item is not None and (owers := [a for a in agents if item.owed_by(a)]):
            out[loc.entry.id] = owers
    return out


def _questions_and_corrections(vault: Vault, w: Window, page: Page, items: dict[str, Any]) -> None:
    owed = _owed(vault, w.coordination, w.entries)
    questions = [loc for loc in w.entries if loc.entry.type == "question" and loc.entry.id in owed]
    for loc in questions:
        e = loc.entry
        page.waiting.append(f"- ❓ open question from {e.agent}: {said(e)} — {loc.link}")
        page.shown.add(e.id)
    items["open_questions"] = [q.entry.id for q in questions]
    corrections = [loc for loc in w.entries if loc.entry.type == "correction"]
    items["corrections"] = [
        {
            "id": c.entry.id,
            "by": c.entry.agent,
            "summary": c.entry.summary,
            "not_acked_by": owed.get(c.entry.id, []),
        }
        for c in corrections
    ]
    for loc in corrections:
        e = loc.entry
        missing = owed.get(e.id, [])
        status = f"**not acknowledged by {', '.join(missing)}**" if missing else "acknowledged by all"
        page.corrections.append(f"- {e.agent}: {said(e)} — {status} — {loc.link}")
        page.shown.add(e.id)
    page.counts["corrections"] = len(corrections)


def _races(vault: Vault, w: Window, page: Page, items: dict[str, Any]) -> None:
    """Every unreconciled race (ids from the coordination state; only the few shown are read back
    from the log), and the races an entry of the window reconciled."""
    from . import coordination

    found = sorted(w.coordination.races, key=lambda r: (r.a.id, r.b.id))
    open_races = [r for r in found if r.resolved_by is None]  # until reconciled, every time
    items["races"] = [[r.a.id, r.b.id] for r in open_races]
    check = coordination.entry_checker(vault, w.trust)
    for r in open_races[:SHOWN_RACES]:
        a, b = coordination.materialize(vault, r.a, check), coordination.materialize(vault, r.b, check)
        page.races.append(
            f"- {a.entry.agent} “{said(a.entry)}” {a.link} and {b.entry.agent} "
            f"“{said(b.entry)}” {b.link} were written without seeing each other — reconcile "
            "with an entry of type `reconcile` acking both"
        )
    if len(open_races) > SHOWN_RACES:
        page.races.append(f"- … {len(open_races) - SHOWN_RACES} more: `nexus races --unresolved`")
    for r in open_races:
        page.shown.update((r.a.id, r.b.id))
    resolved = [r for r in found if r.resolved_by is not None and r.resolved_by in w.by_id]
    items["races_reconciled"] = [[r.a.id, r.b.id] for r in resolved]
    for r in resolved:
        fix = w.by_id[r.resolved_by or ""]
        page.reconciled.append(f"- reconciled by {fix.entry.agent}: {said(fix.entry)} — {fix.link}")
    page.counts["races"] = len(open_races)


def _decisions(vault: Vault, w: Window, page: Page, items: dict[str, Any]) -> None:
    from ..project import decisions

    all_dec = decisions.all_decisions(vault)
    made = [d for d in all_dec if w.fresh(d.entry, d.date)]
    made_ids = {d.id for d in made}
    superseded = [d for d in all_dec if d.superseded_by in made_ids and d.id not in made_ids]
    items["decisions_made"] = [d.id for d in made]
    items["decisions_superseded"] = [d.id for d in all_dec if d.superseded_by in made_ids]
    for d in made:
        status = "" if d.status == "active" else f" (since superseded by {d.superseded_by})"
        entry = w.by_id.get(d.entry or "")
        page.decisions.append(
            f"- {d.link} **{d.title}** by {d.author}{status}: {decisions.one_line(d)}"
            + (f" — {entry.link}" if entry else "")
        )
        if d.entry:
            page.shown.add(d.entry)
    for d in superseded:
        page.decisions.append(f"- ~~{d.link} {d.title}~~ superseded by {d.superseded_by}")
    page.counts["decisions"] = len(made)


def _checkpoints(
    w: Window, cps: dict[str, Any], crashed: set[str], page: Page, items: dict[str, Any]
) -> None:
    resumes = [loc for loc in w.entries if loc.entry.type == "resume"]
    for loc in resumes:
        page.checkpoints.append(
            f"- ↻ {loc.entry.agent} recovered after a crash: {said(loc.entry)} — {loc.link}"
        )
        page.shown.add(loc.entry.id)
    for a, cp in sorted(cps.items()):
        if a in crashed or cp.status == "blocked":
            continue
        mark = "✓ done" if cp.status == "done" else "… in progress"
        page.checkpoints.append(
            f"- {mark}: {a} — {cp.task}: {cp.step}; next: {cp.next} — [[agents/{a}/checkpoint]]"
        )
    items["resumed"] = [loc.entry.id for loc in resumes]


def _state(vault: Vault, w: Window, page: Page, items: dict[str, Any]) -> None:
    from ..project import project_state

    changes = [
        v
        for v in project_state.versions(vault)
        if v.version > w.after_version and (w.after_version or w.start is None or v.ts >= w.start)
    ]
    items["state_changes"] = [v.version for v in changes]
    page.state = [
        f"- v{v.version} by {v.author}{' (a person, in Obsidian)' if v.kind == 'human' else ''}: "
        f"{scan.marked(v.summary)} — [[{v.path.removesuffix('.md')}|v{v.version}]]"
        for v in changes
    ]
    page.state += [
        f"- refused a stale edit by {loc.entry.agent}: {said(loc.entry)} — {loc.link}"
        for loc in w.entries
        if loc.entry.type == "state-conflict"
    ]
    for loc in w.entries:
        if loc.entry.type in ("state", "state-conflict", "checkpoint", "reconcile"):
            page.shown.add(loc.entry.id)
    page.counts["state"] = len(changes)


def _claims(vault: Vault, w: Window, page: Page, items: dict[str, Any]) -> None:
    """Claims held now, expired without a release in the window, lost on merge (``team/claimlog.py``)."""
    from ..storage.entries import decode_id_ms
    from . import claimlog

    start = decode_id_ms(w.after_entry) if w.after_entry else (w.start_ms or 0)
    page.claims, found = claimlog.handoff_lines(vault, w.trust, start, int(w.now * 1000))
    items["claims"] = found
    gone = len(found["expired"]) + len(found["lost"])
    if gone:
        page.waiting.append(
            f"- ⌛ **{gone} claim(s) expired without a release or lost on merge**: see Claims"
        )


def _work(w: Window, page: Page, items: dict[str, Any]) -> None:
    """Everything no section above shows, by agent and channel."""
    for loc in w.entries:
        if loc.entry.id not in page.shown:
            page.work.setdefault(loc.entry.agent, {}).setdefault(loc.entry.channel, []).append(loc)
    items["work"] = {
        a: {c: [x.entry.id for x in locs] for c, locs in chans.items()} for a, chans in page.work.items()
    }


def build(
    vault: Vault,
    settings: Settings = DEFAULTS,
    *,
    since: str | None = "last",
    now: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    trust: Trust = NO_PINS,
) -> Handoff:
    """Gather the handoff for the window since ``since`` (see ``handoff_window.resolve_since``), then
    render it. ``progress`` follows the verification (long only when it must check the log from scratch);
    ``trust``: the machine's pins (``NO_PINS``: the identity notes' keys, nothing pinned)."""
    from ..ledger import log
    from ..project import project_state
    from . import coordination

    w = window(vault, since, time.time() if now is None else now, progress, trust)
    w.coordination = coordination.refresh(vault, settings.ack_types, settings.race_window_seconds).state
    newest = log.tail(vault, 1)
    out = Handoff(
        since=w.start,
        until=w.until,
        last_entry=newest[-1].entry.id if newest else w.after_entry,
        last_state_version=max([v.version for v in project_state.versions(vault)], default=0),
    )
    from ..ledger.cursors import marks_to_json

    out.scan = {"last_entry": out.last_entry, "segments": marks_to_json(w.marks), "activity": w.activity}
    page, items = Page(), out.items
    _integrity(w, page, items)
    cps, crashed = _crashes(vault, w, settings, page, items)
    _pending_facts(vault, page, items)
    _questions_and_corrections(vault, w, page, items)
    _races(vault, w, page, items)
    _decisions(vault, w, page, items)
    _checkpoints(w, cps, crashed, page, items)
    _state(vault, w, page, items)
    _claims(vault, w, page, items)
    _work(w, page, items)
    out.markdown = render(vault, w, page)
    return out


def write(vault: Vault, handoff: Handoff) -> Path:
    """Save as ``handoff/YYYY-MM-DD.md`` (next free ``-N`` suffix when that day already has one)."""
    day = handoff.until[:10]
    props = {"until": handoff.until, "tags": ["nexus/handoff"]}  # what a person reads
    hidden = {  # what only `--since last` reads: in the note's meta comment, not its Properties
        "since": handoff.since,
        "last_entry": handoff.last_entry,
        "last_state_version": handoff.last_state_version,
    }
    text = properties.render(props, meta.attach(handoff.markdown, hidden)).encode("utf-8")
    folder(vault).mkdir(exist_ok=True)
    n = 1
    while True:
        path = folder(vault) / (f"{day}.md" if n == 1 else f"{day}-{n}.md")
        try:
            durable.create_exclusive(path, text)
            break
        except FileExistsError:
            n += 1
    if handoff.scan is not None:  # the next `--since last` reads from here
        import json

        with contextlib.suppress(OSError):
            durable.replace(scan_path(vault), json.dumps(handoff.scan).encode(), durable=False)
    return path
