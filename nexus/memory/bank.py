"""The retention bank and its human gate.

An agent keeps curated facts in ``agents/A/bank.md`` (``nexus retain``): one ``##`` section per fact, so
the search index holds one section per fact and ``nexus recall`` ranks them. A fact reaches the memory
index (``facts``) only when a person approves it: ``nexus review --approve ID --agent PERSON`` (PERSON
must be a human identity), or by ticking its checkbox in ``memory/REVIEW.md`` while ``nexus watch`` runs
(approved in the name of the vault's human identity). Every decision is written back into the bank
(who, when, why) and a promoted fact records who approved it and when.

A fact section::

    ## ella-3 · decision

    Search uses Whoosh; SQLite FTS5 is only the benchmark anchor.

    status:: pending · retained:: 2026-11-30T04:41:07Z · source:: 01KB7Q2V4J6M8P0R2T4W6Y8A0C ^ella-3

A content line that could be read as a heading or a status line is written with one more leading
backslash and read back with one less.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import IdentityError, InputError, NotFoundError
from ..records import BankFact
from ..storage import durable
from ..storage.locks import exclusive
from ..storage.text import check_body, check_line, check_name
from ..storage.vault import Vault
from . import scan

TYPES = ("decision", "fact", "failure", "preference")
FACT_TYPE = {"decision": "project", "fact": "reference", "failure": "feedback", "preference": "user"}
CONTENT_MAX = 2000
REVIEW_NOTE = "memory/REVIEW.md"

HEAD_RE = re.compile(r"^## (?P<id>[a-z0-9-]+-\d+) · (?P<type>[a-z]+)$")
META_RE = re.compile(
    r"^status:: (?P<status>pending|approved|rejected) · retained:: (?P<retained>\S+)"
    r"(?: · source:: (?P<source>\S+))?(?: · reviewed_by:: (?P<by>\S+) · reviewed_at:: (?P<at>\S+))?"
    r"(?: · fact:: (?P<fact>\S+))?(?: · why:: (?P<why>.*?))? \^(?P<bid>[a-z0-9-]+)$"
)
_ESCAPE_RE = re.compile(r"^\\*(?:#|status:: |\[status:: )")
_LINK_TEXT_RE = re.compile(r"\[\[[^\]|]*\|([^\]]*)\]\]")
_FIELD_RE = re.compile(r"\[(\w+):: ([^\]]*)\]")


def _meta(line: str) -> re.Match[str] | None:
    """A status line, in either form: ``[status:: …] · [source:: [[log/…|ID]]] …`` or the plain one."""
    if line.startswith("[status:: "):
        line = _FIELD_RE.sub(r"\1:: \2", _LINK_TEXT_RE.sub(r"\1", line))
    return META_RE.match(line)


SOURCE_RE = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
CHECKED_RE = re.compile(r"^\s*[-*] \[[xX]\] .*\^(?P<id>[a-z0-9-]+-\d+)\s*$")

_HEADER = """---
agent: {agent}
tags:
  - nexus/bank
---
# {agent}'s retention bank

Facts {agent} chose to keep (`nexus retain`). Each waits for a person's review — `nexus review`, or tick
it in [[memory/REVIEW|the review note]] — and an approved fact joins the
[[memory/MEMORY-INDEX|memory index]]. Find them again with `nexus recall --agent {agent} QUERY`.
"""

_REVIEW_HEAD = """---
tags:
  - nexus/review
---
# Memory review

Facts the agents retained, waiting for a person. Tick a box to approve a fact into the
[[memory/MEMORY-INDEX|memory index]] (with `nexus watch` running; it approves in the name of the vault's
human identity), or use `nexus review --approve ID --agent YOU` / `--reject ID --agent YOU --why TEXT`.
nexus rewrites this note; approved and rejected facts leave it.

