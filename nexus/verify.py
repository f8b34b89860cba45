"""``nexus verify``: check every segment's framing, signatures, chains and ids.

Each problem names the entry (id, file, line) and what is wrong with it:

| kind          | meaning |
|---------------|---------|
| torn-tail     | incomplete bytes at the end of a segment (a writer died mid-write) |
| framing       | an entry whose lines cannot be read as an entry |
| stray-text    | text outside any entry (warning: a person's note the watcher has not signed yet) |
| notice        | a notice `nexus watch` wrote: entries it restored, a history edit it found (warning) |
| unknown-agent | an entry by a name with no identity note |
| forged        | signed with a key that is not its author's (another agent's, or none known) |
| edited        | the author's key, but the signature fails: the text changed after signing |
| missing       | a gap in an agent's sequence, or a chain that skips an entry: entries were deleted |
| reordered     | an agent's sequence goes backwards, or its ids go backwards in the log (entries by different
|               | agents may sit in any order: a merge of two machines' logs interleaves them) |
| duplicate     | the same id twice, or two entries with one agent's same sequence number (a fork) |
| conflict-copy | a file-sync tool's conflict copy of a segment holding entries the log lacks (import them:
|               | `nexus log import-copies`, or let `nexus watch` do it) |
| copy-left     | a conflict copy whose entries are all in the log (warning: archive it) |
| sync-conflict | a note under `conflicts/` a merge listed (warning: resolve it, then delete the note) |
| renamed       | links in signed text moved to a note renamed in Obsidian; signed before (warning) |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import entries, log, segments
from .identity import all_identities, verify_signature
from .progress import Progress
from .records import Identity, Located, Problem
from .vault import Vault

WARNING_KINDS = frozenset({"stray-text", "notice", "copy-left", "sync-conflict", "renamed"})


@dataclass
class Report:
    entries: int = 0
    segments: int = 0
    problems: list[Problem] = field(default_factory=list)
    checked: int = 0  # entries whose signature this run checked (the rest was proven unchanged)
    full: bool = False  # checked from scratch (no usable state, --full, or something moved)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.kind not in WARNING_KINDS]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "entries": self.entries,
            "segments": self.segments,
            "problems": [p.to_json() for p in self.problems],
            "checked": self.checked,
            "full": self.full,
        }


def verify(vault: Vault, *, full: bool = False, progress: Progress | None = None,
           parallel: bool = True) -> Report:
    """Verify the log: only what changed since the last verification, after proving that the bytes
    verified before are unchanged (``full``: everything from scratch). See ``verify_state.py``."""
    from . import verify_state

    return verify_state.run(vault, full=full, progress=progress, parallel=parallel)


def scan_problems(rel: str, result: segments.Scan) -> tuple[list[tuple[int, Problem]],
                                                           list[tuple[int, Problem]],
                                                           tuple[int, Problem] | None]:
    """The problems a segment's scan shows by itself: (offset, problem) of broken framing, of text
    outside entries (stray text and watcher notices), and of a torn tail."""
    broken = [(b.offset, Problem("framing", rel, b.line, b.message, b.entry_id)) for b in result.broken]
    stray: list[tuple[int, Problem]] = []
    for s in result.stray:
        first = s.text.splitlines()[0][:60] if s.text else ""
        if s.text.startswith("%% nexus:notice "):  # a notice `nexus watch` wrote (shadow.py)
            title = next((ln for ln in s.text.splitlines() if ln.startswith("> [!")), first)
            stray.append((s.offset, Problem("notice", rel, s.line_start, title.split("] ", 1)[-1])))
            continue
        stray.append((s.offset, Problem("stray-text", rel, s.line_start,
                                        f"text outside any entry: {first!r}")))
    torn = None
    if result.torn is not None:
        torn = (result.torn.offset, Problem(
            "torn-tail", rel, result.torn.line,
            f"{result.torn.size} incomplete bytes at the end (run `nexus log repair`)"))
    return broken, stray, torn


class _Renamed:
    """The text an entry was signed with, when Obsidian only moved its links to a renamed note."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.renames: dict[str, str] | None = None
        self.signed: dict[str, Any] = {}

    def original(self, e: Any, public_key: str) -> list[tuple[str, str]] | None:
        """The link changes if ``e`` verifies with its links put back, else None."""
        from dataclasses import replace

        from . import renames

        if self.renames is None:
            self.renames = renames.known(self.vault)
        for summary in [e.summary, *renames.originals(e.summary, self.renames)]:
            for body in [e.body] if e.body is None else [e.body, *renames.originals(e.body, self.renames)]:
                if summary == e.summary and body == e.body:
                    continue
                before = replace(e, summary=summary, body=body)
                if verify_signature(public_key, e.sig, entries.signing_bytes(before)):
                    self.signed[e.id] = before
                    return renames.link_changes(f"{summary}\n{body}", f"{e.summary}\n{e.body}") or []
        return self._from_shadow(e, public_key)

    def _from_shadow(self, e: Any, public_key: str) -> list[tuple[str, str]] | None:
        from . import renames, segments, shadow
        from .errors import NexusError

        try:
            copy = shadow.original(self.vault, e.id)
        except NexusError:
            return None
        scan = segments.scan(copy.text.encode(), copy.file)
        if len(scan.entries) != 1:
            return None
        before = scan.entries[0].entry
        if before.sig != e.sig or not verify_signature(public_key, e.sig, entries.signing_bytes(before)):
            return None
        changes = renames.renamed_only(self.vault, f"{before.summary}\n{before.body}",
                                       f"{e.summary}\n{e.body}")
        if changes is None:
            return None
        from dataclasses import replace

        if replace(before, summary=e.summary, body=e.body) != e:
            return None
        self.signed[e.id] = before
        return changes


