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

from . import durable, properties
from .errors import InputError
from .records import Located
from .settings import DEFAULTS, Settings
from .vault import Vault

SHOWN_PER_CHANNEL = 12
SHOWN_RACES = 10


@dataclass
class Handoff:
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
            props, _ = properties.parse(path.read_text(encoding="utf-8"), name)
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


def _acks_owed(
    vault: Vault,
    window: list[Located],
    everything: list[Located],
    ack_types: tuple[str, ...],
    agents: list[str],
) -> dict[str, list[str]]:
    """entry id -> agents that still owe an acknowledgement (from the acks module)."""
    try:
        from . import acks

        owed: dict[str, list[str]] = acks.unacknowledged(vault, ack_types)
        return owed
    except ImportError:
        pass
    acked: dict[str, set[str]] = {}
    for loc in everything:
        for a in loc.entry.ack:
            acked.setdefault(a, set()).add(loc.entry.agent)
    out: dict[str, list[str]] = {}
    for loc in window:
        e = loc.entry
        if e.type in ack_types:
            missing = [a for a in agents if a != e.agent and a not in acked.get(e.id, set())]
            if missing:
                out[e.id] = missing
    return out


def _races(vault: Vault, settings: Settings) -> tuple[list[Any] | None, str | None]:
    try:
        from . import races
    except ImportError:
        return None, "race detection is not installed (nexus/races.py)"
    found: list[Any] = races.find_races(vault, settings.race_window_seconds, ack_types=settings.ack_types)
    return found, None


def _pending(vault: Vault) -> list[Any] | None:
    """Facts waiting for a person's approval, from the retention bank."""
    try:
        from . import bank
    except ImportError:
        return None  # HOOK: without the retention bank (nexus/bank.py) the handoff skips pending facts
    items: list[Any] = bank.pending(vault)
    return items


def _pending_line(item: Any) -> str:
    text = next(
        (v for a in ("content", "summary", "text") if isinstance(v := getattr(item, a, None), str) and v),
        str(item),
    )
    who = " · ".join(str(v) for a in ("agent", "type") if (v := getattr(item, a, None)))
    link = getattr(item, "link", None)
    return f"- {who + ': ' if who else ''}{' '.join(text.split())[:200]}" + (
        f" — {link}" if isinstance(link, str) else ""
    )


