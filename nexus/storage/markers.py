"""Git conflict markers: what a plain ``git merge`` (a clone without the nexus merge driver) leaves in a
file both sides changed.

A region is recognised only whole: a line starting ``<<<<<<<``, optionally a ``|||||||`` line (the
common ancestor, ``merge.conflictStyle=diff3``), a line holding only ``=======``, and a line starting
``>>>>>>>``, in that order. A lone ``=======`` (a Markdown heading underline) is text. :func:`sides`
gives the file as each side wrote it (the text outside the regions kept, each region replaced by that
side's lines), so the file kind's merge rule (``sync/merge.py``) can take both sides as the driver would.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path


@functools.cache
def _line() -> re.Pattern[bytes]:
    """A marker line; compiled when a file first holds ``<<<<<<<`` (most processes never see one)."""
    return re.compile(rb"^(<{7}|\|{7}|={7}|>{7})(?:[ \t].*)?\r?$", re.M)


_OPEN = b"<" * 7


@dataclass(frozen=True)
class Region:
    """One conflict region: its byte range and first line (1-based), and each side's bytes."""

    start: int
    end: int
    line: int
    ours: bytes
    base: bytes | None  # None: no ancestor section (the default conflict style)
    theirs: bytes


def regions(data: bytes) -> list[Region]:
    """Every whole conflict region of ``data``, in file order (cheap when there is none)."""
    if _OPEN not in data:
        return []
    out: list[Region] = []
    state, start, mid, anc = "", 0, 0, -1
    ours = base = b""
    for m in _line().finditer(data):
        mark = m.group(1)[:1]
        line_end = m.end() + 1 if m.end() < len(data) else m.end()
        if mark == b"<":
            state, start, mid, anc = "ours", m.start(), line_end, -1
        elif mark == b"|" and state == "ours":
            ours, state, anc = data[mid : m.start()], "base", line_end
        elif mark == b"=" and state in ("ours", "base") and m.group(0).rstrip(b"\r") == b"=" * 7:
            if state == "ours":
                ours = data[mid : m.start()]
            else:
                base = data[anc : m.start()]
            state, mid = "theirs", line_end
        elif mark == b">" and state == "theirs":
            out.append(
                Region(
                    start,
                    line_end,
                    data.count(b"\n", 0, start) + 1,
                    ours,
                    base if anc >= 0 else None,
                    data[mid : m.start()],
                )
            )
            state = ""
    return out


def sides(data: bytes, found: list[Region] | None = None) -> tuple[bytes, bytes, bytes]:
    """(base, ours, theirs): the file as the ancestor and each side wrote it. Without an ancestor
    section the base is empty (the rules then keep what either side has)."""
    found = regions(data) if found is None else found
    parts: dict[str, list[bytes]] = {"base": [], "ours": [], "theirs": []}
    at = 0
    with_base = all(r.base is not None for r in found)
    for r in found:
        for side in parts:
            parts[side].append(data[at : r.start])
        parts["ours"].append(r.ours)
        parts["theirs"].append(r.theirs)
        parts["base"].append(r.base or b"")
        at = r.end
    for side in parts:
        parts[side].append(data[at:])
    base = b"".join(parts["base"]) if found and with_base else b""
    return base, b"".join(parts["ours"]), b"".join(parts["theirs"])


_EDGE = re.compile(rb"^(?:<{7}|>{7}|\|{7})(?:[ \t].*)?\r?$", re.M)


def has_edge_line(data: bytes) -> bool:
    """Whether ``data`` holds a line that opens, closes or splits a conflict region (``<<<<<<<``,
    ``>>>>>>>``, ``|||||||``): part of a conflict even when its region is cut (never a person's text)."""
    return (b"<" * 7 in data or b">" * 7 in data or b"|" * 7 in data) and _EDGE.search(data) is not None


# The files nexus merges by kind (sync/merge.py), where a marker is never text: (folder, pattern).
MANAGED = (
    ("log", "*.md"),
    ("decisions", "D-*.md"),
    ("state", "project.md"),
    ("state/history", "v*.md"),
    ("agents", "*/checkpoint.md"),
    ("agents", "*/checkpoint-history.md"),
    ("agents", "*/MEMORY.md"),
    ("agents", "*/bank.md"),
    ("", "USER.md"),
    ("memory", "REVIEW.md"),
    ("handoff", "*.md"),
)


def marked_files(root: Path) -> list[tuple[str, list[Region]]]:
    """Every file nexus merges by kind that holds whole conflict regions: (vault-relative path, regions)."""
    out = []
    for folder, pattern in MANAGED:
        base = root / folder if folder else root
        if not base.is_dir():
            continue
        for path in sorted(base.glob(pattern)):
            try:
                data = path.read_bytes()
            except OSError:
                continue
            found = regions(data)
            if found:
                out.append((path.relative_to(root).as_posix(), found))
    return out


def describe(rel: str, found: list[Region]) -> str:
    """verify's line for a file with conflict markers."""
    lines = ", ".join(str(r.line) for r in found[:5]) + (", …" if len(found) > 5 else "")
    return (
        f"git conflict markers (<<<<<<< … ======= … >>>>>>>) at line{'s' if len(found) > 1 else ''} {lines}: "
        "a merge without the nexus driver; nothing between them is anyone's signed text. Repair: "
        "`nexus git resolve` (takes both sides as the merge driver would)"
    )