def verify_exact(vault: Vault) -> Report:
    """Everything from scratch, in one process, holding every entry in memory: the reference the
    streaming verification (``verify_state.py``) agrees with, and what it falls back to when the log's
    ids or an agent's sequence go backwards (a duplicate, a reorder or a fork)."""
    report = Report(full=True)
    renamed = _Renamed(vault)
    identities = all_identities(vault)
    by_key = {ident.key_id: ident for ident in identities.values()}
    chains: dict[str, list[_Link]] = {}
    seen_ids: dict[str, Located] = {}
    last_ids: dict[str, str] = {}  # agent -> the newest id of its entries so far (only its own order counts)
    for _name, path in log.segment_files(vault):
        report.segments += 1
        result = log.scan_file(vault, path)
        rel = vault.rel(path)
        broken, stray, torn = scan_problems(rel, result)
        report.problems.extend(p for _, p in broken)
        report.problems.extend(p for _, p in stray)
        if torn is not None:
            report.problems.append(torn[1])
        for located in result.entries:
            report.checked += 1
            report.entries += 1
            e = located.entry
            where = (located.file, located.line_start)
            if e.id in seen_ids:
                other = seen_ids[e.id]
                report.problems.append(Problem("duplicate", *where,
                    f"id already used at {other.file}:{other.line_start}", e.id, e.agent))
                continue
            seen_ids[e.id] = located
            last_id = last_ids.get(e.agent)
            if last_id is not None and e.id < last_id:
                report.problems.append(Problem("reordered", *where,
                    f"id is older than {e.agent}'s entry before it ({last_id})", e.id, e.agent))
            else:
                last_ids[e.agent] = e.id
            verdict = _check_signature(report, located, identities, by_key, renamed)
            if verdict != "foreign":  # an entry forged in another's name is not part of its chain
                signed = renamed.signed.get(e.id, e)  # the text as signed, when only links moved
                chains.setdefault(e.agent, []).append(
                    _Link(located, entries.entry_hash(signed), verdict == "ok"))
    heads = {agent: _check_chain(report, links) for agent, links in chains.items()}
    check_heads(report, vault, {a: (seq, digest, loc.file, loc.line_start)
                                 for a, (seq, digest, loc) in heads.items()})
    from .decisions import check_notes  # decision notes: hand edits, unsigned status changes (issue 4)

    report.problems.extend(check_notes(vault, identities, set(seen_ids)))
    check_copies(report, vault, set(seen_ids))
    return report


