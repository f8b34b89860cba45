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
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..memory import scan
from ..records import Located
from ..settings import DEFAULTS, Settings
from ..storage import durable, meta, properties
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust

SHOWN_PER_CHANNEL = 12
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


def _utc(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def folder(vault: Vault) -> Path:
    return vault.inside(vault.root / "handoff")


def previous(vault: Vault) -> tuple[Path, str, dict[str, Any]] | None:
    """The latest handoff note, the time it covered up to, and its properties."""
    best: tuple[Path, str, dict[str, Any]] | None = None
    try:
        names = os.listdir(folder(vault))
    except FileNotFoundError:
        return None
    for name in names:
        if not re.fullmatch(r"\d{4}-\d\d-\d\d(-\d+)?\.md", name):
            continue
        path = folder(vault) / name
        try:
            props, body = properties.parse(path.read_text(encoding="utf-8"), name)
            props, _ = meta.merged(props, body, meta.HANDOFF)  # (older handoffs: all in frontmatter)
        except (InputError, OSError):
            continue
        until = props.get("until")
        if isinstance(until, str) and (best is None or until > best[1]):
            best = (path, until, props)
    return best


def resolve_since(vault: Vault, since: str | None, now: float) -> str | None:
    """'last' → the previous handoff's end (None: everything); '12h' → 12 hours ago; ISO → itself."""
    if since is None or since == "last":
        prev = previous(vault)
        return prev[1] if prev else None
    m = re.fullmatch(r"(\d+)([hd])", since)
    if m:
        return _utc(now - int(m.group(1)) * (3600 if m.group(2) == "h" else 86400))
    m = re.fullmatch(r"(\d{4}-\d\d-\d\d)(?:[T ](\d\d:\d\d)(?::(\d\d))?Z?)?", since)
    if not m:
        raise InputError(
            f"--since {since!r}: use 'last', hours like 12h, days like 2d, or a UTC time "
            "like 2026-11-30T04:00Z"
        )
    return f"{m.group(1)}T{m.group(2) or '00:00'}:{m.group(3) or '00'}Z"


# ------------------------------------------------------------------ gathering


@dataclass
class _Window:
    """What the handoff covers: the entries of the window (verified only), and what it knows of them."""

    start: str | None
    until: str
    now: float
    after_entry: str | None  # the previous handoff's last entry (the window starts after it)
    after_version: int  # the previous handoff's last state version
    start_ms: int | None
    entries: list[Located]
    by_id: dict[str, Located]
    marks: dict[str, Any]  # where the scan stopped in each segment
    activity: dict[str, str]  # agent -> the time of its last entry
    report: Any  # verify's report
    agents: list[str]
    coordination: Any = None  # the coordination state (owed acks, races), brought up to date once
    trust: Trust = NO_PINS  # the machine's pins: what verifies, what is its authors' words

    def fresh(self, entry_id: str | None, ts: str) -> bool:
        """In the window: after the previous handoff's last entry, or at/after --since."""
        from ..storage.entries import decode_id_ms

        if isinstance(self.after_entry, str):
            return entry_id is not None and entry_id > self.after_entry
        if self.start_ms is None:
            return True
        return decode_id_ms(entry_id) >= self.start_ms if entry_id else ts >= (self.start or "")


def _window(
    vault: Vault, since: str | None, now: float, progress: Callable[[int, int], None] | None, trust: Trust
) -> _Window:
    """The window since ``since``, read from where the previous handoff's scan stopped in each segment
    (``.nexus/handoff.json``, saved by ``write``) when it follows that handoff, else the whole log,
    streamed; only entries that verify are anyone's words (the others are listed under integrity)."""
    from ..audit.verify_state import verify  # (reaches up: a handoff lists what verify finds)
    from ..keys.identity import all_identities
    from ..ledger import log
    from ..ledger.check import ENTRY_KINDS
    from ..project import checkpoints

    start = resolve_since(vault, since, now)
    prev = previous(vault) if since in (None, "last") else None
    after_entry = prev[2].get("last_entry") if prev else None
    w = _Window(
        start=start,
        until=_utc(now),
        now=now,
        after_entry=after_entry if isinstance(after_entry, str) else None,
        after_version=int(prev[2].get("last_state_version") or 0) if prev else 0,
        start_ms=None if start is None else int(checkpoints.epoch(start) * 1000),
        entries=[],
        by_id={},
        marks={},
        activity={},
        report=None,
        agents=[n for n, i in all_identities(vault).items() if i.kind == "agent"],
        trust=trust,
    )
    saved = _load_scan(vault)
    resume = saved is not None and w.after_entry is not None and saved["last_entry"] == w.after_entry
    w.activity = dict(saved["activity"]) if resume and saved else {}

    def keep(e: Any) -> bool:
        if e.ts > w.activity.get(e.agent, ""):
            w.activity[e.agent] = e.ts
        return w.fresh(e.id, e.ts)

    # (resuming, older ids are skipped before ``keep``: their activity is in the saved scan)
    from ..ledger.cursors import marks_from_json

    found, w.marks, _newest = log.scan_after(
        vault,
        marks_from_json(saved["segments"]) if resume and saved else {},
        w.after_entry if resume else None,
        keep,
    )
    w.report = verify(vault, trust=trust, progress=progress)
    suspect = {p.entry_id for p in w.report.problems if p.entry_id and p.kind in ENTRY_KINDS}
    w.entries = [loc for loc in found if loc.entry.id not in suspect]
    w.by_id = {loc.entry.id: loc for loc in w.entries}  # (links go to the window's entries only)
    return w


@dataclass
class _Page:
    """The handoff's sections as lines of Markdown, gathered before the page is put together."""

    waiting: list[str] = field(default_factory=list)
    corrections: list[str] = field(default_factory=list)
    races: list[str] = field(default_factory=list)
    reconciled: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    state: list[str] = field(default_factory=list)
    claims: list[str] = field(default_factory=list)
    work: dict[str, dict[str, list[Located]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    shown: set[str] = field(default_factory=set)  # entries a section already shows


def _integrity(w: _Window, page: _Page, items: dict[str, Any]) -> None:
    items["integrity"] = [p.to_json() for p in w.report.errors]
    for p in w.report.errors:
        target = p.file.removesuffix(".md")
        # an entry verify could read has its block id; broken framing may not
        link = f"[[{target}#^{p.entry_id}]]" if p.entry_id and p.kind != "framing" else f"[[{target}]]"
        what = f"{p.kind} {p.entry_id}" if p.entry_id else p.kind
        page.waiting.append(f"- ⚠ **integrity** {what}: {p.message} — {link}")


def _crashes(
    vault: Vault, w: _Window, settings: Settings, page: _Page, items: dict[str, Any]
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


def _pending_facts(vault: Vault, page: _Page, items: dict[str, Any]) -> None:
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


def _questions_and_corrections(vault: Vault, w: _Window, page: _Page, items: dict[str, Any]) -> None:
    owed = _owed(vault, w.coordination, w.entries)
    questions = [loc for loc in w.entries if loc.entry.type == "question" and loc.entry.id in owed]
    for loc in questions:
        e = loc.entry
        page.waiting.append(f"- ❓ open question from {e.agent}: {_said(e)} — {loc.link}")
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
        page.corrections.append(f"- {e.agent}: {_said(e)} — {status} — {loc.link}")
        page.shown.add(e.id)
    page.counts["corrections"] = len(corrections)


def _races(vault: Vault, w: _Window, page: _Page, items: dict[str, Any]) -> None:
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
            f"- {a.entry.agent} “{_said(a.entry)}” {a.link} and {b.entry.agent} "
            f"“{_said(b.entry)}” {b.link} were written without seeing each other — reconcile "
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
        page.reconciled.append(f"- reconciled by {fix.entry.agent}: {_said(fix.entry)} — {fix.link}")
    page.counts["races"] = len(open_races)


def _decisions(vault: Vault, w: _Window, page: _Page, items: dict[str, Any]) -> None:
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
    w: _Window, cps: dict[str, Any], crashed: set[str], page: _Page, items: dict[str, Any]
) -> None:
    resumes = [loc for loc in w.entries if loc.entry.type == "resume"]
    for loc in resumes:
        page.checkpoints.append(
            f"- ↻ {loc.entry.agent} recovered after a crash: {_said(loc.entry)} — {loc.link}"
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


def _state(vault: Vault, w: _Window, page: _Page, items: dict[str, Any]) -> None:
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
        f"- refused a stale edit by {loc.entry.agent}: {_said(loc.entry)} — {loc.link}"
        for loc in w.entries
        if loc.entry.type == "state-conflict"
    ]
    for loc in w.entries:
        if loc.entry.type in ("state", "state-conflict", "checkpoint", "reconcile"):
            page.shown.add(loc.entry.id)
    page.counts["state"] = len(changes)


def _claims(vault: Vault, w: _Window, page: _Page, items: dict[str, Any]) -> None:
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


def _work(w: _Window, page: _Page, items: dict[str, Any]) -> None:
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
    """Gather the handoff for the window since ``since`` (see :func:`resolve_since`), then render it.
    ``progress`` follows the verification (long only when it must check the log from scratch);
    ``trust``: the machine's pins (``NO_PINS``: the identity notes' keys, nothing pinned)."""
    from ..ledger import log
    from ..project import project_state
    from . import coordination

    w = _window(vault, since, time.time() if now is None else now, progress, trust)
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
    page, items = _Page(), out.items
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
    out.markdown = _render(vault, w, page)
    return out


# ------------------------------------------------------------------ rendering


def _summary(w: _Window, page: _Page) -> list[str]:
    counts = [
        f"{len(w.entries)} entries by {len({x.entry.agent for x in w.entries})} author(s)",
        f"{page.counts['decisions']} decision(s)",
        f"{page.counts['corrections']} correction(s)",
        f"{page.counts['races']} unreconciled race(s)",
        f"{page.counts['crashed']} probable crash(es)",
        f"{page.counts['state']} state change(s)",
        "integrity clean" if w.report.ok else f"**{len(w.report.errors)} integrity problem(s)**",
    ]
    until = w.until.replace("T", " ")
    if w.start:
        window_text = f"From {w.start.replace('T', ' ')} to {until}"
    elif w.entries:
        window_text = (
            f"From the first entry of the log ({w.entries[0].entry.ts.replace('T', ' ')}) to {until}"
        )
    else:
        window_text = f"Everything up to {until}"
    kind = "success" if not page.waiting else "warning"
    return [
        f"# Morning handoff — {w.until[:10]}",
        "",
        f"> [!{kind}] {window_text} (UTC)",
        "> " + " · ".join(counts),
        "",
    ]


def _work_lines(work: dict[str, dict[str, list[Located]]]) -> list[str]:
    md = ["## Work by agent", ""]
    if not work:
        md += ["_No other entries in this window._", ""]
    for agent in sorted(work):
        total = sum(len(v) for v in work[agent].values())
        md += [f"### {agent} ({total})", ""]
        for channel, locs in sorted(work[agent].items()):
            md.append(f"- **{channel}**")
            for loc in locs[:SHOWN_PER_CHANNEL]:
                e = loc.entry
                md.append(f"  - {e.ts[11:19]} {e.type}: {_said(e)} — {loc.link}")
            if len(locs) > SHOWN_PER_CHANNEL:
                more = len(locs) - SHOWN_PER_CHANNEL
                md.append(f"  - … {more} more in [[{locs[-1].file.removesuffix('.md')}]]")
        md.append("")
    return md


def _footer(vault: Vault) -> str:
    if not (vault.root / "Decisions.md").exists():
        return "Decisions are listed with `nexus decisions`."
    if (vault.root / "state" / "project.md").exists():
        return "See the [[Decisions]] register and [[state/project|the project state]]."
    return "See the [[Decisions]] register."


def _render(vault: Vault, w: _Window, page: _Page) -> str:
    """The page: the summary callout, then each section that has something, most important first."""
    races = page.counts["races"]
    if races:  # agents must reconcile these; a person reading "nothing needs you" would skip them
        page.waiting.append(f"- ⚔ **{races} unreconciled race(s)** between agents: see Races below")
    md = _summary(w, page)
    md += ["## Waiting for you", ""] + (page.waiting or ["Nothing needs you. ✓"]) + [""]
    if page.corrections:
        md += ["## Corrections", "", *page.corrections, ""]
    if page.races or page.reconciled:
        md += ["## Races", "", *(page.races or ["- none unreconciled"]), *page.reconciled, ""]
    for title, lines in (
        ("Decisions", page.decisions),
        ("Checkpoints", page.checkpoints),
        ("Project state", page.state),
        ("Claims", page.claims),
    ):
        if lines:
            md += [f"## {title}", "", *lines, ""]
    md += _work_lines(page.work)
    md += ["---", _footer(vault)]
    return "\n".join(md) + "\n"


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
            durable.replace(_scan_path(vault), json.dumps(handoff.scan).encode(), durable=False)
    return path


def _scan_path(vault: Vault) -> Path:
    return vault.state / "handoff.json"


def _load_scan(vault: Vault) -> dict[str, Any] | None:
    """Where the last handoff's scan stopped: derived; missing or damaged, the log is read whole."""
    import json

    try:
        data = json.loads(_scan_path(vault).read_bytes())
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("segments"), dict)
        or not isinstance(data.get("activity"), dict)
        or not isinstance(data.get("last_entry"), str)
    ):
        return None
    return data


_BOLD, _DIM, _CYAN, _YELLOW, _GREEN, _RESET = (
    "\033[1m",
    "\033[2m",
    "\033[36m",
    "\033[33m",
    "\033[32m",
    "\033[0m",
)


def for_terminal(markdown: str, *, colour: bool) -> str:
    """The handoff for a terminal: wikilinks shortened; ANSI colour when ``colour``."""
    out = []
    for line in markdown.split("\n"):
        line = re.sub(r"\[\[([^\]|]+)\|([^\]]+)\]\]", r"\2", line)
        if not colour:
            out.append(line)
            continue
        line = re.sub(r"\[\[([^\]]+)\]\]", lambda m: f"{_DIM}[[{m.group(1)}]]{_RESET}", line)
        line = re.sub(r"\*\*(.+?)\*\*", lambda m: f"{_BOLD}{m.group(1)}{_RESET}", line)
        if line.startswith("#"):
            line = f"{_BOLD}{_CYAN}{line}{_RESET}"
        elif "⚠" in line or "⛔" in line:
            line = f"{_YELLOW}{line}{_RESET}"
        elif "✓" in line:
            line = f"{_GREEN}{line}{_RESET}"
        out.append(line)
    return "\n".join(out)


def _said(entry: Any) -> str:
    """An entry's summary on the page, marked as data, not instructions, when the safety scan flags
    its words (summary or body)."""
    found = scan.entry_flags(entry.summary, entry.body)
    return f"{scan.data_notice(found)} {entry.summary}" if found else entry.summary
