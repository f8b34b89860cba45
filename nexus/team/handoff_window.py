"""The window a morning handoff covers: from where the previous handoff stopped (``--since last``,
read from its note and from ``.nexus/handoff.json``, where its scan of each segment stopped), or from
a time, up to now; the entries in it that verify (the others are integrity problems), who was active
when, and verify's report. ``handoff.py`` gathers its sections from it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..records import Located
from ..storage import meta, properties
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust


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


@dataclass
class Window:
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


def window(
    vault: Vault, since: str | None, now: float, progress: Callable[[int, int], None] | None, trust: Trust
) -> Window:
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
    w = Window(
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


def scan_path(vault: Vault) -> Path:
    return vault.state / "handoff.json"


def _load_scan(vault: Vault) -> dict[str, Any] | None:
    """Where the last handoff's scan stopped: derived; missing or damaged, the log is read whole."""
    import json

    try:
        data = json.loads(scan_path(vault).read_bytes())
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
