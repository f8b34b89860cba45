"""What the index holds: the vault's Markdown files, and the documents made of them.

One document per log entry (id, agent, channel, type, time; its summary written twice, then its
body) read with ``segments.scan``, and one per section of every other note (decisions, checkpoints,
state, identities, memory, a person's own notes), split at headings by ``sections.split``, with the
note's frontmatter status, author/agent and time. The text is analysed here (``language``) and not
stored: snippets read it back from the vault by the document's byte range.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ..ledger import log
from ..records import Located
from ..storage.segments import Scan
from ..storage.vault import Vault
from . import sections
from .engine import Doc, Terms
from .language import Analysis
from .watches import WATCHES, Listing

Files = dict[str, tuple[int, int]]  # relpath -> (size, mtime_ns)

SETTLED_NS = 2_000_000_000  # a folder's listing is reused only once its mtime is this old: a file
#   created within the same clock tick as an earlier change would leave the mtime as it was


def is_segment(rel: str) -> bool:
    return rel.startswith("log/") and rel.count("/") == 1 and log.is_segment_name(rel[4:-3])


# ------------------------------------------------------------------ the vault's files


class Listings:
    """Each folder's subfolders and Markdown files (no dot-names, no symlinks), listed again only
    when the folder's mtime moved: one ``stat`` instead of a ``scandir`` for an unchanged folder.
    Where the kernel watches the vault for this process (``watches``), a listing it says nothing
    has changed since is reused whole: no ``stat`` at all."""

    def __init__(self) -> None:
        self.known: dict[str, tuple[int, list[str], list[tuple[str, str]]]] = {}
        self.last: dict[str, Files] = {}  # vault root -> its last listing, while it is watched

    def listing(
        self, folder: str, root: str, watching: Listing
    ) -> tuple[list[str], list[tuple[str, str]]] | None:
        try:
            st = os.stat(folder)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None
        watching.seen(folder, st, True)  # (before it is listed)
        mtime = st.st_mtime_ns
        cached = self.known.get(folder)
        if cached is not None and cached[0] == mtime:
            return cached[1], cached[2]
        try:
            items = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None
        subfolders: list[str] = []
        notes: list[tuple[str, str]] = []
        for item in items:
            if item.name.startswith("."):
                continue
            try:
                if item.is_dir(follow_symlinks=False):
                    subfolders.append(item.path)
                elif item.name.endswith(".md") and item.is_file(follow_symlinks=False):
                    notes.append((item.path, item.path[len(root) + 1 :].replace(os.sep, "/")))
            except FileNotFoundError:
                continue
        if time.time_ns() - mtime > SETTLED_NS:
            self.known[folder] = (mtime, subfolders, notes)
        return subfolders, notes

    def files(self, vault: Vault) -> Files:
        """Every Markdown file outside dot-folders: relpath -> (size, mtime_ns). A ``stat`` per file
        (an edit in place changes only the file) and per folder (listed again when its mtime moved),
        unless the kernel says nothing changed since the last listing (``watches``)."""
        root = str(vault.root)
        last = self.last.get(root)
        if last is not None and WATCHES.unchanged(root):
            return last  # (callers never change it)
        watching = WATCHES.listing(root)
        out: Files = {}
        stack = [root]
        stat = os.stat
        seen = watching.seen
        while stack:
            found = self.listing(stack.pop(), root, watching)
            if found is None:
                continue
            stack.extend(found[0])
            for path, rel in found[1]:
                try:
                    st = stat(path)
                except (FileNotFoundError, NotADirectoryError):
                    continue
                seen(path, st, False)
                out[rel] = (st.st_size, st.st_mtime_ns)
        watching.end()
        self.last.pop(root, None)
        if watching.watched:
            self.last[root] = out
        for other in [r for r in self.last if r not in WATCHES.vaults]:
            del self.last[other]  # (a vault no longer watched: its listing is of no more use)
        return out


LISTINGS = Listings()  # this process's (the listings of unchanged folders are reused between searches)


def vault_files(vault: Vault) -> Files:
    return LISTINGS.files(vault)


def unchanged_listing(vault: Vault) -> Files | None:
    """The vault's last listing when the kernel says nothing in it changed since (``watches``), the
    very object ``vault_files`` returned; None otherwise (nothing is listed here)."""
    root = str(vault.root)
    last = LISTINGS.last.get(root)
    return last if last is not None and WATCHES.unchanged(root) else None


# ------------------------------------------------------------------ documents


def _terms(analysis: Analysis, text: str) -> Terms:
    counts, words = analysis.counts(text)
    return Terms(counts, words)


def entry_doc(located: Located, analysis: Analysis, seal: bytes = b"") -> Doc:
    e = located.entry
    text = e.summary if e.body is None else f"{e.summary}\n{e.summary}\n{e.body}"
    loc = (located.offset, located.end_offset, located.line_start, located.line_end)
    return Doc(
        f"e:{e.id}",
        "entry",
        located.file,
        e.agent,
        e.channel,
        e.type,
        "",
        e.ts,
        "",
        _terms(analysis, text),
        loc,
        seal,
    )


def segment_docs(scan: Scan, analysis: Analysis, seals: Sequence[bytes] | None = None) -> list[Doc]:
    """The entries a scan of a segment found (``seals``: each one's seal, ``seals.Sealer``)."""
    if seals is None:
        return [entry_doc(located, analysis) for located in scan.entries]
    return [entry_doc(located, analysis, s) for located, s in zip(scan.entries, seals, strict=True)]


_BY_FOLDER = {
    "decisions": "decision",
    "state": "state",
    "handoff": "handoff",
    "memory": "memory",
    "archive": "archive",
}


def note_type(rel: str, props: Mapping[str, object]) -> str:
    parts = rel.split("/")
    if parts[0] in _BY_FOLDER:
        return _BY_FOLDER[parts[0]]
    if parts[0] == "agents" and len(parts) == 3:
        stem = parts[2][:-3].lower()
        return {"identity": "identity", "checkpoint": "checkpoint", "memory": "memory"}.get(
            stem, "bank" if "bank" in stem else "note"
        )
    if rel == "USER.md":
        return "memory"
    value = props.get("type")
    return value.lower() if isinstance(value, str) and re.fullmatch(r"[\w-]+", value) else "note"


def _prop(props: Mapping[str, object], *names: str) -> str:
    for name in names:
        value = props.get(name)
        if value is not None and not isinstance(value, (dict, list)):
            return str(value)
    return ""


def _author(rel: str, props: Mapping[str, object]) -> str:
    folders = rel.split("/")
    if folders[0] != "agents":
        return _prop(props, "agent", "author")
    agent = _prop(props, "agent", "author") or _prop(props, "name")
    if not agent and len(folders) >= 3:
        agent = folders[1]
    return agent


def entry_text(located: Located) -> str:
    """What an entry means, as ``embedding`` takes it: its summary and body."""
    e = located.entry
    return e.summary if e.body is None else f"{e.summary}\n{e.body}"


_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE)


