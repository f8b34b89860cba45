"""Did you mean …: the known word closest to one a person mistyped (an agent's name, a command, an
option, a ``NEXUS_*`` variable), so that every error about an unknown name points at a way forward.

A plain function over strings, importable from every layer; the callers say what the words are.
"""

from __future__ import annotations

from collections.abc import Iterable

# how alike two words must be (difflib's ratio, after folding) to be offered: "ela"/"ella" is 0.86,
# "lgo"/"log" 0.67 (a swap), "chanel"/"channel" 0.92; "bob"/"ella" 0, "ela"/"lyra" 0.57
CUTOFF = 0.6


def _folded(word: str) -> str:
    """A word compared without case, leading dashes and separators: ``--maxchars`` is ``--max-chars``."""
    return word.lstrip("-").lower().replace("-", "").replace("_", "")


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known word most like ``word``, or None when none is close (never ``word`` itself)."""
    by_fold: dict[str, str] = {}
    for candidate in known:
        if candidate != word:
            by_fold.setdefault(_folded(candidate), candidate)
    folded = _folded(word)
    if folded in by_fold:  # the same word but for case or separators
        return by_fold[folded]
    import difflib  # (here: only a mistake pays for its import, ~5 ms, never a command typed right)

    found = difflib.get_close_matches(folded, list(by_fold), n=1, cutoff=CUTOFF)
    return by_fold[found[0]] if found else None


def did_you_mean(word: str, known: Iterable[str], quote: str = "'") -> str:
    """`` (did you mean 'ella'?)`` when a known word is close to ``word``, else an empty string."""
    match = closest(word, known)
    return f" (did you mean {quote}{match}{quote}?)" if match else ""
