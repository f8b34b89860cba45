"""How text becomes index terms, in the index's languages.

Words are runs of ``\\w`` characters, lowercased; the stop words of every language of the index are
dropped; each word is indexed as its Snowball stem in every language (the distinct ones: "paginate"
finds "paginates" and "paginación"), accents folded after stemming. Whoosh ships the stemmers
(``engine``); stems are memoised per word, the vocabulary being small next to the text.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence

from ..errors import QueryError

WORD_RE = re.compile(r"\w+")
DEFAULT_LANGUAGES = ("en",)


def check_languages(languages: Sequence[str]) -> tuple[str, ...]:
    """Languages as Whoosh names them (``en``, ``es``, ``it``…), checked, in order, without repeats."""
    from . import engine

    out: list[str] = []
    for name in languages:
        code = engine.language_code(str(name).strip().lower())
        if code is None:
            known = ", ".join(engine.language_names())
            raise QueryError(f"search language {name!r} has no stemmer; one of: {known}")
        if code not in out:
            out.append(code)
    return tuple(out) or DEFAULT_LANGUAGES


def fold(word: str) -> str:
    """A word without its accents."""
    if word.isascii():
        return word
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


MEMO_WORDS = 50_000  # words whose stems an Analysis remembers (~10 MB; a build's vocabulary grows
#                      with the log: a million words remembered held ~190 MB in a build process)


class Analysis:
    """One index's way of turning text into terms (see the module's docstring)."""

    def __init__(self, langs: tuple[str, ...]) -> None:
        from . import engine

        self.langs = langs
        stop = set(engine.STOP)
        for code in langs:
            stop.update(engine.stop_words(code))
        self.stop = frozenset(stop)
        self.stemmers = [engine.stemmer(code) for code in langs]
        self.memo: dict[str, tuple[str, ...]] = {}

    def stems(self, word: str) -> tuple[str, ...]:
        got = self.memo.get(word)
        if got is None:
            got = tuple(dict.fromkeys(fold(stem(word)) or word for stem in self.stemmers))
            if len(self.memo) < MEMO_WORDS:
                self.memo[word] = got
        return got

    def words(self, value: str) -> list[str]:
        return [w for w in WORD_RE.findall(value.lower()) if w not in self.stop]

    def counts(self, value: str) -> tuple[dict[str, int], int]:
        """Each stem's frequency in ``value``, and its number of (non-stop) words."""
        words = self.words(value)
        terms: Counter[str] = Counter()
        for word, freq in Counter(words).items():
            for stem in self.stems(word):
                terms[stem] += freq
        return dict(terms), len(words)


@functools.lru_cache(maxsize=8)
def analysis(langs: tuple[str, ...]) -> Analysis:
    return Analysis(langs)


class _Matches(dict[str, bool]):
    """word -> whether it matches, worked out on first lookup (a snippet asks about every word it
    shows: a known word costs one dict lookup in C)."""

    def __init__(self, analysis: Analysis, terms: set[str]) -> None:
        super().__init__()
        self.analysis = analysis
        self.terms = terms

    def __missing__(self, word: str) -> bool:
        terms = self.terms
        got = word in terms or not terms.isdisjoint(self.analysis.memo.get(word) or self.analysis.stems(word))
        self[word] = got
        return got


class MatchedTerms:
    """The index terms a query matched; a word of a snippet matches when one of its stems is one.
    ``known[word]`` is the fast form of ``word in terms``."""

    def __init__(self, analysis: Analysis, terms: Sequence[str] = ()) -> None:
        self.analysis = analysis
        self.terms = set(terms)
        self.known = _Matches(analysis, self.terms)

    def __contains__(self, word: str) -> bool:
        return self.known[word]