"""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def bank_path(vault: Vault, agent: str) -> Path:
    return vault.inside(vault.agent_dir(agent) / "bank.md")


@contextmanager
def _locked(vault: Vault, agent: str) -> Iterator[None]:
    with exclusive(vault.lock(f"bank-{agent}")):
        yield


# ---------------------------------------------------------------- the bank note


def _escape(line: str) -> str:
    return "\\" + line if _ESCAPE_RE.match(line) else line


def _unescape(line: str) -> str:
    return line[1:] if line.startswith("\\") and _ESCAPE_RE.match(line) else line


def _entry_link(entry_id: str) -> str:
    from ..storage import entries

    month = entries.segment_name(entries.utc_ts(entries.decode_id_ms(entry_id)))
    return f"[[log/{month}#^{entry_id}|{entry_id}]]"


def render_fact(f: BankFact) -> str:
    """The section of one fact. Its status line holds Dataview inline fields, each in brackets (several
    on one line are read apart only so) and ids as links a reader can follow; banks written
    in the older form (plain ``key:: value · …``) still read."""
    fields = [f"[status:: {f.status}]", f"[retained:: {f.retained}]"]
    if f.source:
        fields.append(f"[source:: {_entry_link(f.source)}]")
    if f.reviewed_by:
        fields += [
            f"[reviewed_by:: [[agents/{f.reviewed_by}/identity|{f.reviewed_by}]]]",
            f"[reviewed_at:: {f.reviewed_at}]",
        ]
    if f.fact:
        fields.append(f"[fact:: [[memory/{f.fact}|{f.fact}]]]")
    if f.why:
        fields.append(f"[why:: {f.why.replace('[', '(').replace(']', ')')}]")
    meta = " · ".join(fields)
    body = "\n".join(_escape(line) for line in f.content.split("\n"))
    return f"\n## {f.id} · {f.type}\n\n{body}\n\n{meta} ^{f.id}\n"


def parse_bank(text: str, agent: str, path: str) -> list[BankFact]:
    lines = text.split("\n")
    out: list[BankFact] = []
    i = 0
    while i < len(lines):
        m = HEAD_RE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not _meta(lines[j]) and not HEAD_RE.match(lines[j]):
            j += 1
        if j >= len(lines) or not (meta := _meta(lines[j])) or meta["bid"] != m["id"]:
            i = j  # a section without its status line is not a fact; skip it
            continue
        content = "\n".join(_unescape(x) for x in lines[i + 1 : j]).strip()
        out.append(
            BankFact(
                id=m["id"],
                agent=agent,
                type=m["type"],
                content=content,
                retained=meta["retained"],
                status=meta["status"],
                source=meta["source"],
                reviewed_by=meta["by"],
                reviewed_at=meta["at"],
                why=meta["why"],
                fact=meta["fact"],
                path=path,
            )
        )
        i = j + 1
    return out


def facts_of(vault: Vault, agent: str) -> list[BankFact]:
    path = bank_path(vault, agent)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return parse_bank(text, agent, vault.rel(path))


def _banks(vault: Vault) -> list[str]:
    if not vault.agents_dir.is_dir():
        return []
    return sorted(p.name for p in vault.agents_dir.iterdir() if (p / "bank.md").is_file())


def all_facts(vault: Vault) -> list[BankFact]:
    return sorted((f for a in _banks(vault) for f in facts_of(vault, a)), key=lambda f: (f.retained, f.id))


def pending(vault: Vault) -> list[BankFact]:
    """Facts waiting for a person's review, oldest first (the handoff lists these)."""
    return [f for f in all_facts(vault) if f.status == "pending"]


def find(vault: Vault, fact_id: str) -> BankFact:
    agent = fact_id.rsplit("-", 1)[0] if "-" in fact_id else ""
    if not agent or not HEAD_RE.match(f"## {fact_id} · x"):
        raise NotFoundError(f"no banked fact {fact_id!r} (ids look like ella-3; see `nexus review`)")
    for f in facts_of(vault, agent):
        if f.id == fact_id:
            return f
    raise NotFoundError(f"no banked fact {fact_id!r} (see `nexus review`)")


# ---------------------------------------------------------------- retain


def retain(vault: Vault, agent: str, *, type: str, content: str, source: str | None = None) -> BankFact:
    """Append a curated fact to the agent's bank (pending review) and list it in the review note."""
    check_name(agent)
    if not vault.identity_path(agent).is_file():
        raise IdentityError(f"unknown agent {agent!r}")
    if type not in TYPES:
        raise InputError(f"invalid type {type!r}: use one of {', '.join(TYPES)}")
    text = (content or "").replace("\r\n", "\n").strip()
    if not text:
        raise InputError("content is empty; give the fact to retain")
    if len(text) > CONTENT_MAX:
        raise InputError(f"content is {len(text):,} characters; a banked fact holds at most {CONTENT_MAX:,}")
    scan.check(text, "fact for the bank", vault.root)
    text = check_body(text) or ""
    if source is not None and not SOURCE_RE.fullmatch(source):
        raise InputError(f"--source {source!r} is not a log entry id (26 characters, like 01KB7Q2V…)")
    path = bank_path(vault, agent)
    with _locked(vault, agent):
        existing = facts_of(vault, agent)
        n = 1 + max((int(f.id.rsplit("-", 1)[1]) for f in existing), default=0)
        fact = BankFact(
            id=f"{agent}-{n}",
            agent=agent,
            type=type,
            content=text,
            retained=_now(),
            status="pending",
            source=source,
            path=vault.rel(path) if path.exists() else path.relative_to(vault.root).as_posix(),
        )
        if not path.exists():
            durable.create_exclusive(path, _HEADER.format(agent=agent).encode("utf-8"))
        durable.append(path, render_fact(fact).encode("utf-8"))
    rebuild_review(vault)
    return fact


