"""Splitting a Markdown note into sections by heading (markdown-it-py), for the search index.

A section runs from a heading line to the line before the next heading of any level; text before the
first heading is a section with an empty heading. Headings inside code blocks are not headings
(markdown-it knows). Line numbers are 1-based and count the frontmatter, so they match what a person
sees in an editor; byte offsets let the index read a section's text back from the file.
"""

from __future__ import annotations

from typing import Any

from ..records import Section

# Frontmatter properties the index keeps as fields when a note has them.
PROPERTIES = ("status", "author", "agent", "title", "type", "id", "date", "created", "updated", "ts")


def split_frontmatter(text: str) -> tuple[dict[str, Any], int]:
    """(properties, number of lines the frontmatter block takes). Bad YAML gives ({}, its lines)."""
    if not text.startswith("---\n") and not text.startswith("---\r\n"):
        return {}, 0
    lines = text.split("\n")
    for i in range(1, min(len(lines), 2000)):
        if lines[i].rstrip("\r") in ("---", "..."):
            block = "\n".join(lines[: i + 1]) + "\n"
            try:
                from ..storage import notes

                props, _ = notes.parse(block + "\n")
            except Exception:  # a note with broken YAML is still indexed as text
                props = {}
            return props, i + 1
    return {}, 0


def _without_meta(lines: list[str], fm_lines: int) -> int:
    """How many body lines count: all but a last ``%% nexus:meta`` line (machine fields, see
    meta.py: no one searches for a signature) and the blank lines after it."""
    from ..storage.meta import MARK

    n = len(lines)
    while n > fm_lines and not lines[n - 1].strip():
        n -= 1
    if n > fm_lines and lines[n - 1].startswith(MARK):
        return n - 1 - fm_lines
    return len(lines) - fm_lines


def split(text: str) -> tuple[dict[str, Any], list[Section]]:
    """A note's properties and its sections, in order. Never raises on odd Markdown."""
    from markdown_it import MarkdownIt

    props, fm_lines = split_frontmatter(text)
    lines = text.split("\n")
    body = "\n".join(lines[fm_lines:])
    tokens = MarkdownIt("commonmark").parse(body)
    heads: list[tuple[int, int, int, str]] = []  # (first line, last line, level, heading) 0-based in body
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map is not None:
            inline = tokens[i + 1] if i + 1 < len(tokens) else None
            title = inline.content.strip() if inline is not None and inline.type == "inline" else ""
            heads.append((tok.map[0], tok.map[1] - 1, int(tok.tag[1:]), title))
    # byte offset where each line of the whole text starts
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line.encode("utf-8")) + 1)
    total = len(text.encode("utf-8"))

    def offset(line0: int) -> int:
        return min(starts[line0], total) if line0 < len(starts) else total

    n_body = _without_meta(lines, fm_lines)
    bounds: list[tuple[int, int, str, int]] = []  # (start line, end line exclusive, heading, level)
    first = heads[0][0] if heads else n_body
    if first > 0:
        bounds.append((0, first, "", 0))
    for k, (start, _last, level, title) in enumerate(heads):
        end = heads[k + 1][0] if k + 1 < len(heads) else n_body
        bounds.append((start, end, title, level))
    out: list[Section] = []
    for start, end, title, level in bounds:
        chunk = "\n".join(lines[fm_lines + start : fm_lines + end]).strip("\n")
        if not chunk.strip() and not title:
            continue
        # trim trailing blank lines from the line range
        last = end - 1
        while last > start and not lines[fm_lines + last].strip():
            last -= 1
        out.append(
            Section(
                heading=title,
                level=level,
                line_start=fm_lines + start + 1,
                line_end=fm_lines + last + 1,
                start=offset(fm_lines + start),
                end=offset(fm_lines + last + 1),
                text=chunk,
            )
        )
    return props, out
