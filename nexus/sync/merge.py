"""Merge rules for every file kind nexus manages: what git's merge driver computes (see docs/sync.md).

Pure functions: the three versions' bytes in (common ancestor, ours, theirs), the merged bytes out,
with the conflicts the rule had to list and any side file it must keep beside the merge. A rule never
drops a side: when it cannot keep both in one file it keeps one and puts the other, whole, in a
conflict note (``conflicts/``) that a person or an agent resolves.

| kind        | rule |
|-------------|------|
| segment     | union of entries by id, in id order, byte for byte; one id with two texts: both kept, listed |
| checkpoint  | the newer save (seq, then time); the other stays in the history; a fork is listed |
| cp-history  | union of lines, in (saved, seq) order |
| memory      | three-way union of entries (a removal on one side is kept); over the limit: listed |
| bank        | union of facts by id; a review beats pending; two different reviews or texts: listed |
| review      | the union of its lines, a tick on either side kept (nexus rewrites it after the merge) |
| decision    | notes are never edited: two different supersessions keep the earlier, list the other |
| state       | ``state/project.md``: the higher version (ours on a tie); a history version written on both
|             | sides keeps ours and lists theirs as a state conflict |
| handoff     | both kept: one under a name numbered from its content (``-NNNNN``); exact copies once |
| head        | ``agents/NAME/head.json`` (a signed head, heads.py): the higher seq (then id); both sides are
|             | signed statements and the log keeps both branches of a fork, so nothing is lost |
| derived     | ``Decisions.md``, ``memory/MEMORY-INDEX.md``: ours (rewritten from the notes after a merge) |
| text        | anything else: git's own three-way text merge; a clash is left to a person |
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from ..settings import DEFAULTS
from ..storage import segments
from ..storage.entries import BEGIN_PREFIX, END_PREFIX, END_V2_PREFIX

_BEGIN = BEGIN_PREFIX.encode()
_END_V1 = b"\n" + END_PREFIX.encode()
_END_V2 = b"\n" + END_V2_PREFIX.encode()

# (kind, pattern on the path inside the vault)
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (k, re.compile(p))
    for k, p in (
        ("segment", r"log/\d{4}-\d\d\.md"),
        ("checkpoint", r"agents/[a-z0-9-]+/checkpoint\.md"),
        ("cp-history", r"agents/[a-z0-9-]+/checkpoint-history\.md"),
        ("memory", r"agents/[a-z0-9-]+/MEMORY\.md"),
        ("memory", r"USER\.md"),
        ("bank", r"agents/[a-z0-9-]+/bank\.md"),
        ("review", r"memory/REVIEW\.md"),
        ("derived", r"Decisions\.md"),
        ("derived", r"memory/MEMORY-INDEX\.md"),
        ("decision", r"decisions/D-\d{4,}-[a-z0-9-]*\.md"),
        ("state", r"state/project\.md"),
        ("state-version", r"state/history/v\d{4,}\.md"),
        ("handoff", r"handoff/\d{4}-\d\d-\d\d(?:-\d+)?\.md"),
        ("head", r"agents/[a-z0-9-]+/head\.json"),
    )
)


def kind_of(path: str) -> tuple[str, str]:
    """(kind, the vault's folder prefix) of a repository path: the vault may sit in a sub-folder."""
    for kind, pattern in _KINDS:
        m = re.search(rf"(?:^|/)({pattern.pattern})$", path)
        if m:
            return kind, path[: m.start(1)]
    return "text", ""


@dataclass
class Merged:
    """The result of merging a file: its bytes, whether it merged clean, and what was kept beside it."""

    data: bytes
    clean: bool = True  # False: git's conflict stays for a person (only the plain-text rule)
    conflicts: list[Conflict] = field(default_factory=list)
    beside: list[tuple[str, bytes]] = field(default_factory=list)  # (vault-relative path, bytes) to add


@dataclass(frozen=True)
class Conflict:
    """What a rule could not keep in the merged file: listed, and kept whole in a conflict note."""

    kind: str
    file: str
    message: str
    other: str = ""  # the side not kept in the file, whole

    def note_name(self) -> str:
        digest = hashlib.sha256(f"{self.kind}\n{self.file}\n{self.other}".encode()).hexdigest()[:10]
        stem = re.sub(r"[^a-z0-9-]+", "-", self.file.lower()).strip("-")[:60]
        return f"conflicts/{self.kind}-{stem}-{digest}.md"

    def note(self) -> bytes:
        fence = "~" * max(4, 1 + max((len(m) for m in re.findall(r"~+", self.other)), default=0))
        props = {
            "kind": "sync-conflict",
            "conflict": self.kind,
            "file": self.file,
            "tags": ["nexus/conflict"],
        }
        head = "".join(f"{k}: {json.dumps(v)}\n" for k, v in props.items())
        text = (
            f"---\n{head}---\n# Sync conflict · {self.kind} · {self.file}\n\n"
            f"> [!danger] {self.message}\n> Resolve it (keep what should stay), then delete this note "
            "(`nexus verify` lists it until then).\n"
        )
        if self.other:
            text += f"\n## The other side, whole\n\n{fence}\n{self.other.rstrip()}\n{fence}\n"
        return text.encode("utf-8")


def merge(kind: str, base: bytes, ours: bytes, theirs: bytes, path: str) -> Merged:
    """Merge by the rule of ``kind`` (see :func:`kind_of`); ``path`` is vault-relative."""
    if ours == theirs:
        return Merged(ours)
    if kind != "segment" and base == ours:
        return Merged(theirs)
    if kind != "segment" and base == theirs:
        return Merged(ours)
    return _RULES[kind](base, ours, theirs, path)


# ------------------------------------------------------------------ log segments


def split_segment(data: bytes) -> tuple[bytes, list[tuple[str | None, bytes]]]:
    """(preamble, blocks): each block an entry (id, its bytes from begin line through end line) or
    other text between entries (None, bytes: a notice, a person's text, a broken or torn entry), in
    file order, the blank lines around blocks dropped. Byte for byte: the entry bytes are the file's."""
    begins = segments.openings(data)
    if not begins:
        return data, []
    preamble = data[: begins[0][0]]
    blocks: list[tuple[str | None, bytes]] = []
    n = len(data)
    for i, (start, bid) in enumerate(begins):
        limit = begins[i + 1][0] if i + 1 < len(begins) else n
        v1 = data.startswith(_BEGIN, start)
        at = data.find(_END_V1 if v1 else _END_V2, start, limit)
        stop = data.find(b"\n", at + 1, limit) if at >= 0 else -1
        if stop < 0:  # no complete end line before the next entry: broken or torn, kept as text
            blocks.append((None, data[start:limit].strip(b"\n") + (b"\n" if limit < n else b"")))
            continue
        blocks.append((bid, data[start : stop + 1]))
        gap = data[stop + 1 : limit]
        if gap.strip():
            text = gap.strip(b"\n")
            blocks.append((None, text + b"\n" if gap.rstrip(b"\n") != gap or limit < n else text))
    return preamble, blocks


def merge_segment(base: bytes, ours: bytes, theirs: bytes, path: str) -> Merged:
    """The union of both sides' entries by id, in id order, byte for byte. Other text (a notice, a
    person's unsigned note) stays after the entry it followed, ours first; exact copies once."""
    pre_o, blocks_o = split_segment(ours)
    pre_t, blocks_t = split_segment(theirs)
    entries: dict[str, list[bytes]] = {}
    after: dict[str | None, list[bytes]] = {}
    conflicts: list[Conflict] = []
    for blocks in (blocks_o, blocks_t):
        anchor: str | None = None
        for bid, text in blocks:
            if bid is None:
                items = after.setdefault(anchor, [])
                if text not in items:
                    items.append(text)
                continue
            anchor = bid
            texts = entries.setdefault(bid, [])
            if text not in texts:
                if texts:
                    conflicts.append(
                        Conflict(
                            "same-id",
                            path,
                            f"entry {bid} has different text on the two sides: both kept (verify reports "
                            "the duplicate id; the one whose signature fails was edited)",
                        )
                    )
                texts.append(text)
    out = [pre_o or pre_t]
    if not out[0].endswith(b"\n\n") and (entries or after):
        out.append(b"\n" if out[0].endswith(b"\n") else b"\n\n")
    for text in after.get(None, []):
        out.append(_block(text))
    for bid in sorted(entries):
        for text in entries[bid]:
            out.append(text + b"\n")
        for text in after.get(bid, []):
            out.append(_block(text))
    return Merged(b"".join(out), conflicts=conflicts)


def _block(text: bytes) -> bytes:
    if not text.endswith(b"\n"):
        return text  # a torn tail or unterminated text: left last, as it was
    return text + b"\n"


# ------------------------------------------------------------------ per-agent files


def _prop(text: str, name: str) -> str | None:
    """A note's property ``name``; a machine field (``meta.ALL``) from its ``nexus:meta`` comment
    when it has one (see meta.py), else from its frontmatter as older notes keep it."""
    from ..storage import meta

    fields = meta.fields_of(text.encode("utf-8")) if name in meta.ALL else None
    if fields is not None:
        value = fields.get(name)
        return None if value is None else str(value)
    m = re.search(rf"^{name}: (.*)$", text.split("\n---", 1)[0], re.M)
    if not m:
        return None
    raw = m.group(1).strip()
    try:
        value = json.loads(raw)
    except ValueError:
        return raw.strip("'\"")
    return str(value)


def _newer_by(text: bytes, number: str, time: str | None = None) -> tuple[int, str, bytes]:
    """(a number property, a time property, the bytes): what "newer" compares, in that order."""
    s = text.decode("utf-8", "replace")
    value = _prop(s, number) or ""
    return (int(value) if value.isdigit() else 0, (_prop(s, time) or "") if time else "", text)


def merge_checkpoint(base: bytes, ours: bytes, theirs: bytes, path: str) -> Merged:
    o, t = _newer_by(ours, "seq", "saved"), _newer_by(theirs, "seq", "saved")
    keep, other = (ours, theirs) if o >= t else (theirs, ours)
    conflicts = []
    if o[0] == t[0]:  # one agent saved the same version on two machines: a fork
        conflicts.append(
            Conflict(
                "checkpoint",
                path,
                f"two different saves of checkpoint version {o[0]} "
                "(the same agent on two machines); the later is kept",
                other.decode("utf-8", "replace"),
            )
        )
    return Merged(keep, conflicts=conflicts)


_HISTORY_MARK = "%% nexus:checkpoint "


def merge_lines_by_record(base: bytes, ours: bytes, theirs: bytes, path: str) -> Merged:
    """A checkpoint history: its head as it was, then the union of record lines in (saved, seq)
    order (a line cut short by a killed writer, not a record, is kept first, as it was)."""
    head = ""
    records: dict[str, tuple[str, int]] = {}
    other: list[str] = []
    for side in (ours, theirs):
        text = side.decode("utf-8", "replace")
        at = text.find(_HISTORY_MARK)
        first = text.rfind("\n", 0, at) + 1 if at >= 0 else len(text)
        head = head or text[:first]
        for line in text[first:].split("\n"):
            if _HISTORY_MARK not in line:
                if line.strip() and line not in other:
                    other.append(line)
                continue
            if line in records:
                continue
            try:
                rec = json.loads(line[line.index(_HISTORY_MARK) + len(_HISTORY_MARK) : -3])
                key = (str(rec.get("saved", "")), int(rec.get("seq", 0)))
            except (ValueError, TypeError, AttributeError):
                key = ("~", 0)
            records[line] = key
    lines = sorted(records, key=lambda ln: records[ln])
    return Merged((head + "".join(ln + "\n" for ln in [*other, *lines])).encode("utf-8"))


MEMORY_DELIM = "\n§\n"


def merge_memory(base: bytes, ours: bytes, theirs: bytes, path: str, limit: int | None = None) -> Merged:
    """Three-way union of ``§`` entries: both sides' additions kept, a removal on one side honoured
    (the entry was in the ancestor and the other side left it alone); order: ours, then theirs' new."""
    from ..memory.bounded import parse, render, size

    b, o, t = (parse(x.decode("utf-8", "replace")) for x in (base, ours, theirs))
    gone = {e for e in b if e not in o or e not in t}
    merged = [e for e in o if e not in gone]
    merged += [e for e in t if e not in gone and e not in merged]
    conflicts = []
    if limit is None:
        limit = DEFAULTS.user_chars if path.endswith("USER.md") else DEFAULTS.memory_chars
    if size(merged) > limit:
        conflicts.append(
            Conflict(
                "memory",
                path,
                f"the union of both sides' entries holds "
                f"{size(merged):,} characters, over the limit of {limit:,}: all kept; "
                "consolidate or remove entries (`nexus memory consolidate`)",
            )
        )
    return Merged(render(merged).encode("utf-8"), conflicts=conflicts)


_BANK_HEAD = re.compile(r"^## (?P<id>[a-z0-9-]+-\d+) · [a-z]+$", re.M)
# A bank fact's status line: `[status:: x] · …` now, `status:: x · …` in older banks.
_STATUS = re.compile(r"^\[?status:: (\w+)", re.M)
_STATUS_LINE = re.compile(r"\n\[?status:: ")


def _bank_sections(text: str) -> tuple[str, dict[str, str]]:
    starts = [m.start() for m in _BANK_HEAD.finditer(text)]
    if not starts:
        return text, {}
    head = text[: starts[0]]
    out: dict[str, str] = {}
    for i, start in enumerate(starts):
        chunk = text[start : starts[i + 1] if i + 1 < len(starts) else len(text)]
        m = _BANK_HEAD.match(chunk)
        assert m is not None
        out.setdefault(m["id"], chunk.rstrip("\n") + "\n")
    return head, out


def merge_bank(base: bytes, ours: bytes, theirs: bytes, path: str) -> Merged:
    _, b = _bank_sections(base.decode("utf-8", "replace"))
    head, o = _bank_sections(ours.decode("utf-8", "replace"))
    head_t, t = _bank_sections(theirs.decode("utf-8", "replace"))
    conflicts: list[Conflict] = []
    merged: dict[str, str] = {}
    for fid in sorted(set(o) | set(t), key=_fact_order):
        mine, other = o.get(fid), t.get(fid)
        if mine is None or other is None or mine == other:
            merged[fid] = mine or other or ""
            continue
        if b.get(fid) == mine:
            merged[fid] = other
            continue
        if b.get(fid) == other:
            merged[fid] = mine
            continue
        s_m, s_o = (_status(x) for x in (mine, other))
        if s_m == "pending" and s_o != "pending" and _content(mine) == _content(other):
            merged[fid] = other
        elif s_o == "pending" and s_m != "pending" and _content(mine) == _content(other):
            merged[fid] = mine
        else:
            merged[fid] = mine
            conflicts.append(
                Conflict(
                    "bank",
                    path,
                    f"fact {fid} differs on the two sides ({s_m} here, {s_o} there); this side's is kept",
                    other,
                )
            )
    text = (head or head_t).rstrip("\n") + "\n" + "".join("\n" + s for s in merged.values())
    return Merged(text.encode("utf-8"), conflicts=conflicts)


def _fact_order(fid: str) -> tuple[str, int]:
    name, _, n = fid.rpartition("-")
    return name, int(n)


def _status(section: str) -> str:
    m = _STATUS.search(section)
    return m.group(1) if m else "?"


def _content(section: str) -> str:
    return _STATUS_LINE.split(section, maxsplit=1)[0]


def merge_review(base: bytes, ours: bytes, theirs: bytes, path: str) -> Merged:
    """Lines of both sides, a box ticked on either side stays ticked (nexus rewrites the note from
    the banks after the merge, keeping ticks of facts still pending)."""
    o = ours.decode("utf-8", "replace").split("\n")
    ticked = {ln.replace("[x]", "[ ]") for ln in theirs.decode("utf-8", "replace").split("\n") if "[x]" in ln}
    out = [ln.replace("[ ]", "[x]", 1) if ln in ticked else ln for ln in o]
    have = {ln.replace("[x]", "[ ]") for ln in out}
    extra = [
        ln
        for ln in theirs.decode("utf-8", "replace").split("\n")
        if ln.startswith("- [") and ln.replace("[x]", "[ ]") not in have
    ]
    if extra:
        while out and out[-1] == "":
            out.pop()
        out += [*extra, ""]
    return Merged("\n".join(out).encode("utf-8"))


def merge_decision(base: bytes, ours: bytes, theirs: bytes, path: str) -> Merged:
    """A decision note changes only when superseded: two machines superseding it differently keep
    the earlier supersession; the other is listed (its successor note stays, naming this one)."""
    o, t = (_prop(x.decode("utf-8", "replace"), "superseded_at") or "~" for x in (ours, theirs))
    keep, other = (ours, theirs) if o <= t else (theirs, ours)
    return Merged(
        keep,
        conflicts=[
            Conflict(
                "decision",
                path,
                "this decision was superseded on two machines by different decisions; the earlier is kept",
                other.decode("utf-8", "replace"),
            )
        ],
    )


def merge_state(base: bytes, ours: bytes, theirs: bytes, path: str) -> Merged:
    o, t = _newer_by(ours, "version"), _newer_by(theirs, "version")
    return Merged(ours if o[0] >= t[0] else theirs)


def merge_state_version(base: bytes, ours: bytes, theirs: bytes, path: str) -> Merged:
    version = path.rsplit("/v", 1)[-1][:-3].lstrip("0")
    who = _prop(theirs.decode("utf-8", "replace"), "author")
    return Merged(
        ours,
        conflicts=[
            Conflict(
                "state",
                path,
                f"the project state diverged: two machines "
                f"each recorded a version {version} (the other by {who}); "
                "this side's is current — read both, then set the state that "
                "should stand (`nexus state set --expect N`)",
                theirs.decode("utf-8", "replace"),
            )
        ],
    )


def merge_handoff(base: bytes, ours: bytes, theirs: bytes, path: str) -> Merged:
    """Both kept: the one that sorts first stays at the path (so every clone merging the two agrees),
    the other goes beside it under a name numbered from its content (the caller picks it)."""
    first, second = sorted((ours, theirs))
    return Merged(first, beside=[(path, second)])


def merge_head(base: bytes, ours: bytes, theirs: bytes, path: str) -> Merged:
    """The signed head with the higher (seq, id); an unreadable side loses."""

    def rank(data: bytes) -> tuple[int, str]:
        try:
            head = json.loads(data)
            return int(head["seq"]), str(head["id"])
        except (ValueError, KeyError, TypeError):
            return -1, ""

    return Merged(theirs if rank(theirs) > rank(ours) else ours)


def merge_derived(base: bytes, ours: bytes, theirs: bytes, path: str) -> Merged:
    return Merged(ours)


def merge_text(base: bytes, ours: bytes, theirs: bytes, path: str) -> Merged:
    """git's own three-way merge of text (``git merge-file``); a clash stays a git conflict."""
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        names = []
        for label, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            p = os.path.join(tmp, label)
            with open(p, "wb") as f:
                f.write(data)
            names.append(p)
        proc = subprocess.run(["git", "merge-file", "-p", *names], capture_output=True, check=False)
    return Merged(proc.stdout, clean=proc.returncode == 0)


_RULES = {
    "segment": merge_segment,
    "checkpoint": merge_checkpoint,
    "cp-history": merge_lines_by_record,
    "memory": merge_memory,
    "bank": merge_bank,
    "review": merge_review,
    "derived": merge_derived,
    "decision": merge_decision,
    "state": merge_state,
    "state-version": merge_state_version,
    "handoff": merge_handoff,
    "head": merge_head,
    "text": merge_text,
}