# ---------------------------------------------------------------- review


def _require_human(vault: Vault, person: str) -> None:
    from ..keys import identity

    ident = identity.load(vault, person)
    if ident.kind != "human":
        raise IdentityError(f"{person!r} is an agent; only a person (a human identity) can review facts")


def _rewrite(vault: Vault, agent: str, updated: BankFact) -> None:
    """Replace one fact's section in the bank (caller holds the bank lock)."""
    path = bank_path(vault, agent)
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if (m := HEAD_RE.match(line)) and m["id"] == updated.id)
    end = next(i for i in range(start + 1, len(lines)) if (m := _meta(lines[i])) and m["bid"] == updated.id)
    new_lines = lines[:start] + render_fact(updated).strip("\n").split("\n") + lines[end + 1 :]
    durable.replace(path, "\n".join(new_lines).encode("utf-8"))


def approve(vault: Vault, fact_id: str, person: str, *, now: str | None = None) -> BankFact:
    """Promote a pending fact into the memory index in ``person``'s name (a human identity)."""
    from . import facts

    _require_human(vault, person)
    agent = find(vault, fact_id).agent
    with _locked(vault, agent):
        fact = find(vault, fact_id)
        if fact.status != "pending":
            raise InputError(f"{fact_id} is already {fact.status} (by {fact.reviewed_by})")
        at = now or _now()
        link = f"[[{fact.path.removesuffix('.md')}#^{fact.id}]]"
        promoted = next((f for f in facts.all_facts(vault) if f.source == link), None)
        if promoted is None:  # not promoted by an earlier, interrupted approval
            first = fact.content.split("\n", 1)[0]
            description = first if len(first) <= 200 else first[:197] + "…"
            promoted = facts.add(
                vault,
                description=description,
                type=FACT_TYPE[fact.type],
                body=fact.content,
                name=None,
                approved_by=person,
                approved_at=at,
                source=link,
            )
        done = replace(fact, status="approved", reviewed_by=person, reviewed_at=at, fact=promoted.name)
        _rewrite(vault, agent, done)
    rebuild_review(vault)
    return done


def reject(vault: Vault, fact_id: str, person: str, *, why: str | None = None) -> BankFact:
    _require_human(vault, person)
    reason = check_line(why, "--why") if why else None
    if reason:
        scan.check(reason, "--why", vault.root)
        reason = reason.replace(" ^", " ")
    agent = find(vault, fact_id).agent
    with _locked(vault, agent):
        fact = find(vault, fact_id)
        if fact.status != "pending":
            raise InputError(f"{fact_id} is already {fact.status} (by {fact.reviewed_by})")
        done = replace(fact, status="rejected", reviewed_by=person, reviewed_at=_now(), why=reason)
        _rewrite(vault, agent, done)
    rebuild_review(vault)
    return done


# ---------------------------------------------------------------- the review note


def review_path(vault: Vault) -> Path:
    return vault.inside(vault.root / REVIEW_NOTE)


def render_review(items: list[BankFact], ticked: frozenset[str] = frozenset()) -> str:
    lines = []
    for f in items:
        first = f.content.split("\n", 1)[0]
        first = first if len(first) <= 120 else first[:117] + "…"
        box = "[x]" if f.id in ticked else "[ ]"
        lines.append(
            f"- {box} **{f.type}** · {f.agent} — {first} "
            f"([[{f.path.removesuffix('.md')}#^{f.id}|{f.id}]]) ^{f.id}"
        )
    return _REVIEW_HEAD + ("\n".join(lines) if lines else "_Nothing waits for review._") + "\n"


def ticked_ids(text: str) -> list[str]:
    return list(dict.fromkeys(m["id"] for line in text.split("\n") if (m := CHECKED_RE.match(line))))


SETTLE_SECONDS = 2.0  # how long a half-written review note is waited for before it is rewritten anyway


