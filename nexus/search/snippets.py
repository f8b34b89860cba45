"""Snippets: about 200 characters of a hit's text around its first matched word, matched words in
bold (never inside a wikilink or text already bold).

A text is flattened once (``flatten``: whitespace runs made one space, and its words outside links and
bold found with their positions); cutting a snippet from it for a query (``cut``) then only looks up
each word among the query's matched terms. ``verdicts`` keeps an entry's flattened texts for the life
of the process, so a hit seen again costs one lookup per word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .language import WORD_RE, MatchedTerms

_LINK_OR_STRONG_RE = re.compile(r"\[\[[^\]]*\]\]|\*\*[^*]+\*\*")


@dataclass(frozen=True, slots=True)
class Flat:
    """A text on one line, and its words outside wikilinks and bold: (start, end, lowercased)."""

    text: str
    words: tuple[tuple[int, int, str], ...]


def flatten(text: str) -> Flat:
    flat = " ".join(text.split())
    fenced = [(m.start(), m.end()) for m in _LINK_OR_STRONG_RE.finditer(flat)]
    words = tuple(
        (m.start(), m.end(), m.group(0).lower())
        for m in WORD_RE.finditer(flat)
        if not fenced or not any(a <= m.start() < b for a, b in fenced)
    )
    return Flat(flat, words)


def cut(flat: Flat, terms: MatchedTerms, width: int = 200) -> str:
    """The snippet of ``flat`` for a query whose matched terms are ``terms``."""
    text = flat.text
    matches = [(s, e) for s, e, word in flat.words if word in terms]
    if not matches:
        return text[:width] + ("…" if len(text) > width else "")
    first = matches[0][0]
    begin = max(0, first - width // 3)
    if begin:
        space = text.find(" ", begin)
        begin = space + 1 if 0 <= space < first else begin
    stop = min(len(text), begin + width)
    out, pos = [], begin
    for s, e in matches:
        if s < begin or e > stop:
            continue
        out.append(text[pos:s])
        out.append(f"**{text[s:e]}**")
        pos = e
    out.append(text[pos:stop])
    return ("…" if begin else "") + "".join(out) + ("…" if stop < len(text) else "")


def snippet(text: str, terms: MatchedTerms, width: int = 200) -> str:
    return cut(flatten(text), terms, width)


def entry_snippet(summary: str, body: str | None, terms: MatchedTerms) -> str:
    """An entry's snippet: from its body when a word of the body matched, else from summary and body."""
    if body and any(m.group(0).lower() in terms for m in WORD_RE.finditer(body)):
        return snippet(body, terms)
    return snippet(summary if not body else f"{summary} — {body}", terms)


def section_text(text: str) -> str:
    """A section without its heading line (the hit shows the heading apart)."""
    first, _, rest = text.partition("\n")
    return rest if first.lstrip().startswith("#") and rest.strip() else text
