"""Forgetting safely: memory entries leave ``MEMORY.md``/``USER.md`` only into ``archive/memory/``.

* ``sweep`` archives plan-shaped entries ("plans to", "pending", "offered to", "will", …) older than an
  age (first-seen times come from the ``.nexus/memory/`` sidecar), never decisions or preferences;
* ``consolidate`` replaces a store's entries with a rewritten set only when every old entry is still
  present (exactly, or as a substring of a new entry, whitespace folded) or explicitly archived;
* ``restore`` brings an archived entry back, byte for byte (and a retired fact, through ``facts``).

An archived entry is a note ``archive/memory/ID.md``: frontmatter (target, agent, first_seen, archived,
reason, sha256) and the entry's exact text as the body.
"""

from __future__ import annotations

import calendar
import contextlib
import hashlib
import os
import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, IntegrityError, MemoryFullError, NotFoundError
from ..records import ArchivedEntry, MemoryResult
from ..storage import durable
from ..storage.vault import Vault
from . import bounded as memory
from . import scan

PLAN_RE = re.compile(
    r"\b(?:plans?\s+to|planning\s+to|planned|pending|offered\s+to|will|going\s+to|todo|to-do|"
    r"follow[\s-]?up|next\s+step|intends?\s+to|promised\s+to)\b",
    re.IGNORECASE,
)
KEEP_RE = re.compile(
    r"\b(?:decided|decision|decisions|agreed|chose|chosen|settled\s+on|prefers?|preferred|preference|"
    r"preferences|likes|dislikes|always|never|wants\s+all)\b",
    re.IGNORECASE,
)
ID_RE = re.compile(r"m-\d{8}t\d{6}z-[0-9a-f]{6}")


def archive_dir(vault: Vault) -> Path:
    return vault.inside(vault.root / "archive" / "memory")


def is_plan(entry: str) -> bool:
    """Plan-shaped and not a decision or preference."""
    return bool(PLAN_RE.search(entry)) and not KEEP_RE.search(entry)