def _read_fd(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _half_written(data: bytes) -> bool:
    """An editor saving in place truncates the file, then writes: seen between the two (or between
    two writes of a long note), the note is empty or stops short of its last line."""
    return not data or not data.endswith(b"\n")


def rebuild_review(vault: Vault) -> Path:
    """Rewrite the review note from the banks (only when its text changes). A box a person ticked is
    kept ticked while its fact is pending, so a rewrite racing a person's click never loses it.

    A person's editor does not take nexus's lock, so the rewrite guards the person's save itself: a
    note caught half written (an in-place save between its truncate and its write) is waited for
    instead of being rewritten from the empty text; the note read is held open, and when its bytes
    changed before the new note is renamed over it, or its old file was written into after (a save
    still landing in the file being replaced), the rewrite starts again from what the person wrote.
    """
    path = review_path(vault)
    with exclusive(vault.lock("review-note")):
        give_up = time.monotonic() + SETTLE_SECONDS
        while True:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                durable.replace(path, render_review(pending(vault)).encode("utf-8"))
                return path
            try:
                data = _read_fd(fd)
                if _half_written(data) and time.monotonic() < give_up:
                    time.sleep(0.02)
                    continue
                current = data.decode("utf-8", errors="replace")
                text = render_review(pending(vault), frozenset(ticked_ids(current)))
                if current == text:
                    return path
                if _read_fd(fd) != data or os.stat(path).st_ino != os.fstat(fd).st_ino:
                    continue  # changed while we rendered: read it again
                durable.replace(path, text.encode("utf-8"))
                after = _read_fd(fd)  # the file we replaced: did a save land in it meanwhile?
                if after == data:
                    return path
                give_up = time.monotonic() + SETTLE_SECONDS
                while _half_written(after) and time.monotonic() < give_up:
                    time.sleep(0.02)
                    after = _read_fd(fd)
                theirs = ticked_ids(after.decode("utf-8", errors="replace"))
                merged = render_review(pending(vault), frozenset(theirs + ticked_ids(text)))
                durable.replace(path, merged.encode("utf-8"))
                return path
            finally:
                os.close(fd)


@dataclass(frozen=True)
class ReviewOutcome:
    """What applying a person's review note did: the facts approved and the problems found."""

    approved: tuple[BankFact, ...]
    problems: tuple[str, ...]


def apply_review_note(vault: Vault) -> ReviewOutcome:
    """Approve every fact ticked in the review note, in the name of the vault's human identity; then
    rewrite the note. Called by the watcher when ``memory/REVIEW.md`` changes."""
    try:
        text = review_path(vault).read_text(encoding="utf-8")
    except FileNotFoundError:
        return ReviewOutcome((), ())
    ticked = ticked_ids(text)
    approved: list[BankFact] = []
    problems: list[str] = []
    if ticked:
        person = vault.human()
        if person is None:
            return ReviewOutcome(
                (),
                (
                    "the vault has no human identity (`nexus agent add NAME --human`);"
                    " ticked facts stay pending",
                ),
            )
        for fact_id in ticked:
            try:
                if find(vault, fact_id).status != "pending":
                    continue  # an editor saved a stale buffer: already reviewed, nothing to do
                approved.append(approve(vault, fact_id, person))
            except (InputError, NotFoundError, IdentityError) as err:
                problems.append(f"{fact_id}: {err}")
    rebuild_review(vault)
    return ReviewOutcome(tuple(approved), tuple(problems))


def is_review_note(relpath: str) -> bool:
    return relpath == REVIEW_NOTE


# ---------------------------------------------------------------- recall


def recall(
    vault: Vault, agent: str, query: str, *, limit: int = 10, languages: tuple[str, ...] | None = None
) -> list[BankFact]:
    """The agent's banked facts relevant to ``query``, best first, through the search index (words
    stemmed in ``languages``; facts matching every word first, then partial matches)."""
    from .. import search  # the Whoosh index: imported only here

    check_name(agent)
    if not query.strip():
        raise InputError("the query is empty")
    by_id = {f.id: f for f in facts_of(vault, agent)}
    if not by_id:
        return []
    rel = bank_path(vault, agent).relative_to(vault.root).as_posix()
    hits = search.search(vault, query, path=rel, limit=max(limit * 3, 20), languages=languages)
    out: list[BankFact] = []
    for hit in hits:
        fact_id = _hit_fact_id(hit, by_id)
        if fact_id and by_id[fact_id] not in out:
            out.append(by_id[fact_id])
        if len(out) >= limit:
            break
    return out


def _hit_fact_id(hit: object, by_id: dict[str, BankFact]) -> str | None:
    for attr in ("heading", "block", "anchor", "title", "link"):
        value = getattr(hit, attr, None)
        if isinstance(value, str):
            m = re.search(r"([a-z0-9-]+-\d+)(?: · [a-z]+)?", value)
            if m and m.group(1) in by_id:
                return m.group(1)
    return None