def check_copies(report: Report, vault: Vault, ids: set[str] | None) -> None:
    """Conflict copies file-sync tools left in ``log/``, and conflicts a merge listed (issue 11).
    ``ids``: every entry id in the log, or None to read them (only when a copy exists)."""
    import os

    from . import copies

    for path in copies.find(vault):
        missing, _ = copies.missing_entries(vault, path, ids)
        rel = vault.rel(path)
        if missing:
            report.problems.append(Problem("conflict-copy", rel, missing[0].line_start,
                f"{len(missing)} entr{'y' if len(missing) == 1 else 'ies'} only in this conflict copy "
                "(run `nexus log import-copies`)", missing[0].entry.id))
        else:
            report.problems.append(Problem("copy-left", rel, 1, "conflict copy already imported: "
                                           "`nexus log import-copies` archives it"))
    folder = vault.root / "conflicts"
    for name in sorted(os.listdir(folder)) if folder.is_dir() else []:
        if name.endswith(".md"):
            report.problems.append(Problem("sync-conflict", f"conflicts/{name}", 1,
                                           "a merge listed a conflict: resolve it, then delete the note"))


@dataclass
class _Link:
    located: Located
    digest: str
    signed_ok: bool

    @property
    def seq(self) -> int:
        return self.located.entry.seq


def _check_signature(
    report: Report, located: Located, identities: dict[str, Identity], by_key: dict[str, Identity],
    renamed: _Renamed | None = None,
) -> str:
    """Report a bad signature; return "ok", "edited" (the author's, text changed) or "foreign"."""
    verdict, problem = check_entry(located, identities, by_key, renamed)
    if problem is not None:
        report.problems.append(problem)
    return verdict


def check_entry(
    located: Located, identities: dict[str, Identity], by_key: dict[str, Identity],
    renamed: _Renamed | None = None, canonical: bytes | None = None,
) -> tuple[str, Problem | None]:
    """One entry's own verdict, independent of every other entry (so it can run in any process):
    "ok", "edited" (the author's key, text changed) or "foreign" (not part of its author's chain),
    and the problem to report, if any. With ``renamed``, an entry whose links Obsidian moved to a
    renamed note is "ok" with a ``renamed`` warning (``renamed.signed`` keeps the text as signed).
    ``canonical``: ``entries.canonical(entry)`` when the caller has it already."""
    e = located.entry
    where = (located.file, located.line_start)
    author = identities.get(e.agent)
    data = entries.SIGN_CONTEXT + (entries.canonical(e) if canonical is None else canonical)
    if author is None:
        return "foreign", Problem("unknown-agent", *where, f"no identity note for {e.agent!r}", e.id, e.agent)
    if not e.sig:
        return "foreign", Problem("forged", *where, f"entry claims {e.agent} but carries no signature",
                                  e.id, e.agent)
    if e.key == author.key_id:
        if not verify_signature(author.public_key, e.sig, data):
            changes = renamed.original(e, author.public_key) if renamed is not None else None
            if changes is not None:
                moved = ", ".join(f"{old} → {new}" for old, new in changes) or "links"
                return "ok", Problem("renamed", *where,
                    f"Obsidian updated links to a renamed note ({moved}); the signature by {e.agent} "
                    "holds for the text before the rename", e.id, e.agent)
            return "edited", Problem("edited", *where,
                f"signature by {e.agent} does not match the text: changed after signing", e.id, e.agent)
        return "ok", None
    signer = by_key.get(e.key)
    if signer is not None and verify_signature(signer.public_key, e.sig, data):
        msg = f"claims {e.agent} but is signed with {signer.name}'s key"
    elif verify_signature(author.public_key, e.sig, data):
        msg = f"signature is {e.agent}'s but names the key {e.key}"
    else:
        msg = f"signed with a key that belongs to no identity ({e.key})"
    return "foreign", Problem("forged", *where, msg, e.id, e.agent)


