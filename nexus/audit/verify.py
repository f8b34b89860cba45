"""``nexus verify``: check every segment's framing, signatures, chains and ids.

Each problem names the entry (id, file, line) and what is wrong with it. Every kind, its cause and
what a person does about it are listed in ``nexus/vault_template/NEXUS-FORMAT.md`` ("What `nexus verify`
reports"). Verification never raises on any bytes: whatever cannot be read is a finding on that
entry. Entries by different agents may sit in any order (a merge of two machines' logs interleaves
them); only an agent's own order counts.

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
| conflict-markers | git conflict markers in a file nexus merges by kind (a merge without the driver): repair
|               | with `nexus git resolve` |

``check_entry`` is the per-entry check (canonical form, author, trusted key, signature): a pure
function of an entry and a ``Keyring`` (plain data), so it runs in worker processes
(``verify_state.py``) and in every reader that must tell an author's words from anything else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..keys import trust
from ..keys.identity import all_identities
from ..keys.trust import Keyring
from ..ledger import log
from ..ledger.check import WARNING_KINDS, Renamed, check_entry, looks_like_framing, printable
from ..records import Located, Problem
from ..storage import entries, markers, segments
from ..storage.vault import Vault


@dataclass
class Report:
    """What a verification found: entries and segments read, problems, signatures checked this run."""

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


def scan_problems(
    rel: str, result: segments.Scan
) -> tuple[list[tuple[int, Problem]], list[tuple[int, Problem]], tuple[int, Problem] | None]:
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
        if looks_like_framing(s.text) or not printable(s.text):
            stray.append(
                (
                    s.offset,
                    Problem(
                        "damaged",
                        rel,
                        s.line_start,
                        "text outside any entry that is a damaged copy of an entry or not printable text: "
                        f"{first!r}",
                    ),
                )
            )
            continue
        stray.append(
            (s.offset, Problem("stray-text", rel, s.line_start, f"text outside any entry: {first!r}"))
        )
    torn = None
    if result.torn is not None:
        torn = (
            result.torn.offset,
            Problem(
                "torn-tail",
                rel,
                result.torn.line,
                f"{result.torn.size} incomplete bytes at the end (run `nexus log repair`)",
            ),
        )
    return broken, stray, torn


def verify_exact(vault: Vault, ring: Keyring | None = None) -> Report:
    """Everything from scratch, in one process, holding every entry in memory: the reference the
    streaming verification (``verify_state.py``) agrees with, and what it falls back to when the log's
    ids or an agent's sequence go backwards (a duplicate, a reorder or a fork). ``ring``: the keys
    this machine trusts (None: the identity notes' keys as they are, nothing pinned)."""
    report = Report(full=True)
    from ..project.decisions import renamed_notes

    renamed = Renamed(vault, renamed_notes)
    ring = ring if ring is not None else trust.load(vault, None)
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
                report.problems.append(
                    Problem(
                        "duplicate",
                        *where,
                        f"id already used at {other.file}:{other.line_start}",
                        e.id,
                        e.agent,
                    )
                )
                continue
            seen_ids[e.id] = located
            last_id = last_ids.get(e.agent)
            if last_id is not None and e.id < last_id:
                report.problems.append(
                    Problem(
                        "reordered",
                        *where,
                        f"id is older than {e.agent}'s entry before it ({last_id})",
                        e.id,
                        e.agent,
                    )
                )
            else:
                last_ids[e.agent] = e.id
            verdict, problem = check_entry(located, ring, renamed, bulk=True)
            if problem is not None:
                report.problems.append(problem)
            if verdict != "foreign":  # an entry forged in another's name is not part of its chain
                signed = renamed.signed.get(e.id, e)  # the text as signed, when only links moved
                chains.setdefault(e.agent, []).append(
                    _Link(located, entries.entry_hash(signed), verdict == "ok")
                )
    heads = {agent: _check_chain(report, links) for agent, links in chains.items()}
    tops = {
        a: (seq, digest, loc.file, loc.line_start, loc.entry.id) for a, (seq, digest, loc) in heads.items()
    }
    check_heads(report, vault, {a: t[:4] for a, t in tops.items()})
    report.problems.extend(vault_problems(vault, ring, tops))
    from ..project.decision_check import check_notes  # decision notes: hand edits, unsigned status changes

    report.problems.extend(check_notes(vault, note_identities(vault), set(seen_ids), ring))
    check_copies(report, vault, set(seen_ids), ring)
    return report


def check_copies(report: Report, vault: Vault, ids: set[str] | None, ring: Keyring) -> None:
    """Conflict copies file-sync tools left in ``log/``, and conflicts a merge listed.
    ``ids``: every entry id in the log, or None to read them (only when a copy exists); ``ring``: the
    keys this machine trusts (a copy's entry counts only when it verifies)."""
    import os

    from ..sync import copies

    for path in copies.find(vault):
        missing, _ = copies.missing_entries(vault, path, ring, ids)
        rel = vault.rel(path)
        if missing:
            report.problems.append(
                Problem(
                    "conflict-copy",
                    rel,
                    missing[0].line_start,
                    f"{len(missing)} entr{'y' if len(missing) == 1 else 'ies'} only in this conflict copy "
                    "(run `nexus log import-copies`)",
                    missing[0].entry.id,
                )
            )
        else:
            report.problems.append(
                Problem(
                    "copy-left",
                    rel,
                    1,
                    "conflict copy already imported: `nexus log import-copies` archives it",
                )
            )
    folder = vault.root / "conflicts"
    for name in sorted(os.listdir(folder)) if folder.is_dir() else []:
        if name.endswith(".md"):
            report.problems.append(
                Problem(
                    "sync-conflict",
                    f"conflicts/{name}",
                    1,
                    "a merge listed a conflict: resolve it, then delete the note",
                )
            )


def note_identities(vault: Vault) -> dict[str, Any]:
    """The identities the decision-note check needs (parsed with YAML: only when there are notes)."""
    from ..project.decisions import note_ids

    return all_identities(vault) if note_ids(vault) else {}


def vault_problems(
    vault: Vault, ring: Keyring, tops: dict[str, tuple[int, str, str, int, str]]
) -> list[Problem]:
    """What the whole vault shows beyond its entries: identity notes declaring keys this machine does
    not trust, and signed heads (``heads.py``) naming entries the log no longer holds. ``tops``:
    agent -> (seq, hash, file, line, id) of the newest link of its chain."""
    from ..keys import heads

    out: list[Problem] = []
    for name, kid in sorted(ring.changed.items()):
        out.append(
            Problem(
                "key-changed",
                f"agents/{name}/identity.md",
                1,
                f"the identity note declares key {kid}, but this machine trusts only "
                f"{', '.join(sorted(ring.keys.get(name, {})))} for {name}: its entries signed with the new "
                f"key are not trusted (if the rotation is genuine: `nexus agent trust {name}`)",
                None,
                name,
            )
        )
    found = heads.check(vault, ring, tops)
    if any(p.kind == "truncated" for p in found):
        from ..sync import (
            copies,  # entries only in a file-sync conflict copy are not gone: conflict-copy says so
        )

        elsewhere = {
            loc.entry.id
            for path in copies.find(vault)
            for loc in copies.missing_entries(vault, path, ring)[0]
        }
        found = [p for p in found if not (p.kind == "truncated" and p.entry_id in elsewhere)]
    out.extend(found)
    for rel, regions in markers.marked_files(vault.root):  # a plain `git merge` left conflict markers
        out.append(Problem("conflict-markers", rel, regions[0].line, markers.describe(rel, regions)))
    return out


@dataclass
class _Link:
    """One entry of an agent's chain while the chain is checked: its hash and whether it verified."""

    located: Located
    digest: str
    signed_ok: bool

    @property
    def seq(self) -> int:
        return self.located.entry.seq


def _check_chain(report: Report, links: list[_Link]) -> tuple[int, str, Located]:
    """Check one agent's chain (its entries in file order); return its head (seq, hash, entry).

    A fork (two entries that both follow the same entry, or two first entries) is named once, on the
    fork point, with every branch; entries on the later branches are not reported again. A fork is
    resolved by a ``reconcile`` entry of the agent that descends from one branch and acks the first
    entry of every branch (``nexus log resolve-fork``)."""
    chain = _Chain(report, links)
    chain.forks()
    by_seq, top = chain.by_seq()
    chain.gaps(by_seq)
    return top.seq, top.digest, top.located


class _Chain:
    """One agent's links and what is known of them while its chain is checked."""

    def __init__(self, report: Report, links: list[_Link]) -> None:
        self.report = report
        self.links = links
        self.agent = links[0].located.entry.agent
        self.by_digest: dict[str, _Link] = {}
        for link in links:
            self.by_digest.setdefault(link.digest, link)
        self.children = self._children()
        self.in_branch: set[int] = set()  # links on a later branch of a fork
        self.flagged: set[int] = set()

    def _children(self) -> dict[str, list[_Link]]:
        """Each link's signed links that follow it ("" for first entries)."""
        children: dict[str, list[_Link]] = {}
        for link in self.links:
            prev = link.located.entry.prev
            if not link.signed_ok:
                continue  # (an edited entry is named as such; it never makes a fork)
            if link.seq == 1 and prev is None:
                parent = ""
            elif link.located.entry.v != entries.FORMAT_VERSION:
                parent = f"seq {link.seq - 1}"  # (format 2 stores no prev: it follows its seq - 1)
            elif prev is not None and prev in self.by_digest and self.by_digest[prev].seq + 1 == link.seq:
                parent = prev
            else:
                continue
            children.setdefault(parent, []).append(link)
        return children

    def add(self, kind: str, link: _Link, message: str) -> None:
        loc = link.located
        self.report.problems.append(
            Problem(kind, loc.file, loc.line_start, message, loc.entry.id, self.agent)
        )
        self.flagged.add(id(link))

    def forks(self) -> None:
        """Name every fork once, on its fork point, resolved or not."""
        for parent, kids in self.children.items():
            if len(kids) < 2:
                continue
            branch_ids = self._branch(kids[1:])
            self.in_branch |= branch_ids
            self.report.problems.append(self._fork_problem(parent, kids))
            self.flagged |= branch_ids

    def _branch(self, later: list[_Link]) -> set[int]:
        stack = list(later)
        branch_ids: set[int] = set()
        while stack:
            link = stack.pop()
            if id(link) in branch_ids:
                continue
            branch_ids.add(id(link))
            stack.extend(self.children.get(link.digest, []))
        return branch_ids

    def _fork_problem(self, parent: str, kids: list[_Link]) -> Problem:
        agent = self.agent
        resolved = _fork_resolved(self.links, self.children, kids)
        names = ", ".join(f"{k.located.entry.id} ({k.located.file}:{k.located.line_start})" for k in kids)
        at = kids[1].located
        after = (
            "start"
            if parent == ""
            else "entry " + self.by_digest[parent].located.entry.id
            if parent in self.by_digest
            else parent  # (format 2: "seq N")
        )
        message = f"{agent}'s chain forks at seq {kids[0].seq}: {len(kids)} entries follow the same {after}: "
        message += names
        if resolved is not None:
            return Problem(
                "fork-resolved",
                at.file,
                at.line_start,
                f"{message}; resolved by {resolved.located.entry.id}",
                at.entry.id,
                agent,
            )
        return Problem(
            "fork",
            at.file,
            at.line_start,
            f"{message}; {agent} cannot append until it chooses a branch: "
            f"`nexus log resolve-fork --agent {agent} --keep ID`",
            at.entry.id,
            agent,
        )

    def by_seq(self) -> tuple[dict[int, _Link], _Link]:
        """Each seq's link (duplicates and reorders named as met) and the link with the highest seq."""
        by_seq: dict[int, _Link] = {}
        top: _Link | None = None
        for link in self.links:
            if id(link) in self.in_branch:
                if top is None or link.seq > top.seq:
                    top = link
                continue
            first = by_seq.get(link.seq)
            if first is not None and first.signed_ok != link.signed_ok:  # an edited copy beside the real one
                if link.signed_ok:
                    by_seq[link.seq] = link
                    if top is first:
                        top = link
                continue
            if first is not None:
                self.add(
                    "duplicate",
                    link,
                    f"{self.agent} already has an entry with seq {link.seq} "
                    f"({first.located.entry.id} at {first.located.file}:{first.located.line_start}): a fork",
                )
                continue
            by_seq[link.seq] = link
            if top is not None and link.seq < top.seq and id(top) not in self.in_branch:
                self.add(
                    "reordered", link, f"{self.agent}'s seq {link.seq} comes after seq {top.seq} in the log"
                )
            if top is None or link.seq > top.seq:
                top = link
        assert top is not None
        return by_seq, top

    def gaps(self, by_seq: dict[int, _Link]) -> None:
        """Name seqs missing before a link, and links whose prev is not the hash of the one before."""
        agent = self.agent
        expected = 1
        for seq in sorted(by_seq):
            link = by_seq[seq]
            if seq > expected:
                gap = f"{expected}" if seq == expected + 1 else f"{expected}–{seq - 1}"
                if id(link) not in self.flagged:
                    self.add(
                        "missing",
                        link,
                        f"{agent}'s entries with seq {gap} are missing before this one (seq {seq}): deleted",
                    )
            elif seq >= 1:
                self._link_to_before(link, by_seq.get(seq - 1))
            expected = max(expected, seq + 1)

    def _link_to_before(self, link: _Link, before: _Link | None) -> None:
        seq, prev = link.seq, link.located.entry.prev
        if link.located.entry.v != entries.FORMAT_VERSION:
            return  # (format 2 stores no prev: its seq and the signed heads find what is missing)
        if before is None and prev is not None and seq == 1:
            self.add("missing", link, f"{self.agent}'s first entry names a previous entry")
        elif (
            before is not None
            and before.signed_ok
            and prev != before.digest
            and (id(link) not in self.flagged)
            and not (prev in self.by_digest and id(self.by_digest[prev]) in self.in_branch)
        ):
            self.add(
                "missing",
                link,
                f"{self.agent}'s chain breaks: prev is not the hash of seq {seq - 1} "
                f"({before.located.entry.id}): that entry was replaced",
            )


def _fork_resolved(links: list[_Link], children: dict[str, list[_Link]], kids: list[_Link]) -> _Link | None:
    """The reconcile entry that resolves the fork whose first entries are ``kids``, if any."""
    wanted = {k.located.entry.id for k in kids}
    for link in links:
        e = link.located.entry
        if e.type == "reconcile" and link.signed_ok and wanted <= set(e.ack):
            return link
    return None


def _link_message(
    agent: str, expected: int, seq: int, prev: str | None, before: tuple[bool, str, str] | None
) -> str | None:
    """The chain problem of an agent's link with ``seq`` (all its lower seqs seen, the next one
    expected ``expected``), given the link with ``seq - 1`` as (signed_ok, digest, id), if any."""
    if seq > expected:
        gap = f"{expected}" if seq == expected + 1 else f"{expected}–{seq - 1}"
        return f"{agent}'s entries with seq {gap} are missing before this one (seq {seq}): deleted"
    if seq >= 1:
        if before is None and prev is not None and seq == 1:
            return f"{agent}'s first entry names a previous entry"
        if before is not None and before[0] and prev is not None and prev != before[1]:  # (format 2: None)
            return (
                f"{agent}'s chain breaks: prev is not the hash of seq {seq - 1} ({before[2]}): "
                "that entry was replaced"
            )
    return None


class Head(NamedTuple):
    """What the chain check needs of an agent's link with the highest seq so far (a named tuple: a
    full verify makes one per entry)."""

    seq: int
    digest: str
    signed_ok: bool
    file: str
    line: int
    entry_id: str


def next_link_problem(
    agent: str, head: Head | None, seq: int, prev: str | None, file: str, line: int, entry_id: str
) -> Problem | None:
    """The chain problem of an agent's next link when its ``seq`` is above every seq of the agent seen
    so far (``head`` holds the highest): the answer ``_check_chain`` gives for it, found as entries
    stream by. A link whose seq is not above the head is a fork or a reorder: the caller must take
    the exact path instead."""
    assert head is None or seq > head.seq
    expected = 1 if head is None else max(1, head.seq + 1)
    before = (
        (head.signed_ok, head.digest, head.entry_id) if head is not None and head.seq == seq - 1 else None
    )
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
            report.problems.append(
                Problem(
                    "missing",
                    *where,
                    f"{agent}'s last entries (seq {gap}) were written but are gone",
                    None,
                    agent,
                )
            )
