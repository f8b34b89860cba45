"""What a search asks for: the query text checked and parsed, its phrases, its time filters.

Whoosh query syntax (fields, "phrases", prefix*, AND OR NOT, parentheses), every word as the stems
the index holds (``language``). Syntax errors are caught here first, before any indexing, as one
line each (``QueryError``). A query of plain words skips the parser (the same query, ~0.5 ms less)
and is answered with every-word matches first, then partial ones. The index keeps no positions:
a phrase is an AND of its words, and its words in order are checked against the text afterwards.
"""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass

from ..errors import InputError, QueryError
from . import engine
from .language import DEFAULT_LANGUAGES, WORD_RE, analysis

QUERY_FIELDS = ("text", "agent", "channel", "type", "status", "path", "kind")
OPERATORS = frozenset({"AND", "OR", "NOT", "ANDNOT", "ANDMAYBE"})
_FIELD_RE = re.compile(r"(?:(?<=^)|(?<=[\s(]))([A-Za-z_]\w*):(?=\S)")
_PHRASE_RE = re.compile(r'"([^"]*)"')
_TIME_RE = re.compile(r"(\d{4}-\d\d-\d\d)(?:[T ](\d\d:\d\d)(?::(\d\d))?Z?)?")
_PLAIN_RE = re.compile(r"[^\W_]\w*(?:\s+[^\W_]\w*)*")  # words only: no syntax at all
_NEGATION_RE = re.compile(r"\b(OR|NOT|ANDNOT)\b|(^|\s)-")


def is_plain(text: str) -> bool:
    """Words only, no query syntax: answered with every-word matches first, then partial ones."""
    plain = text.strip()
    return bool(_PLAIN_RE.fullmatch(plain)) and not (OPERATORS | {"TO"}).intersection(plain.split())


def _check_nesting(text: str) -> None:
    if text.count('"') % 2:
        raise QueryError(f'unbalanced quote in query {text!r}: close the phrase with "')
    depth = 0
    for ch in _PHRASE_RE.sub("", text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            raise QueryError(f"unbalanced parentheses in query {text!r}: a ) closes nothing")
    if depth:
        raise QueryError(f"unbalanced parentheses in query {text!r}: a ( is never closed")


MAX_QUERY = 1_000  # characters a query may have
MODES = ("text", "meaning", "hybrid")


def check_text(text: str, mode: str = "hybrid") -> None:
    """A ``QueryError`` (one line) for an empty query, one longer than ``MAX_QUERY`` characters, one
    with a control character, or an unknown mode."""
    if mode not in MODES:
        raise QueryError(f"unknown search mode {mode!r}; modes: {', '.join(MODES)}")
    if not text.strip():
        raise QueryError("the query is empty")
    if len(text) > MAX_QUERY:
        raise QueryError(f"the query is {len(text):,} characters long; at most {MAX_QUERY:,}")
    bad = next((ch for ch in text if ch not in "\t\n" and unicodedata.category(ch) in ("Cc", "Cf")), None)
    if bad is not None:
        raise QueryError(f"the query holds a control character (U+{ord(bad):04X}); remove it")


def words_of(text: str) -> str:
    """What a query means, for ``embedding``: its words and phrases without fields or operators."""
    kept = [w for w in _PHRASE_RE.sub(r" \1 ", text).split() if w not in OPERATORS and ":" not in w]
    return " ".join(w.strip('()"*').lstrip("-") for w in kept).strip()


_SYNTAX_RE = re.compile(r'["()*]|(?:^|\s)[-+]\S|(?:^|[\s(])[A-Za-z_]\w*:\S')


def plain_words(text: str) -> str | None:
    """A query with no syntax (no phrase, field, operator, prefix or parentheses) as its words alone
    (punctuation dropped: a question mark is no wildcard here); None for a query with syntax."""
    if _SYNTAX_RE.search(text) or (OPERATORS | {"TO"}).intersection(text.split()):
        return None
    return " ".join(WORD_RE.findall(text))


def check_syntax(text: str) -> None:
    """A ``QueryError`` (one line) for an empty query, unbalanced quotes or parentheses, an unknown
    field, or an operator with nothing on one side."""
    if not text.strip():
        raise QueryError("the query is empty")
    _check_nesting(text)
    for name in _FIELD_RE.findall(_PHRASE_RE.sub("", text)):
        if name not in QUERY_FIELDS:
            raise QueryError(f"unknown field {name!r} in query; fields: {', '.join(QUERY_FIELDS)}")
    words = _PHRASE_RE.sub("x", text).split()
    if words and (words[-1] in OPERATORS or words[0] in OPERATORS - {"NOT"}):
        op = words[0] if words[0] in OPERATORS else words[-1]
        raise QueryError(f"query {text!r} starts or ends with the operator {op}")


def _phrases(text: str) -> list[re.Pattern[str]]:
    """The phrases every hit must contain, when the query has no OR or negation to make that wrong."""
    if _NEGATION_RE.search(_PHRASE_RE.sub("", text)):
        return []
    out: list[re.Pattern[str]] = []
    for raw in _PHRASE_RE.findall(text):
        words = WORD_RE.findall(raw.lower())
        if len(words) > 1:
            out.append(re.compile(r"\b" + r"\W+".join(map(re.escape, words)) + r"\b", re.IGNORECASE))
    return out


def parse_query(
    text: str, langs: tuple[str, ...] = DEFAULT_LANGUAGES, *, shortcut: bool = True
) -> tuple[engine.Query, list[re.Pattern[str]]]:
    """A query and the phrases every hit must contain (checked against the text). ``shortcut``:
    plain words skip the parser (False: parse them, for checking that both agree)."""
    words_of = analysis(langs)
    if shortcut and is_plain(text):
        words = words_of.words(text.strip())  # what the parser makes of words alone
        if words:
            return engine.Query.of_words([tuple(("text", s) for s in words_of.stems(w)) for w in words]), []
    check_syntax(text)
    return engine.Query.parse(text, words_of.stems), _phrases(text)


@dataclass(frozen=True)
class Filters:
    """A search's filters: exact field values (checked per document from a set) and, kept apart, a
    path pattern and a time range (checked on the stored fields of candidates)."""

    terms: tuple[engine.Term, ...]
    path: str | None
    since: str | None
    until: str | None

    @classmethod
    def of(
        cls,
        *,
        agent: str | None,
        type: str | None,
        channel: str | None,
        since: str | None,
        until: str | None,
        path: str | None,
    ) -> Filters:
        terms = tuple(
            (name, value.lower())
            for name, value in (("agent", agent), ("type", type), ("channel", channel))
            if value
        )
        if path and not any(ch in path for ch in "*?["):
            terms += (("path", path),)
            path = None
        return cls(terms, path, _when(since, "--since"), _when(until, "--until"))


def _when(value: str | None, flag: str) -> str | None:
    """A time filter as an ISO UTC time: a date, a date and time, or an age (30m, 12h, 2d)."""
    if value is None:
        return None
    m = re.fullmatch(r"(\d+)([mhd])", value.strip())
    if m:
        seconds = int(m.group(1)) * {"m": 60, "h": 3600, "d": 86400}[m.group(2)]
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds))
    m = _TIME_RE.fullmatch(value.strip())
    if not m:
        raise InputError(
            f"{flag} {value!r}: use a UTC time like 2026-11-30 or 2026-11-30T04:00, "
            "or an age like 30m, 12h, 2d"
        )
    return f"{m.group(1)}T{m.group(2) or '00:00'}:{m.group(3) or '00'}Z"