def _parse_ts(ts: str) -> float:
    return float(calendar.timegm(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ")))


# ---------------------------------------------------------------- archived entry notes


def _note_text(e: ArchivedEntry) -> str:
    import yaml

    props = {
        "kind": "memory-entry",
        "id": e.id,
        "target": e.target,
        "agent": e.agent,
        "first_seen": e.first_seen,
        "archived": e.archived,
        "reason": e.reason,
        "sha256": hashlib.sha256(e.text.encode("utf-8")).hexdigest(),
        "tags": ["nexus/archived-memory"],
    }
    fm = yaml.safe_dump(props, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{fm}---\n{e.text}\n"


def _write_archived(vault: Vault, st: memory.Store, text: str, first: str, reason: str) -> ArchivedEntry:
    now = memory.utc_now()
    stamp = now.replace("-", "").replace(":", "").lower()
    entry_id = f"m-{stamp}-{secrets.token_hex(3)}"
    path = archive_dir(vault) / f"{entry_id}.md"
    e = ArchivedEntry(
        entry_id, st.target, st.agent, text, first, now, reason, path.relative_to(vault.root).as_posix()
    )
    durable.create_exclusive(path, _note_text(e).encode("utf-8"))
    return e


def load_archived(vault: Vault, path: Path) -> ArchivedEntry:
    from ..storage import notes

    raw = path.read_text(encoding="utf-8")
    props, _ = notes.parse(raw, vault.rel(path))
    start = raw.find("\n---\n", 3)
    if not raw.startswith("---\n") or start < 0:
        raise IntegrityError(f"{vault.rel(path)}: not an archived memory entry (no frontmatter)")
    text = raw[start + 5 :]
    text = text[:-1] if text.endswith("\n") else text
    agent = props.get("agent")
    return ArchivedEntry(
        str(props.get("id") or path.stem),
        str(props.get("target", "memory")),
        str(agent) if agent else None,
        text,
        str(props.get("first_seen", "")),
        str(props.get("archived", "")),
        str(props.get("reason", "")),
        vault.rel(path),
    )


def archived(vault: Vault) -> list[ArchivedEntry]:
    folder = archive_dir(vault)
    if not folder.is_dir():
        return []
    return [load_archived(vault, p) for p in sorted(folder.glob("m-*.md"))]


# ---------------------------------------------------------------- sweep


@dataclass(frozen=True)
class SweepReport:
    """What a memory sweep archived, and how many plans it kept because they are still young."""

    archived: tuple[ArchivedEntry, ...]
    kept_plans: int  # plan-shaped entries still younger than the age
    older_than_days: float

    def to_json(self) -> dict[str, object]:
        return {
            "archived": [a.to_json() for a in self.archived],
            "kept_plans": self.kept_plans,
            "older_than_days": self.older_than_days,
        }


def _stores(vault: Vault, agent: str | None) -> list[memory.Store]:
    """The stores a sweep may prune: agents' MEMORY.md only. The user profile (USER.md) is never
    pruned automatically: what a person is and wants is theirs to change."""
    agents = (
        [agent]
        if agent
        else sorted(p.name for p in vault.agents_dir.iterdir() if (p / "MEMORY.md").is_file())
        if vault.agents_dir.is_dir()
        else []
    )
    return [memory.store(vault, "memory", a) for a in agents]


def _kept_path(vault: Vault, st: memory.Store) -> Path:
    return memory.dates_path(vault, st).with_name(f"{st.key}-kept.json")


def _kept(vault: Vault, st: memory.Store) -> set[str]:
    """Digests of the entries someone restored from the archive: a sweep never takes them again."""
    import json

    try:
        return {str(d) for d in json.loads(_kept_path(vault, st).read_bytes()).get("kept", [])}
    except (FileNotFoundError, ValueError, AttributeError, TypeError):
        return set()


def _keep(vault: Vault, st: memory.Store, text: str) -> None:
    import json

    kept = _kept(vault, st) | {hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]}
    durable.replace(_kept_path(vault, st), json.dumps({"store": st.key, "kept": sorted(kept)}).encode())


def sweep(
    vault: Vault,
    *,
    older_than_days: float,
    limits: dict[str, int],
    agent: str | None = None,
    now: float | None = None,
) -> SweepReport:
    """Archive, then remove, plan-shaped entries first seen more than ``older_than_days`` ago."""
    now = time.time() if now is None else now
    cutoff = now - older_than_days * 86400
    done: list[ArchivedEntry] = []
    kept = 0
    for st in _stores(vault, agent):
        with memory.locked(vault, st):
            raw = memory.read_raw(st)
            entries = list(dict.fromkeys(memory.parse(raw)))
            dates = memory.load_dates(vault, st)
            kept_by_hand = _kept(vault, st)
            stay: list[str] = []
            for e in entries:
                first = memory.first_seen(dates, e)
                if hashlib.sha256(e.encode("utf-8")).hexdigest()[:20] in kept_by_hand:
                    stay.append(e)  # restored from the archive by someone: never swept again
                elif not is_plan(e):
                    stay.append(e)
                elif first is None or _parse_ts(first) > cutoff:
                    kept += 1
                    stay.append(e)
                else:
                    done.append(
                        _write_archived(
                            vault, st, e, first, f"sweep: plan-shaped, older than {older_than_days:g} days"
                        )
                    )
            if stay != entries:
                memory.write_entries(vault, st, raw, stay, limits[st.target])
            elif any(memory.first_seen(dates, e) is None for e in entries):
                memory.save_dates(vault, st, entries, dates, memory.utc_now())  # the file is untouched
    return SweepReport(tuple(done), kept, older_than_days)


# ---------------------------------------------------------------- consolidate


def _fold(text: str) -> str:
    return " ".join(text.split())


def consolidate(
    vault: Vault,
    target: str,
    agent: str | None,
    new_text: str,
    *,
    limit: int,
    archive: Sequence[str] = (),
    exact: Sequence[str] = (),
    expect: Sequence[str] | None = None,
) -> tuple[MemoryResult, tuple[ArchivedEntry, ...]]:
    """Replace every entry of a store by the entries of ``new_text`` (``§``-separated) only if no old
    entry would be lost: each is still present or matched by one of the ``archive`` substrings, or is
    one of the ``exact`` entries (archived as they are). ``expect``: the entries a plan numbered; the
    store must still hold exactly those."""
    st = memory.store(vault, target, agent)
    new = list(dict.fromkeys(memory.parse(new_text)))
    if not new:
        raise InputError("the consolidated set is empty; to archive everything pass --archive for each")
    for e in new:
        scan.check(e, f"consolidated entry {e[:40]!r}", vault.root)
    if memory.size(new) > limit:
        raise MemoryFullError(
            f"the consolidated set is {memory.size(new):,}/{limit:,} chars; shorten it",
            tuple(new),
            f"{memory.size(new):,}/{limit:,}",
        )
    with memory.locked(vault, st):
        raw = memory.read_raw(st)
        old = list(dict.fromkeys(memory.parse(raw)))
        if expect is not None and list(expect) != old:
            raise InputError(
                f"{st.label} changed since the plan was written (its entries were renumbered);"
                " read the numbered list again (`nexus memory list`) and redo the plan"
            )
        to_archive: list[str] = [o for o in old if o in exact]
        for needle in archive:
            hits = [o for o in old if needle and needle in o]
            if not hits:
                raise NotFoundError(f"--archive {needle!r} matches no current entry of {st.label}")
            to_archive.extend(h for h in hits if h not in to_archive)
        folded_new = [_fold(n) for n in new]
        lost = [o for o in old if o not in to_archive and not any(_fold(o) in n for n in folded_new)]
        if lost:
            raise InputError(
                f"refusing to consolidate {st.label}: {len(lost)} old entr{'y' if len(lost) == 1 else 'ies'}"
                " would be lost; keep each in the new set or archive it (--archive TEXT): "
                + " ".join(f"[{i}] {p!r}" for i, p in enumerate(memory.previews(lost), 1))
            )
        backup, moved = _archive_and_write(vault, st, raw, old, new, to_archive, limit)
    res = memory.result(
        vault,
        st,
        f"Consolidated {len(old)} entries into {len(new)} ({len(moved)} archived).",
        new,
        limit,
        True,
        backup,
    )
    return res, moved


def _archive_and_write(
    vault: Vault,
    st: memory.Store,
    raw: str,
    old: Sequence[str],
    new: Sequence[str],
    to_archive: Sequence[str],
    limit: int,
) -> tuple[str | None, tuple[ArchivedEntry, ...]]:
    """Archive ``to_archive`` and rewrite the store as ``new`` (caller holds the lock): both land or
    neither does (the archived notes are removed when the store still holds its old text)."""
    dates = memory.load_dates(vault, st)
    now = memory.utc_now()
    moved: list[ArchivedEntry] = []
    try:
        for o in to_archive:
            first = memory.first_seen(dates, o) or now
            moved.append(_write_archived(vault, st, o, first, "consolidate: archived explicitly"))
        overrides = _inherited_dates(dates, old, new)
        backup = memory.write_entries(vault, st, raw, new, limit, first_seen_overrides=overrides)
    except BaseException:
        if memory.read_raw(st) == raw:  # (the rewrite may have landed: a folder's fsync failed after it)
            for m in moved:
                with contextlib.suppress(OSError):
                    (vault.root / m.path).unlink()
        raise
    return backup, tuple(moved)


def _inherited_dates(dates: dict[str, str], old: Sequence[str], new: Sequence[str]) -> dict[str, str]:
    """A new entry that contains an old one keeps the old one's first-seen time."""
    overrides = {}
    for n in new:
        known = sorted(d for d in (memory.first_seen(dates, o) for o in old if _fold(o) in _fold(n)) if d)
        if known:
            overrides[n] = known[0]
    return overrides


# ---------------------------------------------------------------- consolidating from a plan


PLAN_HELP = """A plan names the store's entries by their numbers (`nexus memory list`, or the list a
"memory full" error prints), one action a line; '#' starts a comment:

    keep 1 4
    merge 2 3: CI runs on a 2-core box; the full suite takes 6 minutes
    archive 5

Every entry is kept, merged (its original archived, recoverable with `nexus memory restore`) or archived.
A merged text may go on over lines that start with two spaces. JSON works too:
{"keep": [1, 4], "merge": [{"from": [2, 3], "text": "…"}], "archive": [5]}"""


Plan = tuple[list[int], list[tuple[list[int], str]], list[int]]  # (keep, [(merged, new text)], archive)


def parse_plan(text: str, count: int) -> Plan:
    """(keep, [(merged numbers, new text)], archive) from a plan over ``count`` entries, checked: every
    number in range, named once, every entry named."""
    stripped = text.strip()
    plan = _json_plan(stripped) if stripped.startswith("{") else _line_plan(text)
    _check_plan(plan, count)
    return plan


def _json_plan(text: str) -> Plan:
    import json

    try:
        data = json.loads(text)
        keep = [int(n) for n in data.get("keep", [])]
        merges = [([int(n) for n in m["from"]], str(m["text"])) for m in data.get("merge", [])]
        drop = [int(n) for n in data.get("archive", [])]
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise InputError(f"the plan is not valid JSON of keep/merge/archive: {err}") from None
    return keep, merges, drop


def _line_plan(text: str) -> Plan:
    """A plan one action a line ('#' starts a comment; a line starting with two spaces goes on the
    merged text above it)."""
    import re

    keep: list[int] = []
    merges: list[tuple[list[int], str]] = []
    drop: list[int] = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip() if not raw.startswith("  ") else raw
        if not line.strip():
            continue
        if raw.startswith("  ") and merges:
            merges[-1] = (merges[-1][0], merges[-1][1] + "\n" + raw.strip())
            continue
        m = re.fullmatch(r"\s*(keep|archive)\s+([\d ,]+)\s*", line) or re.fullmatch(
            r"\s*(merge)\s+([\d ,]+):\s*(.+)", line
        )
        if m is None:
            raise InputError(
                f"plan line {i} {raw.strip()!r}: use 'keep N…', 'merge N…: TEXT' or 'archive N…'"
            )
        numbers = [int(n) for n in re.findall(r"\d+", m.group(2))]
        if m.group(1) == "merge":
            merges.append((numbers, m.group(3).strip()))
        else:
            (keep if m.group(1) == "keep" else drop).extend(numbers)
    return keep, merges, drop


def _check_plan(plan: Plan, count: int) -> None:
    """Every number in range, named once, every entry named, every merge with a text."""
    keep, merges, drop = plan
    named = keep + drop + [n for nums, _ in merges for n in nums]
    bad = sorted({n for n in named if not 1 <= n <= count})
    if bad:
        raise InputError(
            f"the plan names entr{'y' if len(bad) == 1 else 'ies'} {bad} but the store has "
            f"{count} (numbered 1-{count})"
        )
    twice = sorted({n for n in named if named.count(n) > 1})
    if twice:
        raise InputError(f"the plan names {twice} more than once: keep, merge or archive each entry once")
    left = [n for n in range(1, count + 1) if n not in named]
    if left:
        raise InputError(
            f"the plan says nothing about entr{'y' if len(left) == 1 else 'ies'} {left}: "
            "keep, merge or archive every entry"
        )
    if any(not t.strip() for _, t in merges):
        raise InputError("a merge in the plan has no text")


def consolidate_plan(
    vault: Vault, target: str, agent: str | None, plan: str, *, limit: int
) -> tuple[MemoryResult, tuple[ArchivedEntry, ...]]:
    """Consolidate a store from a plan (``PLAN_HELP``): kept entries stay, each merge becomes one new
    entry and its originals are archived, archived ones are archived."""
    st = memory.store(vault, target, agent)
    old = list(dict.fromkeys(memory.parse(memory.read_raw(st))))
    keep, merges, drop = parse_plan(plan, len(old))
    new = [old[n - 1] for n in sorted(keep)] + [text for _, text in merges]
    gone = [old[n - 1] for n in drop] + [old[n - 1] for nums, _ in merges for n in nums]
    if not new:
        raise InputError("the plan keeps nothing; a store cannot be consolidated into no entries")
    return consolidate(vault, target, agent, "\n§\n".join(new), limit=limit, exact=gone, expect=old)


# ---------------------------------------------------------------- restore


def find(vault: Vault, entry_id: str) -> ArchivedEntry:
    if not ID_RE.fullmatch(entry_id):
        raise NotFoundError(f"no archived memory entry {entry_id!r}")
    path = archive_dir(vault) / f"{entry_id}.md"
    if not path.is_file():
        raise NotFoundError(f"no archived memory entry {entry_id!r} (see `nexus memory restore`)")
    return load_archived(vault, path)


def restore(vault: Vault, entry_id: str, *, limits: dict[str, int]) -> MemoryResult:
    """Put an archived entry back into its store, byte for byte (its age restarts now), and delete the
    archive note."""
    e = find(vault, entry_id)
    scan.check(e.text, f"archived entry {entry_id}", vault.root)  # the note may have been edited by hand
    st = memory.store(vault, e.target, e.agent)
    limit = limits[e.target]
    with memory.locked(vault, st):
        raw = memory.read_raw(st)
        entries = list(dict.fromkeys(memory.parse(raw)))
        if e.text in entries:
            new = entries
            msg = "Entry was already there."
        else:
            new = [*entries, e.text]
            if memory.size(new) > limit:
                raise MemoryFullError(
                    f"restoring {entry_id} ({len(e.text):,} chars) would put {st.label} at "
                    f"{memory.size(new):,}/{limit:,} chars; make room first (it stays archived)",
                    tuple(memory.display(entries, st.label, vault.root)),
                    f"{memory.size(entries):,}/{limit:,}",
                )
            msg = f"Restored {entry_id}."
        now = memory.utc_now()
        _keep(vault, st, e.text)  # restoring says "keep this": the next sweep must not take it again
        backup = memory.write_entries(vault, st, raw, new, limit, first_seen_overrides={e.text: now})
        os.unlink(vault.root / e.path)
        durable.fsync_dir(archive_dir(vault))
    return memory.result(vault, st, msg, new, limit, new != entries, backup)
