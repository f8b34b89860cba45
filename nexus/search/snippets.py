"""Snippets: about 200 characters of a hit's text around its first matched word, matched words in
bold (never inside a wikilink or text already bold).

A text is flattened once (``flatten``: whitespace runs made one space, the spans of its links and
bold found, its words outside them listed, lowercased); ``verdicts`` keeps an entry's flattened texts
for the life of the process. Cutting a snippet from it for a query (``cut``) asks the query's
matched terms once for the set of the text's words that match (set operations in C, see
``MatchedTerms``), finds the first of them in the list, and looks at words again only within the
window around it. An ASCII text without links or bold is also kept lowercased with its other
characters made spaces (``spaced``), where a word is found with ``str.find``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from .language import WORD_RE, MatchedTerms, spaced

_LINK_OR_STRONG_RE = re.compile(r"\[\[[^\]]*\]\]|\*\*[^*]+\*\*")


@dataclass(frozen=True, slots=True)
class Flat:
    """A text on one line; the spans of its wikilinks and bold (whose words are never bolded); its
    words outside them, lowercased, in order and as a set; ``spaced(text)`` when it is ASCII and
    has neither links nor bold (else None)."""

    text: str
    fenced: tuple[tuple[int, int], ...]
    words: tuple[str, ...]
    vocab: frozenset[str]
    low: str | None


def flatten(text: str) -> Flat:
    flat = " ".join(text.split())
    if "[[" not in flat and "**" not in flat:
        low = spaced(flat)
        words = tuple(low.split()) if low is not None else tuple(map(str.lower, WORD_RE.findall(flat)))
        return Flat(flat, (), words, frozenset(words), low)
    fenced = tuple((m.start(), m.end()) for m in _LINK_OR_STRONG_RE.finditer(flat))
    words = tuple(m.group(0).lower() for m in _words(flat, fenced, 0))
    return Flat(flat, fenced, words, frozenset(words), None)


def joined(first: Flat, second: Flat) -> Flat | None:
    """``flatten(f"{a} — {b}")`` from the flattened ``a`` and ``b``, when both are ASCII text with
    words, without links or bold (the dash is not a word character: a space in ``low``); else None."""
    if first.low is None or second.low is None or not first.words or not second.words:
        return None
    text, low = f"{first.text} — {second.text}", f"{first.low}   {second.low}"
    return Flat(text, (), first.words + second.words, first.vocab | second.vocab, low)


def _words(text: str, fenced: tuple[tuple[int, int], ...], pos: int) -> Iterator[re.Match[str]]:
    """The words from ``pos`` on outside wikilinks and bold, in text order, found as they are asked
    for (a snippet looks only as far as its window)."""
    for m in WORD_RE.finditer(text, pos):
        s = m.start()
        if not fenced or not any(a <= s < b for a, b in fenced):
            yield m


def _span(flat: Flat, at: int) -> tuple[int, int]:
    """Where the ``at``-th word of ``flat.words`` stands: in ``flat.low``, the first occurrence of it
    as a whole word (an earlier one would be an earlier word: the caller asks for the first word that
    matches); otherwise counted by the regular expression."""
    low = flat.low
    if low is None:
        return next(itertools.islice(_words(flat.text, flat.fenced, 0), at, None)).span()
    word = flat.words[at]
    n, i = len(low), low.find(word)
    while i >= 0 and ((i and low[i - 1] != " ") or (i + len(word) < n and low[i + len(word)] != " ")):
        i = low.find(word, i + 1)
    if i < 0:  # (never: each of ``flat.words`` stands whole in ``low``)
        return next(itertools.islice(_words(flat.text, (), 0), at, None)).span()
    return i, i + len(word)


def _alone(flat: Flat, end: int, stop: int, matched: set[str]) -> bool:
    """Whether no word after the first match (ending at ``end``) and ending by ``stop`` is a matched
    word: the snippet then bolds the first alone. A word cut by ``stop`` is not in the window."""
    text, low = flat.text, flat.low
    if low is not None:
        after = low[end:stop].split()
        cut_through = stop < len(low) and low[stop - 1] != " " and low[stop] != " "
    else:
        after = [w.lower() for w in WORD_RE.findall(text, end, stop)]
        cut_through = bool(WORD_RE.match(text, stop - 1)) and bool(WORD_RE.match(text, stop))
    if after and stop < len(text) and cut_through:
        after.pop()  # (runs on past stop: the window ends before it)
    return matched.isdisjoint(after)


def cut(flat: Flat, terms: MatchedTerms, width: int = 200) -> str:
    """The snippet of ``flat`` for a query whose matched terms are ``terms`` (see the module)."""
    text = flat.text
    matched = terms.matched(flat.vocab)
    at = next(itertools.compress(itertools.count(), map(matched.__contains__, flat.words)), None)
    if at is None:
        return text[:width] + ("…" if len(text) > width else "")
    start, end = _span(flat, at)
    begin = max(0, start - width // 3)
    if begin:
        space = text.find(" ", begin)
        begin = space + 1 if 0 <= space < start else begin
    stop = min(len(text), begin + width)
    if end > stop or (not flat.fenced and _alone(flat, end, stop, matched)):
        bold = f"{text[begin:start]}**{text[start:end]}**{text[end:stop]}"
        shown = text[begin:stop] if end > stop else bold
        return ("…" if begin else "") + shown + ("…" if stop < len(text) else "")
    out = [text[begin:start], f"**{text[start:end]}**"]
    pos = end
    for m in _words(text, flat.fenced, end):
        s, e = m.span()
        if e > stop:
            break  # (and every later word)
        if m.group(0).lower() in matched:
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
