"""``nexus verify``: check every segment's framing, signatures, chains and ids.

Each problem names the entry (id, file, line) and what is wrong with it:

| kind          | meaning |
|---------------|---------|
| torn-tail     | incomplete bytes at the end of a segment (a writer died mid-write) |
| framing       | an entry whose lines cannot be read as an entry |
| stray-text    | text outside any entry (warning: a person's note the watcher has not signed yet) |
| unknown-agent | an entry by a name with no identity note |
| forged        | signed with a key that is not its author's (another agent's, or none known) |
| edited        | the author's key, but the signature fails: the text changed after signing |
| missing       | a gap in an agent's sequence, or a chain that skips an entry: entries were deleted |
| reordered     | an agent's sequence goes backwards, or ids go backwards in the file |
| duplicate     | the same id twice, or two entries with one agent's same sequence number (a fork) |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import entries, log
from .identity import all_identities, verify_signature
from .records import Identity, Located, Problem
from .vault import Vault

WARNING_KINDS = frozenset({"stray-text", "notice"})


@dataclass
class Report:
    entries: int = 0
    segments: int = 0
    problems: list[Problem] = field(default_factory=list)

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
        }


def verify(vault: Vault) -> Report:
    report = Report()
    identities = all_identities(vault)
    by_key = {ident.key_id: ident for ident in identities.values()}
    heads: dict[str, tuple[int, str, Located]] = {}
    seen_ids: dict[str, Located] = {}
    last_id: str | None = None
    for _name, path in log.segment_files(vault):
        report.segments += 1
        result = log.scan_file(vault, path)
        rel = vault.rel(path)
        for b in result.broken:
            report.problems.append(Problem("framing", rel, b.line, b.message, b.entry_id))
        for s in result.stray:
            first = s.text.splitlines()[0][:60] if s.text else ""
            report.problems.append(
                Problem("stray-text", rel, s.line_start, f"text outside any entry: {first!r}")
            )
        if result.torn is not None:
            report.problems.append(
                Problem("torn-tail", rel, result.torn.line,
                        f"{result.torn.size} incomplete bytes at the end (run `nexus log repair`)")
            )
        for located in result.entries:
            report.entries += 1
            e = located.entry
            where = (located.file, located.line_start)
            if e.id in seen_ids:
                other = seen_ids[e.id]
                report.problems.append(Problem("duplicate", *where,
                    f"id already used at {other.file}:{other.line_start}", e.id, e.agent))
                continue
            seen_ids[e.id] = located
            if last_id is not None and e.id < last_id:
                report.problems.append(Problem("reordered", *where,
                    f"id is older than the entry before it ({last_id})", e.id, e.agent))
            last_id = max(last_id or e.id, e.id)
            _check_signature(report, located, identities, by_key)
            _check_chain(report, located, heads)
    _check_heads(report, vault, heads)
    return report


def _check_signature(
    report: Report, located: Located, identities: dict[str, Identity], by_key: dict[str, Identity]
) -> None:
    e = located.entry
    where = (located.file, located.line_start)
    author = identities.get(e.agent)
    data = entries.signing_bytes(e)
    if author is None:
        report.problems.append(Problem("unknown-agent", *where, f"no identity note for {e.agent!r}",
                                       e.id, e.agent))
        return
    if e.key == author.key_id:
        if not verify_signature(author.public_key, e.sig, data):
            report.problems.append(Problem("edited", *where,
                f"signature by {e.agent} does not match the text: changed after signing", e.id, e.agent))
        return
    signer = by_key.get(e.key)
    if signer is not None and verify_signature(signer.public_key, e.sig, data):
        msg = f"claims {e.agent} but is signed with {signer.name}'s key"
    elif verify_signature(author.public_key, e.sig, data):
        msg = f"signature is {e.agent}'s but names the key {e.key}"
    else:
        msg = f"signed with a key that belongs to no identity ({e.key})"
    report.problems.append(Problem("forged", *where, msg, e.id, e.agent))


def _check_chain(report: Report, located: Located, heads: dict[str, tuple[int, str, Located]]) -> None:
    e = located.entry
    where = (located.file, located.line_start)
    head = heads.get(e.agent)
    expected = head[0] + 1 if head else 1
    if e.seq == expected:
        if head and e.prev != head[1]:
            report.problems.append(Problem("missing", *where,
                f"{e.agent}'s chain breaks: prev does not match entry {head[2].entry.id}", e.id, e.agent))
        elif not head and e.prev is not None:
            report.problems.append(Problem("missing", *where,
                f"{e.agent}'s first entry here names a previous entry: earlier entries are gone",
                e.id, e.agent))
    elif e.seq > expected:
        gap = f"{expected}" if e.seq == expected + 1 else f"{expected}–{e.seq - 1}"
        report.problems.append(Problem("missing", *where,
            f"{e.agent}'s entries with seq {gap} are missing before this one (seq {e.seq})", e.id, e.agent))
    elif head and e.seq == head[0]:
        report.problems.append(Problem("duplicate", *where,
            f"{e.agent} already has an entry with seq {e.seq} ({head[2].entry.id}): a fork", e.id, e.agent))
    else:
        report.problems.append(Problem("reordered", *where,
            f"{e.agent}'s seq {e.seq} comes after seq {expected - 1}", e.id, e.agent))
    if head is None or e.seq >= head[0]:
        heads[e.agent] = (e.seq, entries.entry_hash(e), located)


def _check_heads(report: Report, vault: Vault, heads: dict[str, tuple[int, str, Located]]) -> None:
    """Entries missing at the very end of a chain show only against what nexus last recorded."""
    import json

    try:
        state = json.loads((vault.state / log.TAIL_FILE).read_bytes())
        recorded = state["heads"]
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return
    for agent, head in recorded.items():
        found = heads.get(agent)
        if not isinstance(head, list) or not head:
            continue
        have = found[0] if found else 0
        if have < head[0]:
            where = (found[2].file, found[2].line_end) if found else ("log", 0)
            report.problems.append(Problem("missing", *where,
                f"{agent}'s last entries (seq {have + 1}–{head[0]}) were written but are gone",
                None, agent))