def build(  # noqa: C901
    vault: Vault,
    settings: Settings = DEFAULTS,
    *,
    since: str | None = "last",
    now: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Handoff:
    """Gather and render the handoff for the window since ``since`` (see :func:`resolve_since`).
    ``progress`` follows the verification (long only when it must check the log from scratch)."""
    from . import checkpoints, decisions, entries, log, project_state, verify
    from .identity import all_identities

    now = time.time() if now is None else now
    start = resolve_since(vault, since, now)
    prev = previous(vault) if since in (None, "last") else None
    after_entry = prev[2].get("last_entry") if prev else None
    after_version = int(prev[2].get("last_state_version") or 0) if prev else 0
    until = _utc(now)
    stale_minutes = float(settings.stale_checkpoint_minutes)
    idents = all_identities(vault)
    agents = [n for n, i in idents.items() if i.kind == "agent"]
    start_ms = None if start is None else int(checkpoints.epoch(start) * 1000)

    def fresh(entry_id: str | None, ts: str) -> bool:
        """In the window: after the previous handoff's last entry, or at/after --since."""
        if isinstance(after_entry, str):
            return entry_id is not None and entry_id > after_entry
        if start_ms is None:
            return True
        return entries.decode_id_ms(entry_id) >= start_ms if entry_id else ts >= (start or "")

    # Only the window is read: after the previous handoff, from where its scan stopped in each
    # segment (``.nexus/handoff.json``, saved by ``write``); otherwise the whole log, streamed.
    saved = _load_scan(vault)
    resume = saved is not None and isinstance(after_entry, str) and saved["last_entry"] == after_entry
    last_activity: dict[str, str] = dict(saved["activity"]) if resume and saved else {}

    def keep(e: Any) -> bool:
        if e.ts > last_activity.get(e.agent, ""):
            last_activity[e.agent] = e.ts
        return fresh(e.id, e.ts)

    # (resuming, older ids are skipped before ``keep``: their activity is in the saved scan)
    from .cursors import marks_from_json, marks_to_json

    window, marks, _newest = log.scan_after(
        vault,
        marks_from_json(saved["segments"]) if resume and saved else {},
        after_entry if resume else None,
        keep,
    )
    report = verify.verify(vault, progress=progress)
    # Only entries that verify are anyone's words here; the others are listed under integrity.
    suspect = {p.entry_id for p in report.problems if p.entry_id and p.kind in verify.ENTRY_KINDS}
    window = [loc for loc in window if loc.entry.id not in suspect]
    by_id = {loc.entry.id: loc for loc in window}  # (links go to the window's entries only)
    newest = log.tail(vault, 1)
    shown: set[str] = set()
    out = Handoff(
        since=start,
        until=until,
        last_entry=newest[-1].entry.id if newest else after_entry,
        last_state_version=max([v.version for v in project_state.versions(vault)], default=0),
    )
    out.scan = {"last_entry": out.last_entry, "segments": marks_to_json(marks), "activity": last_activity}
    md: list[str] = []
    items = out.items

    # ---- waiting for a person
    waiting: list[str] = []
    items["integrity"] = [p.to_json() for p in report.errors]
    for p in report.errors:
        target = p.file.removesuffix(".md")
        # an entry verify could read has its block id; broken framing may not
        link = f"[[{target}#^{p.entry_id}]]" if p.entry_id and p.kind != "framing" else f"[[{target}]]"
        what = f"{p.kind} {p.entry_id}" if p.entry_id else p.kind
        waiting.append(f"- ⚠ **integrity** {what}: {p.message} — {link}")
    cps = checkpoints.all_checkpoints(vault)
    crashed = {
        a
        for a, cp in cps.items()
        if checkpoints.probable_crash(cp, stale_minutes, last_activity=last_activity.get(a), now=now)
    }
    items["checkpoints"] = [{**cp.to_json(), "probable_crash": a in crashed} for a, cp in cps.items()]
    for a in sorted(crashed):
        cp = cps[a]
        waiting.append(
            f"- ⚠ **{a} probably crashed** during “{cp.task}”: in progress, idle since "
            f"{cp.saved.replace('T', ' ')}; last step “{cp.step}”, next “{cp.next}” — "
            f"[[agents/{a}/checkpoint]] (`nexus checkpoint resume --agent {a}`)"
        )
    for a, cp in sorted(cps.items()):
        if cp.status == "blocked":
            waiting.append(
                f"- ⛔ **{a} is blocked** on “{cp.task}”: {cp.step}; needs: {cp.next} — "
                f"[[agents/{a}/checkpoint]]"
            )
    pending = _pending(vault)
    items["pending_facts"] = None if pending is None else [str(getattr(x, "id", x)) for x in pending]
    if pending:
        waiting.append(
            f"- 📥 **{len(pending)} fact(s) wait for your approval** in the retention bank "
            "(tick them in memory/REVIEW.md, or `nexus review`):"
        )
        waiting += ["  " + _pending_line(x) for x in pending]
    owed = _acks_owed(vault, window, window, settings.ack_types, agents)
    questions = [loc for loc in window if loc.entry.type == "question" and loc.entry.id in owed]
    for loc in questions:
        e = loc.entry
        waiting.append(f"- ❓ open question from {e.agent}: {e.summary} — {loc.link}")
        shown.add(e.id)
    items["open_questions"] = [q.entry.id for q in questions]

    # ---- corrections
    corrections = [loc for loc in window if loc.entry.type == "correction"]
    items["corrections"] = [
        {
            "id": c.entry.id,
            "by": c.entry.agent,
            "summary": c.entry.summary,
            "not_acked_by": owed.get(c.entry.id, []),
        }
        for c in corrections
    ]
    corr_lines = []
    for loc in corrections:
        e = loc.entry
        missing = owed.get(e.id, [])
        status = f"**not acknowledged by {', '.join(missing)}**" if missing else "acknowledged by all"
        corr_lines.append(f"- {e.agent}: {e.summary} — {status} — {loc.link}")
        shown.add(e.id)

    # ---- races
    found, race_note = _races(vault, settings)
    open_races = [r for r in (found or []) if r.resolved_by is None]  # until reconciled, every time
    items["races"] = [list(r.key) for r in open_races]
    race_lines = [
        f"- {r.a.entry.agent} “{r.a.entry.summary}” {r.a.link} and {r.b.entry.agent} "
        f"“{r.b.entry.summary}” {r.b.link} were written without seeing each other — reconcile "
        "with an entry of type `reconcile` acking both"
        for r in open_races[:SHOWN_RACES]
    ]
    if len(open_races) > SHOWN_RACES:
        race_lines.append(f"- … {len(open_races) - SHOWN_RACES} more: `nexus races --unresolved`")
    for r in open_races:
        shown.update((r.a.entry.id, r.b.entry.id))
    resolved = [r for r in (found or []) if r.resolved_by is not None and r.resolved_by in by_id]
    items["races_reconciled"] = [list(r.key) for r in resolved]

    # ---- decisions
    all_dec = decisions.all_decisions(vault)
    made = [d for d in all_dec if fresh(d.entry, d.date)]
    made_ids = {d.id for d in made}
    superseded = [d for d in all_dec if d.superseded_by in made_ids and d.id not in made_ids]
    items["decisions_made"] = [d.id for d in made]
    items["decisions_superseded"] = [d.id for d in all_dec if d.superseded_by in made_ids]
    dec_lines = []
    for d in made:
        status = "" if d.status == "active" else f" (since superseded by {d.superseded_by})"
        entry = by_id.get(d.entry or "")
        dec_lines.append(
            f"- {d.link} **{d.title}** by {d.author}{status}: {decisions.one_line(d)}"
            + (f" — {entry.link}" if entry else "")
        )
        if d.entry:
            shown.add(d.entry)
    for d in superseded:
        dec_lines.append(f"- ~~{d.link} {d.title}~~ superseded by {d.superseded_by}")

    # ---- checkpoints
    cp_lines = []
    resumes = [loc for loc in window if loc.entry.type == "resume"]
    for loc in resumes:
        cp_lines.append(f"- ↻ {loc.entry.agent} recovered after a crash: {loc.entry.summary} — {loc.link}")
        shown.add(loc.entry.id)
    for a, cp in sorted(cps.items()):
        if a in crashed or cp.status == "blocked":
            continue
        mark = "✓ done" if cp.status == "done" else "… in progress"
        cp_lines.append(f"- {mark}: {a} — {cp.task}: {cp.step}; next: {cp.next} — [[agents/{a}/checkpoint]]")
    items["resumed"] = [loc.entry.id for loc in resumes]

    # ---- project state
    changes = [
        v
        for v in project_state.versions(vault)
        if v.version > after_version and (after_version or start is None or v.ts >= start)
    ]
    items["state_changes"] = [v.version for v in changes]
    state_lines = [
        f"- v{v.version} by {v.author}{' (a person, in Obsidian)' if v.kind == 'human' else ''}: "
        f"{v.summary} — [[{v.path.removesuffix('.md')}|v{v.version}]]"
        for v in changes
    ]
    conflicts = [loc for loc in window if loc.entry.type == "state-conflict"]
    state_lines += [
        f"- refused a stale edit by {loc.entry.agent}: {loc.entry.summary} — {loc.link}" for loc in conflicts
    ]
    for loc in window:
        if loc.entry.type in ("state", "state-conflict", "checkpoint", "reconcile"):
            shown.add(loc.entry.id)

    # ---- work by agent (everything not shown above)
    work: dict[str, dict[str, list[Located]]] = {}
    for loc in window:
        if loc.entry.id not in shown:
            work.setdefault(loc.entry.agent, {}).setdefault(loc.entry.channel, []).append(loc)
    items["work"] = {
        a: {c: [x.entry.id for x in locs] for c, locs in chans.items()} for a, chans in work.items()
    }

    # ---- render
    day = until[:10]
    counts = [
        f"{len(window)} entries by {len({x.entry.agent for x in window})} author(s)",
        f"{len(made)} decision(s)",
        f"{len(corrections)} correction(s)",
        f"{len(open_races)} unreconciled race(s)",
        f"{len(crashed)} probable crash(es)",
        f"{len(changes)} state change(s)",
        "integrity clean" if report.ok else f"**{len(report.errors)} integrity problem(s)**",
    ]
    if open_races:  # agents must reconcile these; a person reading "nothing needs you" would skip them
        waiting.append(f"- ⚔ **{len(open_races)} unreconciled race(s)** between agents: see Races below")
    if start:
        window_text = f"From {start.replace('T', ' ')} to {until.replace('T', ' ')}"
    elif window:
        window_text = (
            f"From the first entry of the log ({window[0].entry.ts.replace('T', ' ')}) "
            f"to {until.replace('T', ' ')}"
        )
    else:
        window_text = f"Everything up to {until.replace('T', ' ')}"
    kind = "success" if not waiting else "warning"
    md += [
        f"# Morning handoff — {day}",
        "",
        f"> [!{kind}] {window_text} (UTC)",
        "> " + " · ".join(counts),
        "",
    ]
    md += ["## Waiting for you", ""] + (waiting or ["Nothing needs you. ✓"]) + [""]
    if corr_lines:
        md += ["## Corrections", "", *corr_lines, ""]
    if race_lines or race_note or resolved:
        md += ["## Races", ""] + (race_lines or ["- none unreconciled"])
        for r in resolved:
            fix = by_id[r.resolved_by or ""]
            md.append(f"- reconciled by {fix.entry.agent}: {fix.entry.summary} — {fix.link}")
        md += [f"- _{race_note}_"] if race_note else []
        md += [""]
    if dec_lines:
        md += ["## Decisions", "", *dec_lines, ""]
    if cp_lines:
        md += ["## Checkpoints", "", *cp_lines, ""]
    if state_lines:
        md += ["## Project state", "", *state_lines, ""]
    md += ["## Work by agent", ""]
    if not work:
        md += ["_No other entries in this window._", ""]
    for agent in sorted(work):
        total = sum(len(v) for v in work[agent].values())
        md += [f"### {agent} ({total})", ""]
        for channel, locs in sorted(work[agent].items()):
            md.append(f"- **{channel}**")
            for loc in locs[:SHOWN_PER_CHANNEL]:
                e = loc.entry
                md.append(f"  - {e.ts[11:19]} {e.type}: {e.summary} — {loc.link}")
            if len(locs) > SHOWN_PER_CHANNEL:
                more = len(locs) - SHOWN_PER_CHANNEL
                md.append(f"  - … {more} more in [[{locs[-1].file.removesuffix('.md')}]]")
        md.append("")
    md += [
        "---",
        "See the [[Decisions]] register and [[state/project|the project state]]."
        if (vault.root / "state" / "project.md").exists()
        else "See the [[Decisions]] register.",
    ]
    if not (vault.root / "Decisions.md").exists():
        md[-1] = "Decisions are listed with `nexus decisions`."
    out.markdown = "\n".join(md) + "\n"
    return out


def write(vault: Vault, handoff: Handoff) -> Path:
    """Save as ``handoff/YYYY-MM-DD.md`` (next free ``-N`` suffix when that day already has one)."""
    day = handoff.until[:10]
    props = {
        "since": handoff.since,
        "until": handoff.until,
        "last_entry": handoff.last_entry,
        "last_state_version": handoff.last_state_version,
        "tags": ["nexus/handoff"],
    }
    text = properties.render(props, handoff.markdown).encode("utf-8")
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
