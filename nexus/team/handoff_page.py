"""The morning handoff's page: its sections as lines of Markdown (``Page``, filled by ``handoff.py``),
put together most important first under a summary callout, and shown on a terminal. An entry's
words are marked as data when the safety scan flags them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..memory import scan
from ..records import Located
from ..storage.vault import Vault
from .handoff_window import Window

SHOWN_PER_CHANNEL = 12


@dataclass
class Page:
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


def _summary(w: Window, page: Page) -> list[str]:
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
                md.append(f"  - {e.ts[11:19]} {e.type}: {said(e)} — {loc.link}")
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


def render(vault: Vault, w: Window, page: Page) -> str:
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


def said(entry: Any) -> str:
    """An entry's summary on the page, marked as data, not instructions, when the safety scan flags
    its words (summary or body)."""
    found = scan.entry_flags(entry.summary, entry.body)
    return f"{scan.data_notice(found)} {entry.summary}" if found else entry.summary
