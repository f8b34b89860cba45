"""Snippets: about 200 characters of a hit's text around its first matched word, matched words in
bold (never inside a wikilink or text already bold).

A text is flattened once (``flatten``: whitespace runs made one space, the spans of its links and
bold found); cutting a snippet from it for a query (``cut``) finds its words outside links and bold
as it goes, looking each up among the query's matched terms up to the first match, then only within
the window around it. ``verdicts`` keeps an entry's flattened texts for the life of the process.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .language import WORD_RE, MatchedTerms

_LINK_OR_STRONG_RE = re.compile(r"\[\[[^\]]*\]\]|\*\*[^*]+\*\*")


@dataclass(frozen=True, slots=True)
class Flat:
    """A text on one line, and the spans of its wikilinks and bold (whose words are never bolded)."""

    text: str
    fenced: tuple[tuple[int, int], ...]


def flatten(text: str) -> Flat:
    flat = " ".join(text.split())
    if "[[" not in flat and "**" not in flat:
        return Flat(flat, ())
    return Flat(flat, tuple((m.start(), m.end()) for m in _LINK_OR_STRONG_RE.finditer(flat)))


def _words(flat: Flat) -> Iterator[re.Match[str]]:
    """The words outside wikilinks and bold, in text order, found as they are asked for (a snippet
    looks only as far as its window)."""
    fenced = flat.fenced
    if not fenced:
        yield from WORD_RE.finditer(flat.text)
        return
    for m in WORD_RE.finditer(flat.text):
        s = m.start()
        if not any(a <= s < b for a, b in fenced):
            yield m


def _first(flat: Flat, known: Mapping[str, bool]) -> tuple[re.Match[str] | None, Iterator[re.Match[str]]]:
    """The first word of ``flat`` (outside links and bold) that is a matched term, and the words
    after it. Without links or bold, the words are looked up in C up to the first that matches
    (``findall``, ``map``), and only that many matches are made."""
    if flat.fenced:
        words = _words(flat)
        return next((m for m in words if known[m.group(0).lower()]), None), words
    found = map(known.__getitem__, map(str.lower, WORD_RE.findall(flat.text)))
    at = next(itertools.compress(itertools.count(), found), None)
    words = WORD_RE.finditer(flat.text)
    return (None, words) if at is None else (next(itertools.islice(words, at, None)), words)


def _alone(text: str, first: re.Match[str], stop: int, known: Mapping[str, bool]) -> bool:
    """Whether no word after ``first`` and ending by ``stop`` is a matched term (looked up in C): the
    snippet then bolds ``first`` alone. A word cut by ``stop`` is not in the window."""
    after = WORD_RE.findall(text, first.end(), stop)
    if after and stop < len(text) and WORD_RE.match(text, stop - 1) and WORD_RE.match(text, stop):
        after.pop()  # (runs on past stop: the window ends before it)
    return not any(map(known.__getitem__, map(str.lower, after)))


def cut(flat: Flat, terms: MatchedTerms, width: int = 200) -> str:
    """The snippet of ``flat`` for a query whose matched terms are ``terms``: words are looked up
    only up to the first match, then within the window around it."""
    text = flat.text
    known = terms.known
    first, words = _first(flat, known)
    if first is None:
        return text[:width] + ("…" if len(text) > width else "")
    start = first.start()
    begin = max(0, start - width // 3)
    if begin:
        space = text.find(" ", begin)
        begin = space + 1 if 0 <= space < start else begin
    stop = min(len(text), begin + width)
    if not flat.fenced and _alone(text, first, stop, known):
        s, e = first.span()
        shown = text[begin:stop] if e > stop else f"{text[begin:s]}**{text[s:e]}**{text[e:stop]}"
        return ("…" if begin else "") + shown + ("…" if stop < len(text) else "")
    out, pos = [], begin
    for m in itertools.chain((first,), words):
        s, e = m.span()
        if e > stop:
            break  # (and every later word)
        if s == start or known[m.group(0).lower()]:
            out.append(text[pos:s])
            out.append(f"**{text[s:e]}**")
            pos = e
    out.append(text[pos:stop])
    return ("…" if begin else "") + "".join(out) + ("…" if stop < len(text) else "")


def snippet(text: str, terms: MatchedTerms, width: int = 200) -> str:
    return cut(flatten(text), terms, width)


def section_text(text: str) -> str:
    """A section without its heading line (the hit shows the heading apart)."""
    first, _, rest = text.partition("\n")
    return rest if first.lstrip().startswith("#") and rest.strip() else text