def _check_chain(report: Report, links: list[_Link]) -> tuple[int, str, Located]:
    """Check one agent's chain (its entries in file order); return its head (seq, hash, entry)."""
    agent = links[0].located.entry.agent
    by_seq: dict[int, _Link] = {}
    flagged: set[int] = set()  # ids of links already reported, one problem per entry

    def add(kind: str, link: _Link, message: str) -> None:
        loc = link.located
        report.problems.append(Problem(kind, loc.file, loc.line_start, message, loc.entry.id, agent))
        flagged.add(id(link))

    top: _Link | None = None
    for link in links:
        first = by_seq.get(link.seq)
        if first is not None:
            add("duplicate", link, f"{agent} already has an entry with seq {link.seq} "
                f"({first.located.entry.id} at {first.located.file}:{first.located.line_start}): a fork")
            continue
        by_seq[link.seq] = link
        if top is not None and link.seq < top.seq:
            add("reordered", link, f"{agent}'s seq {link.seq} comes after seq {top.seq} in the log")
        if top is None or link.seq > top.seq:
            top = link
    assert top is not None
    expected = 1
    for seq in sorted(by_seq):
        link = by_seq[seq]
        before = by_seq.get(seq - 1)
        message = _link_message(agent, expected, seq, link.located.entry.prev,
                                None if before is None else (before.signed_ok, before.digest,
                                                             before.located.entry.id))
        # (a reordered seq 1 naming a previous entry is reported even though it is flagged already)
        if message is not None and (id(link) not in flagged or (seq == 1 and before is None)):
            add("missing", link, message)
        expected = max(expected, seq + 1)
    return top.seq, top.digest, top.located


def _link_message(agent: str, expected: int, seq: int, prev: str | None,
                  before: tuple[bool, str, str] | None) -> str | None:
    """The chain problem of an agent's link with ``seq`` (all its lower seqs seen, the next one
    expected ``expected``), given the link with ``seq - 1`` as (signed_ok, digest, id), if any."""
    if seq > expected:
        gap = f"{expected}" if seq == expected + 1 else f"{expected}–{seq - 1}"
        return f"{agent}'s entries with seq {gap} are missing before this one (seq {seq}): deleted"
    if seq >= 1:
        if before is None and prev is not None and seq == 1:
            return f"{agent}'s first entry names a previous entry"
        if before is not None and before[0] and prev != before[1]:
            return (f"{agent}'s chain breaks: prev is not the hash of seq {seq - 1} ({before[2]}): "
                    "that entry was replaced")
    return None


@dataclass(frozen=True)
class Head:
    """What the chain check needs of an agent's link with the highest seq so far."""

    seq: int
    digest: str
    signed_ok: bool
    file: str
    line: int
    entry_id: str


def next_link_problem(agent: str, head: Head | None, seq: int, prev: str | None, file: str, line: int,
                      entry_id: str) -> Problem | None:
    """The chain problem of an agent's next link when its ``seq`` is above every seq of the agent seen
    so far (``head`` holds the highest): the answer ``_check_chain`` gives for it, found as entries
    stream by. A link whose seq is not above the head is a fork or a reorder: the caller must take
    the exact path instead."""
    assert head is None or seq > head.seq
    expected = 1 if head is None else max(1, head.seq + 1)
    before = (head.signed_ok, head.digest, head.entry_id) if head is not None and head.seq == seq - 1 \
        else None
    message = _link_message(agent, expected, seq, prev, before)
    return None if message is None else Problem("missing", file, line, message, entry_id, agent)


def check_heads(report: Report, vault: Vault, heads: dict[str, tuple[int, str, str, int]]) -> None:
    """Entries missing at the very end of a chain show only against what nexus last recorded."""
    import json

    try:
        state = json.loads((vault.state / log.TAIL_FILE).read_bytes())
        recorded = state["heads"]
        if not isinstance(recorded, dict):
            return
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return
    for agent, head in recorded.items():
        found = heads.get(agent)
        if not isinstance(head, list) or not head or not isinstance(head[0], int):
            continue
        have = found[0] if found else 0
        if have < head[0]:
            where = (found[2], found[3]) if found else ("log", 0)
            gap = f"{have + 1}" if have + 1 == head[0] else f"{have + 1}–{head[0]}"
            report.problems.append(Problem("missing", *where,
                f"{agent}'s last entries (seq {gap}) were written but are gone", None, agent))
