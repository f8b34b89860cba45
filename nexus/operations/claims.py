"""Claims: take paths or a task for a while, renew, release, list, check (the commit guard), and the
runtime's pre-tool hook. The state is ``team/claims.py`` (the fold) and ``team/claimlog.py`` (the
entries read from the log); the conflict check runs under the log lock, in the append itself. The
pre-tool hook is in ``edits.py`` (lighter: it runs before every edit)."""

from __future__ import annotations

import fnmatch
import posixpath
import time
from pathlib import Path
from typing import Any

from ..errors import ClaimHeldError, InputError, NotFoundError
from ..ledger import log
from ..records import Claim
from ..storage.text import check_line
from ..team import claimlog
from ..team.claims import (
    CHANNEL,
    CLAIM,
    MODES,
    RELEASE,
    TASK,
    Event,
    active,
    check_pattern,
    claim_body,
    conflict,
    holder_of,
    iso,
    parse_ttl,
    project_root,
    refusal,
    release_body,
    until,
)
from .spec import Answer, Call


def _now_ms() -> int:
    return int(time.time() * 1000)


def _root(project: str | None) -> Path:
    return project_root(Path(project).expanduser() if project else Path.cwd())


def _after_write(call: Call) -> None:
    """Claims.md, regenerated from the log under the log lock (so the newest write wins)."""
    with log.locked(call.vault):
        claimlog.write_note(call.vault, claimlog.refresh(call.vault, call.trust))


def _summary(verb: str, patterns: tuple[str, ...], tail: str) -> str:
    what = " ".join(f"`{p}`" for p in patterns)
    line = f"{verb} {what} {tail}"
    return line if len(line) <= 180 else line[:177] + "…"


def claim(
    call: Call,
    *,
    patterns: list[str],
    reason: str,
    ttl: str = "30m",
    mode: str = "exclusive",
    project: str | None = None,
) -> Answer:
    if not patterns:
        raise InputError("name at least one pattern: a path glob relative to the project, or task:NAME")
    if mode not in MODES:
        raise InputError(f"--mode {mode!r}: exclusive or shared")
    root = _root(project)
    pats = tuple(dict.fromkeys(check_pattern(p, root) for p in patterns))
    seconds = parse_ttl(ttl)
    why = check_line(reason, "reason")
    if not why.strip():
        raise InputError("--reason: say in one line why you take it")
    expires = iso(_now_ms() + seconds * 1000)
    new = Event("", CLAIM, call.agent, "", None, root.name, pats, mode, expires, why)

    def free() -> None:  # under the log lock: the check and the append are one step
        found = conflict(active(claimlog.refresh(call.vault, call.trust).claims()), new)
        if found is not None:
            held, _theirs, mine = found
            raise ClaimHeldError(refusal(held, f"`{mine}`"), held)

    done = log.append(
        call.vault,
        call.signer(),
        trust=call.trust,
        channel=CHANNEL,
        type=CLAIM,
        summary=_summary("claim", pats, f"({mode}) until {expires[11:16]}Z: {why}"),
        body=claim_body(new),
        precondition=free,
    )
    _after_write(call)
    c = done.located.entry.id
    data = {
        "id": c,
        "agent": call.agent,
        "project": root.name,
        "patterns": list(pats),
        "mode": mode,
        "expires": expires,
        "reason": why,
        "link": done.located.link,
    }
    return Answer(data, f"{c} claimed {' '.join(pats)} ({mode}) until {expires}")


def _held(call: Call, claim_id: str) -> Claim:
    found = claimlog.refresh(call.vault, call.trust).claims().get(claim_id)
    if found is None:
        raise NotFoundError(f"no claim with id {claim_id!r} (see `nexus claims`)")
    return found


def _still_active(call: Call, claim_id: str) -> Claim:
    c = _held(call, claim_id)
    if c.status != "active":
        when = c.released_at if c.status == "released" else c.expires
        more = f" to {c.lost_to_agent}'s claim {c.lost_to}" if c.status == "lost" else f" at {when}"
        raise InputError(f"claim {claim_id} is {c.status}{more}: nothing to do (claim again)")
    return c


def _check_active(call: Call, claim_id: str) -> None:
    _still_active(call, claim_id)


