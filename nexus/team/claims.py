"""Claims: an agent takes paths of a project, or a named task, for a while.

A claim is a signed log entry (channel ``claims``, type ``claim``); a renewal is another ``claim``
entry naming the claim it renews; a release is a ``release`` entry naming it. Their bodies carry
the fields as ``key: value`` lines (``nexus/vault_template/NEXUS-FORMAT.md``, "Claims"). What holds now is
a fold of those entries in id order (:func:`fold`), the same on every machine:

- a claim that overlaps, at its time, an active claim of another agent where either is exclusive is
  *lost* to that earlier claim (only entries written apart, on two copies of the vault, can do this:
  on one copy the check under the log lock refuses it);
- a renewal moves the expiry of its holder's active claim; a release ends it at once;
- a claim past its expiry is expired.

Patterns are globs relative to the project root (``*`` and ``?`` within a path part, ``**`` any
number of parts, a pattern naming a folder covers what is under it), or ``task:NAME``. This module
is pure: no I/O (``claimlog.py`` reads the entries).
"""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..records import Claim
from ..storage import entries
from .claimview import TASK as TASK
from .claimview import glob_regex
from .claimview import matches as matches

CHANNEL = "claims"
CLAIM, RELEASE = "claim", "release"
MODES = ("exclusive", "shared")
MAX_TTL_SECONDS = 24 * 3600  # a claim lasts at most a day; renew it to keep it
DEFAULT_TTL = "30m"
SOON_SECONDS = 15 * 60  # the brief lists the agent's own claims expiring within this
_ISO_RE = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z")
_QUOTED = re.compile(r"`([^`]+)`")
_TTL_RE = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_TASK_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_BAD_PATTERN = re.compile(
    r"[\x00-\x1f\x7f$<%`\\\[\]{}|]"
)  # (what a body would escape, or globs we do not read)


@dataclass(frozen=True)
class Event:
    """One verified claim or release entry, as the fold reads it."""

    id: str
    type: str
    agent: str
    file: str
    claim: str | None = None  # renewal, release: the claim they name
    project: str = ""
    patterns: tuple[str, ...] = ()
    mode: str = "exclusive"
    expires: str = ""
    reason: str = ""

    @property
    def ms(self) -> int:
        return entries.decode_id_ms(self.id)

    def to_json(self) -> list[Any]:
        return [
            self.id,
            self.type,
            self.agent,
            self.file,
            self.claim,
            self.project,
            list(self.patterns),
            self.mode,
            self.expires,
            self.reason,
        ]

    @classmethod
    def from_json(cls, raw: Any) -> Event:
        i, t, a, f, c, p, pats, m, e, r = raw
        return cls(i, t, a, f, c, p, tuple(pats), m, e, r)


# ------------------------------------------------------------------ input


def parse_ttl(text: str) -> int:
    """Seconds in a TTL like ``45m``, ``2h``, ``1h30m``, ``90s`` (a bare number: minutes)."""
    raw = text.strip().lower()
    if raw.lstrip("-").isdigit():
        raw += "m"
    found = _TTL_RE.fullmatch(raw) if raw and not raw.startswith("-") else None
    if found is None or not any(found.groups()):
        raise InputError(f"--ttl {text!r}: expected a positive duration like 45m, 2h or 1h30m")
    d, h, m, s = (int(x or 0) for x in found.groups())
    seconds = ((d * 24 + h) * 60 + m) * 60 + s
    if seconds <= 0:
        raise InputError(f"--ttl {text!r}: a claim needs a time to live above zero")
    if seconds > MAX_TTL_SECONDS:
        raise InputError(f"--ttl {text!r}: at most 24h (renew the claim to keep it longer)")
    return seconds


def check_pattern(pattern: str, root: Path) -> str:
    """``pattern`` as stored: a glob relative to ``root`` (an absolute one inside it made relative),
    or ``task:NAME``. One clear InputError for a pattern that is empty or leaves the project."""
    raw = pattern.strip()
    if not raw:
        raise InputError("an empty pattern: name a path glob relative to the project, or task:NAME")
    if raw.startswith(TASK):
        name = raw[len(TASK) :]
        if not _TASK_RE.fullmatch(name):
            raise InputError(f"{pattern!r}: a task name is lowercase letters, digits, dots and dashes")
        return raw
    if _BAD_PATTERN.search(raw):
        raise InputError(f"{pattern!r}: a pattern may use * ? ** and path characters only")
    if raw.startswith("/") or re.match(r"[A-Za-z]:[\\/]", raw):
        path = Path(raw)
        root_resolved = root.resolve()
        try:
            raw = (
                path.resolve().relative_to(root_resolved).as_posix()
                if "*" not in raw and "?" not in raw
                else Path(posixpath.normpath(raw)).relative_to(root_resolved).as_posix()
            )
        except ValueError:
            raise InputError(f"{pattern!r} is outside the project {root_resolved}") from None
    norm = posixpath.normpath(raw)
    if norm == ".." or norm.startswith("../"):
        raise InputError(f"{pattern!r} leaves the project (patterns are relative to {root})")
    return "**" if norm == "." else norm