def note_texts(rel: str, data: bytes, mtime: float) -> Iterator[tuple[Doc, str]]:
    """The sections of note ``rel`` as ``note_docs`` makes them (with no terms), each with what it
    means as ``embedding`` takes it: the note's title and the section's text. A section that is a
    heading alone is left out when others say more (its title is in theirs)."""
    empty = Terms({}, 0)
    text = data.decode("utf-8", errors="replace")
    props, parts = sections.split(text)
    ts, title, agent, kind, status = _head(rel, props, mtime)
    title = title.replace("-", " ").replace("_", " ")
    if not parts:
        loc = (0, len(data), 1, max(1, text.count("\n")))
        yield Doc(f"n:{rel}#0", "section", rel, agent, "", kind, status, ts, "", empty, loc), title
    said = [_HEADING_RE.sub("", sec.text).strip() for sec in parts]
    alone = [s.count("\n") == 0 and s == sec.heading.strip() for s, sec in zip(said, parts, strict=True)]
    for i, sec in enumerate(parts):
        if alone[i] and not all(alone):
            continue
        loc = (sec.start, sec.end, sec.line_start, sec.line_end)
        doc = Doc(f"n:{rel}#{i}", "section", rel, agent, "", kind, status, ts, sec.heading, empty, loc)
        head = "" if said[i].lower().startswith(title.lower()) else f"{title}\n"
        yield doc, head + said[i]


def _head(rel: str, props: Mapping[str, object], mtime: float) -> tuple[str, str, str, str, str]:
    """A note's (time, title, author, type, status) from its properties and place."""
    ts = _prop(props, "ts", "updated", "date", "created") or time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(mtime)
    )
    title = " ".join(x for x in (_prop(props, "id"), _prop(props, "title") or Path(rel).stem) if x)
    return ts, title, _author(rel, props).lower(), note_type(rel, props), _prop(props, "status").lower()


def note_docs(rel: str, data: bytes, mtime: float, analysis: Analysis) -> Iterator[Doc]:
    """The sections of note ``rel`` (its bytes ``data``, modified at ``mtime``)."""
    text = data.decode("utf-8", errors="replace")
    props, parts = sections.split(text)
    ts, title, agent, kind, status = _head(rel, props, mtime)

    def doc(i: int, heading: str, body: str, loc: tuple[int, int, int, int]) -> Doc:
        terms = _terms(analysis, body)
        return Doc(f"n:{rel}#{i}", "section", rel, agent, "", kind, status, ts, heading, terms, loc)

    if not parts:  # only properties: still findable by its title and fields
        yield doc(0, "", title, (0, len(data), 1, max(1, text.count("\n"))))
    for i, sec in enumerate(parts):
        body = f"{title}\n{sec.heading}\n{sec.heading}\n{sec.text}"
        yield doc(i, sec.heading, body, (sec.start, sec.end, sec.line_start, sec.line_end))