def _tasks_only(c: Claim) -> bool:
    return all(p.startswith(TASK) for p in c.patterns)


def renew(call: Call, *, id: str, ttl: str = "30m") -> Answer:
    seconds = parse_ttl(ttl)
    c = _still_active(call, id)
    if c.agent != call.agent:
        raise InputError(f"claim {id} is {c.agent}'s: only its holder renews it")
    expires = iso(_now_ms() + seconds * 1000)
    new = Event("", CLAIM, call.agent, "", id, c.project, c.patterns, c.mode, expires, c.reason)
    done = log.append(
        call.vault,
        call.signer(),
        trust=call.trust,
        channel=CHANNEL,
        type=CLAIM,
        summary=_summary("renew", c.patterns, f"until {expires[11:16]}Z (claim {id})"),
        body=claim_body(new),
        precondition=lambda: _check_active(call, id),
    )
    _after_write(call)
    return Answer(
        {"id": id, "entry": done.located.entry.id, "expires": expires}, f"{id} renewed until {expires}"
    )


def release(call: Call, *, id: str) -> Answer:
    c = _still_active(call, id)
    if c.agent != call.agent:
        from ..keys import roster

        if roster.roster(call.vault).get(call.agent, {}).get("kind") != "human":
            raise InputError(f"claim {id} is {c.agent}'s: only its holder or a person releases it")
    whose = "" if c.agent == call.agent else f"{c.agent}'s "
    done = log.append(
        call.vault,
        call.signer(),
        trust=call.trust,
        channel=CHANNEL,
        type=RELEASE,
        summary=_summary(f"release {whose}", c.patterns, f"(claim {id})").replace("  ", " "),
        body=release_body(id),
        precondition=lambda: _check_active(call, id),
    )
    _after_write(call)
    data = {"id": id, "agent": c.agent, "released_by": call.agent, "entry": done.located.entry.id}
    return Answer(data, f"{id} released ({whose or 'your '}claim on {' '.join(c.patterns)})")


def listing(call: Call, *, free: str | None = None, project: str | None = None, all: bool = False) -> Answer:
    book = claimlog.refresh(call.vault, call.trust)
    claims = book.claims()
    if free is not None:
        if not free.startswith(TASK):
            raise InputError(f"--free {free!r}: name tasks, like task:* or task:parser-*")
        held = {p for c in active(claims) for p in c.patterns if p.startswith(TASK)}
        names = sorted(t for t in book.tasks if fnmatch.fnmatchcase(t, free) and t not in held)
        return Answer({"free": names}, "\n".join(names) or "no free task")
    shown = sorted(claims.values(), key=lambda c: c.id) if all else active(claims)
    if project is not None:
        name = _root(project).name
        shown = [c for c in shown if c.project == name or _tasks_only(c)]
    lines = [
        f"{c.id} {c.agent} {' '.join(c.patterns)} ({c.mode}, {c.project}) "
        + (f"until {until(c)}" if c.status == "active" else c.status)
        + f": {c.reason}"
        for c in shown
    ]
    return Answer({"claims": [c.to_json() for c in shown]}, "\n".join(lines) or "no active claims")


def _inside(raw: str, root: Path) -> str | None:
    """A path as the project names it (any characters a file name may hold), or None when it lies
    outside the project (nobody's claim there is this project's)."""
    path = Path(raw)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(root.resolve())
        except ValueError:
            return None
    rel = posixpath.normpath(path.as_posix())
    return None if rel == ".." or rel.startswith("../") else rel


def check(call: Call, *, paths: list[str], project: str | None = None) -> Answer:
    """The commit guard's question: which of ``paths`` another agent holds exclusively (exit 1)."""
    root = _root(project)
    held = active(claimlog.refresh(call.vault, call.trust).claims())
    found: list[dict[str, Any]] = []
    for raw in paths:
        rel = _inside(raw, root)
        if rel is None:
            continue
        hit = holder_of(held, root.name, rel, call.agent)
        if hit is not None:
            found.append({"path": rel, "claim": hit[0].to_json(), "text": refusal(hit[0], rel)})
    return Answer({"held": found}, "\n".join(f["text"] for f in found), exit_code=1 if found else 0)
