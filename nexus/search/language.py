"""How text becomes index terms, in the index's languages.

Words are runs of ``\\w`` characters, lowercased; the stop words of every language of the index are
dropped; each word is indexed as its Snowball stem in every language (the distinct ones: "paginate"
finds "paginates" and "paginación"), accents folded after stemming. The stemmers are the Snowball
project's own, in C (PyStemmer), for the languages Whoosh ships stop words for (``engine``); stems
are memoised per word, the vocabulary being small next to the text.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from ..errors import QueryError

WORD_RE = re.compile(r"\w+")
DEFAULT_LANGUAGES = ("en",)
SNOWBALL = {  # a language's code -> its Snowball stemmer (Dutch: Porter's, as Whoosh's was)
    "ar": "arabic",
    "da": "danish",
    "de": "german",
    "en": "english",
    "es": "spanish",
    "fi": "finnish",
    "fr": "french",
    "hu": "hungarian",
    "it": "italian",
    "nl": "dutch_porter",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sv": "swedish",
}
_WORD_BYTES = b"0123456789_abcdefghijklmnopqrstuvwxyz"
# ASCII bytes: a word character lowercased, anything else a space (``\w`` on ASCII is [0-9A-Za-z_])
_ASCII_WORDS = bytes(
    (b + 32 if 65 <= b <= 90 else b) if (65 <= b <= 90 or b in _WORD_BYTES) else 32 for b in range(256)
)


def spaced(text: str) -> str | None:
    """An ASCII ``text`` lowercased with every character that is not a word character made a space
    (its words where they stand: ``spaced(text).split()`` is ``WORD_RE.findall(text.lower())``, ~5x
    faster than the regular expression); None when ``text`` is not ASCII."""
    return text.encode("ascii").translate(_ASCII_WORDS).decode("ascii") if text.isascii() else None


def lower_words(text: str) -> list[str]:
    """``WORD_RE.findall(text.lower())``, without the regular expression when ``text`` is ASCII."""
    low = spaced(text)
    return low.split() if low is not None else WORD_RE.findall(text.lower())


def check_languages(languages: Sequence[str]) -> tuple[str, ...]:
    """Languages as Whoosh names them (``en``, ``es``, ``it``…), checked, in order, without repeats."""
    from . import engine

    out: list[str] = []
    for name in languages:
        code = engine.language_code(str(name).strip().lower())
        if code is None or code not in SNOWBALL:
            known = ", ".join(n for n in engine.language_names() if n in SNOWBALL)
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


MEMO_WORDS = 50_000  # words whose stems an Analysis remembers (~10 MB, and ~13 MB more for its inverse
#                      in a process that searches; a build's vocabulary grows with the log: a million
#                      words remembered held ~190 MB in a build process)
BUILD_MEMO_WORDS = 10_000  # ... in a full build's processes (~2 MB each: with stemming at ~0.5 us a
#                            word, a larger memo saves a build little and costs each process memory)


class Analysis:
    """One index's way of turning text into terms (see the module's docstring)."""

    def __init__(self, langs: tuple[str, ...], memo_words: int | None = None) -> None:
        from . import engine

        self.langs = langs
        stop = set(engine.STOP)
        for code in langs:
            stop.update(engine.stop_words(code))
        self.stop = frozenset(stop)
        self.stemmers = [stemmer(code) for code in langs]
        self.memo: dict[str, tuple[str, ...]] = {}
        self.memo_words = MEMO_WORDS if memo_words is None else memo_words
        # stem -> the words of the memo with that stem: made when a search first asks (a build's
        # processes never do), then kept up as the memo grows
        self._inverse: dict[str, set[str]] | None = None
        self.added = 0  # words added to the memo (a query's matched words are worked out again)

    def stems(self, word: str) -> tuple[str, ...]:
        got = self.memo.get(word)
        if got is None:
            got = tuple(dict.fromkeys(fold(stem(word)) or word for stem in self.stemmers))
            if len(self.memo) < self.memo_words:
                self.memo[word] = got
                if self._inverse is not None:
                    for s in got:
                        self._inverse.setdefault(s, set()).add(word)
                self.added += 1
        return got

    def inverse(self) -> dict[str, set[str]]:
        """stem -> the words of the memo with that stem."""
        while self._inverse is None:
            before = self.added
            inverse: dict[str, set[str]] = {}
            for word, stems in list(self.memo.items()):
                for s in stems:
                    inverse.setdefault(s, set()).add(word)
            if self.added == before:  # (else the memo grew meanwhile: made again)
                self._inverse = inverse
        return self._inverse

    def words(self, value: str) -> list[str]:
        return [w for w in lower_words(value) if w not in self.stop]

    def counts(self, value: str) -> tuple[dict[str, int], int]:
        """Each stem's frequency in ``value``, and its number of (non-stop) words."""
        words = self.words(value)
        terms: Counter[str] = Counter()
        for word, freq in Counter(words).items():
            for stem in self.stems(word):
                terms[stem] += freq
        return dict(terms), len(words)


def stemmer(code: str) -> Callable[[str], str]:
    """The Snowball stemmer of a language's code (checked by ``check_languages``)."""
    import Stemmer

    fn: Callable[[str], str] = Stemmer.Stemmer(SNOWBALL[code]).stemWord
    return fn


@functools.lru_cache(maxsize=8)
def analysis(langs: tuple[str, ...]) -> Analysis:
    return Analysis(langs)


class MatchedTerms:
    """The index terms a query matched; a word of a snippet matches when it is one or one of its
    stems is one. ``matched(words)``: the set of matched words, complete for ``words`` (lowercased)
    and for every word of the memo: the memo's words with a matched stem (``Analysis.inverse``) are
    taken once a query, so asking about a text's words is a few set operations in C; only a word
    the memo lacks is stemmed (and remembered)."""

    def __init__(self, analysis: Analysis, terms: Sequence[str] = ()) -> None:
        self.analysis = analysis
        self.terms = set(terms)
        self.words: set[str] = set()
        self.outside: set[str] = set()  # words beyond a full memo already looked at (this query)
        self.added = -1  # the memo's ``added`` when ``words`` was made from it

    def _from_memo(self) -> None:
        a = self.analysis
        self.added = a.added
        inverse = a.inverse()
        self.words = self.terms.union(*(inverse[t] for t in self.terms if t in inverse))
        self.outside.clear()

    def matched(self, words: Iterable[str]) -> set[str]:
        """The matched words, sure to include each of ``words`` that matches (see the class)."""
        a = self.analysis
        terms = self.terms
        asked = words if isinstance(words, (set, frozenset)) else set(words)
        while True:
            start = a.added
            if self.added != start:  # (the memo grew since: another search, an index update)
                self._from_memo()
            new = asked.difference(a.memo)
            if new and self.outside:
                new -= self.outside
            for word in new:
                if word in terms or not terms.isdisjoint(a.stems(word)):
                    self.words.add(word)
                if word not in a.memo:  # (the memo is full)
                    self.outside.add(word)
            if a.added == start + len(new.difference(self.outside)):  # (grown by these words alone)
                self.added = a.added
                return self.words

    def __contains__(self, word: str) -> bool:
        return word in self.matched((word,))