def project_root(start: Path) -> Path:
    """The project ``start`` is in: the nearest folder holding ``.git``, else ``start`` itself."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def git_project(start: Path) -> str | None:
    """The name of the git repository ``start`` is in (what the brief narrows claims to), or None."""
    root = project_root(start)
    return root.name if (root / ".git").exists() else None


def iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms // 1000))


def iso_ms(text: str) -> int:
    """Milliseconds since the epoch of a UTC time written ``YYYY-MM-DDTHH:MM:SSZ`` (ValueError else)."""
    found = _ISO_RE.fullmatch(text)
    if found is None:
        raise ValueError(f"not a UTC time: {text!r}")
    y, mo, d, h, mi, s = (int(x) for x in found.groups())
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 60):
        raise ValueError(f"not a UTC time: {text!r}")
    y -= mo <= 2  # days from the civil date (Howard Hinnant's algorithm): no calendar or strptime import
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (mo + (-3 if mo > 2 else 9)) + 2) // 5 + d - 1
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    return ((days * 24 + h) * 60 + mi) * 60000 + s * 1000


# ------------------------------------------------------------------ the entries' bodies


def claim_body(event: Event) -> str:
    lines = [f"claim: {event.claim}"] if event.claim else []
    lines += [
        f"mode: {event.mode}",
        f"project: {event.project}",
        "patterns: " + " ".join(f"`{p}`" for p in event.patterns),
        f"expires: {event.expires}",
        f"reason: {event.reason}",
    ]
    return "\n".join(lines)


def release_body(claim_id: str) -> str:
    return f"claim: {claim_id}"


def event_of(entry: Any, file: str) -> Event | None:
    """The claim or release an entry (a :class:`~nexus.records.Entry`) holds, or None when its body
    does not read as one."""
    if entry.channel != CHANNEL or entry.type not in (CLAIM, RELEASE) or not entry.body:
        return None
    fields: dict[str, str] = {}
    for line in entry.body.split("\n"):
        key, sep, value = line.partition(": ")
        if sep:
            fields[key.strip()] = value.strip()
    claim = fields.get("claim")
    if claim is not None and not entries.ID_RE.fullmatch(claim):
        return None
    if entry.type == RELEASE:
        return Event(entry.id, RELEASE, entry.agent, file, claim) if claim else None
    patterns = tuple(_QUOTED.findall(fields.get("patterns", "")))
    try:
        iso_ms(fields.get("expires", ""))
    except ValueError:
        return None
    if not patterns or fields.get("mode") not in MODES or not fields.get("project"):
        return None
    return Event(
        entry.id,
        CLAIM,
        entry.agent,
        file,
        claim,
        fields["project"],
        patterns,
        fields["mode"],
        fields["expires"],
        fields.get("reason", ""),
    )


# ------------------------------------------------------------------ patterns


def _part_overlap(a: str, b: str) -> bool:
    if a == b or glob_regex(a).fullmatch(b) or glob_regex(b).fullmatch(a):
        return True
    if ("*" in a or "?" in a) and ("*" in b or "?" in b):  # both wildcards: compare the fixed ends
        pa, pb = re.split(r"[*?]", a, maxsplit=1)[0], re.split(r"[*?]", b, maxsplit=1)[0]
        sa, sb = re.split(r"[*?]", a)[-1], re.split(r"[*?]", b)[-1]
        return (pa.startswith(pb) or pb.startswith(pa)) and (sa.endswith(sb) or sb.endswith(sa))
    return False


def overlap(a: str, b: str) -> bool:
    """Two patterns could name the same path (task names: the same task). Conservative: where it
    cannot tell (two wildcards across a ``**``), they overlap."""
    if a.startswith(TASK) or b.startswith(TASK):
        return a == b
    pa, pb = a.split("/"), b.split("/")
    for x, y in zip(pa, pb, strict=False):
        if x == "**" or y == "**":
            return True
        if not _part_overlap(x, y):
            return False
    return True  # one is a prefix of the other: the shorter covers what is under it


# ------------------------------------------------------------------ the fold


def _conflicts(a: Event | Claim, b: Event | Claim) -> list[tuple[str, str]]:
    if a.agent == b.agent or (a.mode == "shared" and b.mode == "shared"):
        return []
    return [
        (x, y)
        for x in a.patterns
        for y in b.patterns
        if (x.startswith(TASK) or a.project == b.project) and overlap(x, y)
    ]


def fold(events: Iterable[Event], now_ms: int) -> dict[str, Claim]:
    """Every claim the events hold, by claim id, as it stands at ``now_ms`` (see the module
    docstring; deterministic: the events in id order, whatever order they came in)."""
    claims: dict[str, Claim] = {}
    ends: dict[str, int] = {}  # claim id -> when it stops holding (release or expiry), ms
    live: list[str] = []  # the claims not lost that may still hold (pruned as time goes on)
    for ev in sorted(events, key=lambda e: e.id):
        ms = ev.ms
        if ev.type == CLAIM and ev.claim is None:
            live = [cid for cid in live if ends[cid] > ms]
            winner = next((claims[cid] for cid in live if _conflicts(claims[cid], ev)), None)
            if winner is None:
                live.append(ev.id)
            claims[ev.id] = Claim(
                ev.id,
                ev.agent,
                ev.project,
                ev.patterns,
                ev.mode,
                ev.reason,
                entries.utc_ts(ms),
                ev.expires,
                "lost" if winner else "active",
                ev.id,
                ev.file,
                lost_to=winner.id if winner else None,
                lost_to_agent=winner.agent if winner else None,
            )
            ends[ev.id] = iso_ms(ev.expires)
        elif ev.type == CLAIM and ev.claim is not None:
            held = claims.get(ev.claim)
            if held is None:  # its first entry was left out of the state long ago: the renewal says all
                held = Claim(
                    ev.claim,
                    ev.agent,
                    ev.project,
                    ev.patterns,
                    ev.mode,
                    ev.reason,
                    entries.utc_ts(entries.decode_id_ms(ev.claim)),
                    ev.expires,
                    "active",
                    ev.id,
                    ev.file,
                )
                claims[ev.claim] = held
                ends[ev.claim] = iso_ms(ev.expires)
                live.append(ev.claim)
            elif held.agent == ev.agent and held.released_by is None and ends[held.id] > ms:
                claims[held.id] = replace(
                    held, expires=ev.expires, entry=ev.id, reason=ev.reason or held.reason
                )
                ends[held.id] = iso_ms(ev.expires)
        elif ev.type == RELEASE and ev.claim in claims:
            held = claims[ev.claim]
            if held.released_by is None:
                claims[held.id] = replace(held, released_by=ev.agent, released_at=entries.utc_ts(ms))
                ends[held.id] = min(ends[held.id], ms)
    return {cid: _status(c, ends[cid], now_ms) for cid, c in claims.items()}


def _status(c: Claim, end: int, now_ms: int) -> Claim:
    """``c`` with its status at ``now_ms`` (``end``: when it stopped holding)."""
    if c.status == "lost":
        return c
    if c.released_by is not None and end <= iso_ms(c.expires):
        return replace(c, status="released")
    return replace(c, status="expired") if iso_ms(c.expires) <= now_ms else c


def active(claims: dict[str, Claim]) -> list[Claim]:
    return sorted((c for c in claims.values() if c.status == "active"), key=lambda c: c.id)


def conflict(held: Sequence[Claim], new: Event) -> tuple[Claim, str, str] | None:
    """The first active claim of another agent ``new`` would overlap (with the two patterns)."""
    for c in held:
        found = _conflicts(c, new)
        if found:
            return c, found[0][0], found[0][1]
    return None


def holder_of(held: Sequence[Claim], project: str, path: str, agent: str) -> tuple[Claim, str] | None:
    """The active exclusive claim of an agent other than ``agent`` naming ``path`` in ``project``."""
    for c in held:
        if c.agent == agent or c.mode != "exclusive":
            continue
        for p in c.patterns:
            if (p.startswith(TASK) or c.project == project) and matches(p, path):
                return c, p
    return None


def until(c: Claim, *, dated: bool = False) -> str:
    """The expiry as a person reads it: ``20:20Z`` today, else (or ``dated``) ``2026-12-07 20:20Z``."""
    day = time.strftime("%Y-%m-%d", time.gmtime())
    if c.expires.startswith(day) and not dated:
        return c.expires[11:16] + "Z"
    return c.expires[:16].replace("T", " ") + "Z"


def refusal(c: Claim, what: str) -> str:
    """The one line a refused claim or edit gets: the holder, the reason, the expiry, how to ask."""
    return (
        f"{what} is held by {c.agent} ({c.mode}, claim {c.id}) until {until(c)}: {c.reason} — ask "
        f"{c.agent} on the log's `claims` channel to release it, or wait for it to expire"
    )


def shown(c: Claim, *, dated: bool = False) -> str:
    """One line for a person: who holds what, how, until when (``dated``: with its day, for a note
    read later), why, and the link to the entry."""
    what = " ".join(f"`{p}`" for p in c.patterns)
    where = "" if all(p.startswith(TASK) for p in c.patterns) else f" in {c.project}"
    when = until(c, dated=dated)
    return f"**{c.agent}** holds {what}{where} ({c.mode}) until {when} — {c.reason} · {c.link}"
