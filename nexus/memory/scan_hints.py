"""The words each shipped safety-scan rule needs: a text containing none of a rule's words cannot match
it, so the scan can tell "nothing to flag" without compiling the rules.

Compiling the ~30 rules of ``scan_rules.toml`` costs 20–40 ms of CPU, paid by every hook process that
shows text it has not scanned before (an entry new since the last turn); nearly every such text is
plain prose that breaks no rule. ``scan_hints.json`` holds, for each rule, words of which every match
must contain at least one, derived from the pattern itself (:func:`needed`: the parse tree's literal
runs that every alternative requires, lower-cased for the rules' IGNORECASE), and the sha256 of the
rules file it was derived from: hints of another rules file are never used. The check is exact only
for ASCII text (case-insensitive matching there is plain lower-casing), so other text, a rule without
words and a vault with rules of its own always take the full scan. Regenerate after editing the rules:

    python -m nexus.memory.scan_hints --write

(a test fails while the file differs from what the rules give).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

RULES_PATH = Path(__file__).parent / "scan_rules.toml"
HINTS_PATH = Path(__file__).parent / "scan_hints.json"
# letters IGNORECASE matches to an ASCII letter (dotless and dotted i, long s, Kelvin sign): a needed word
# holding one could be matched by ASCII text without containing it
_ASCII_FOLDS = frozenset("ıİſ\u212a")

Hint = tuple[str, str, tuple[str, ...] | None]  # rule id, category, the words (None: no words known)


def needed(pattern: str) -> tuple[str, ...] | None:
    """Lower-case words of which every match of ``pattern`` (IGNORECASE) contains one; None when the
    pattern does not say."""
    parser: Any = importlib.import_module("re._parser")  # (loaded with re; a private module: typed Any)
    return _required(parser.parse(pattern, re.IGNORECASE), parser)


def _required(sub: Any, p: Any) -> tuple[str, ...] | None:
    options: list[tuple[str, ...]] = []
    run: list[str] = []

    def close_run() -> None:
        if run:
            options.append(("".join(run),))
            run.clear()

    for op, av in sub.data:
        if op is p.LITERAL:
            run.append(chr(av))
            continue
        close_run()
        found: tuple[str, ...] | None = None
        if op is p.SUBPATTERN:
            found = _required(av[3], p)
        elif op is p.ATOMIC_GROUP:
            found = _required(av, p)
        elif op in (p.MAX_REPEAT, p.MIN_REPEAT, p.POSSESSIVE_REPEAT) and av[0] >= 1:
            found = _required(av[2], p)
        elif op is p.BRANCH:
            branches = [_required(b, p) for b in av[1]]
            if all(b is not None for b in branches):
                found = tuple(sorted({w for b in branches if b is not None for w in b}))
        if found is not None:
            options.append(found)
    close_run()
    usable = [tuple(w.lower() for w in o) for o in options if all(w and not _ASCII_FOLDS & set(w) for w in o)]
    if not usable:
        return None
    return max(usable, key=lambda words: (min(len(w) for w in words), -len(words)))


def build(rules_toml: bytes) -> dict[str, Any]:
    """What ``scan_hints.json`` holds for these rules."""
    import tomllib  # (the generator's and the test's: a hook reads only the JSON)

    doc = tomllib.loads(rules_toml.decode("utf-8"))
    hints = [
        {"id": str(r["id"]), "category": str(r["category"]), "words": _listed(needed(str(r["pattern"])))}
        for r in doc.get("rule", [])
    ]
    return {"rules_sha256": hashlib.sha256(rules_toml).hexdigest(), "rules": hints}


def _listed(words: tuple[str, ...] | None) -> list[str] | None:
    return None if words is None else list(words)


def load(rules_toml: bytes) -> tuple[Hint, ...] | None:
    """The hints for these rules, or None when ``scan_hints.json`` is missing, damaged or was derived
    from another rules file."""
    try:
        doc = json.loads(HINTS_PATH.read_bytes())
        if doc.get("rules_sha256") != hashlib.sha256(rules_toml).hexdigest():
            return None
        return tuple(
            (str(r["id"]), str(r["category"]), None if r["words"] is None else tuple(map(str, r["words"])))
            for r in doc["rules"]
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def could_match(text: str, categories: tuple[str, ...], hints: tuple[Hint, ...]) -> bool:
    """False only when ``text`` (ASCII) holds none of the words of any rule in ``categories``."""
    if not text.isascii():
        return True
    lowered = text.lower()
    for _, category, words in hints:
        if category in categories and (words is None or any(w in lowered for w in words)):
            return True
    return False


def main(argv: list[str]) -> int:
    fresh = json.dumps(build(RULES_PATH.read_bytes()), indent=1, ensure_ascii=False) + "\n"
    if argv == ["--write"]:
        HINTS_PATH.write_text(fresh, encoding="utf-8")
        return 0
    sys.stdout.write(fresh)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
