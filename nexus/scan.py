"""The safety scan: what may never reach an agent's memory, the retention bank or the memory index.

Everything headed there is scanned before it is written (a block raises
:class:`~nexus.errors.UnsafeContentError` naming the rule, and nothing is written), and again when a
snapshot is built (a poisoned entry is shown as blocked, never injected). The rules are data:
``nexus/scan_rules.toml`` (shipped) plus an optional ``scan-rules.toml`` at the vault's root, in the
same shape, which adds rules (it can never remove one). Invisible and bidirectional-control
characters (``text.first_invisible``) are a category of their own.

Matching is case-insensitive on the NFKC-folded text, so full-width look-alikes (``ｃａｔ``) match too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError, UnsafeContentError
from .text import describe_char, first_invisible

RULES_FILE = "scan_rules.toml"
VAULT_RULES_FILE = "scan-rules.toml"
CATEGORIES = ("prompt-injection", "exfiltration", "persistence", "secrets", "invisible-unicode")
MAX_SCAN_CHARS = 65_536


@dataclass(frozen=True)
class Rule:
    id: str
    category: str
    why: str
    regex: re.Pattern[str]
    source: str  # "nexus" or the vault-relative file that added it


@dataclass(frozen=True)
class Finding:
    rule: str
    category: str
    why: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.category}/{self.rule} ({self.why}): {self.excerpt!r}"


_cache: dict[tuple[str, int, int], tuple[Rule, ...]] = {}


def _parse(data: bytes, source: str) -> tuple[Rule, ...]:
    import tomllib  # (with datetime: only when the rules are read, not on every import)

    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"{source}: not valid TOML: {err}") from None
    out: list[Rule] = []
    for i, raw in enumerate(doc.get("rule", [])):
        try:
            rid, cat, pattern = str(raw["id"]), str(raw["category"]), str(raw["pattern"])
        except (KeyError, TypeError):
            raise InputError(f"{source}: rule {i + 1} needs id, category and pattern") from None
        if cat not in CATEGORIES:
            raise InputError(f"{source}: rule {rid!r} has unknown category {cat!r}; use one of "
                             + ", ".join(CATEGORIES))
        try:
            regex = re.compile(pattern, re.IGNORECASE)
        except re.error as err:
            raise InputError(f"{source}: rule {rid!r} has a bad pattern: {err}") from None
        out.append(Rule(rid, cat, str(raw.get("why", cat)), regex, source))
    return tuple(out)


def rules(vault_root: Path | None = None) -> tuple[Rule, ...]:
    """The shipped rules, then the vault's own (cached by file mtime and size)."""
    key = ("nexus", 0, 0)
    if key not in _cache:
        data = (Path(__file__).parent / RULES_FILE).read_bytes()  # importlib.resources costs ~60 ms
        _cache[key] = _parse(data, f"nexus/{RULES_FILE}")
    shipped = _cache[key]
    if vault_root is None:
        return shipped
    extra_path = vault_root / VAULT_RULES_FILE
    try:
        st = extra_path.stat()
    except FileNotFoundError:
        return shipped
    vkey = (str(extra_path), st.st_mtime_ns, st.st_size)
    if vkey not in _cache:
        _cache[vkey] = _parse(extra_path.read_bytes(), VAULT_RULES_FILE)
    return shipped + _cache[vkey]


def _excerpt(text: str, start: int, end: int) -> str:
    lo, hi = max(0, start - 10), min(len(text), end + 10)
    snippet = text[lo:hi].replace("\n", " ")
    if len(snippet) > 80:
        snippet = snippet[:77] + "…"
    return snippet


def findings(text: str, vault_root: Path | None = None) -> list[Finding]:
    """Every rule ``text`` breaks (empty when it is safe)."""
    found: list[Finding] = []
    if len(text) > MAX_SCAN_CHARS:
        found.append(Finding("too-large-to-scan", "prompt-injection",
                             f"more than {MAX_SCAN_CHARS:,} characters cannot be scanned", text[:40]))
        text = text[:MAX_SCAN_CHARS]
    inv = first_invisible(text, controls=False)
    if inv is not None:
        at = text.index(inv)
        found.append(Finding(f"invisible-{describe_char(inv)}", "invisible-unicode",
                             "an invisible or bidirectional-control character",
                             _excerpt(text, at, at + 1)))
    import unicodedata

    folded = unicodedata.normalize("NFKC", text)
    for rule in rules(vault_root):
        m = rule.regex.search(folded)
        if m:
            found.append(Finding(rule.id, rule.category, rule.why, _excerpt(folded, m.start(), m.end())))
    return found


def check(text: str, what: str = "content", vault_root: Path | None = None) -> str:
    """Return ``text`` if it is safe; else raise UnsafeContentError naming the first rule it breaks."""
    found = findings(text, vault_root)
    if found:
        f = found[0]
        more = f" (and {len(found) - 1} more rule(s))" if len(found) > 1 else ""
        raise UnsafeContentError(
            f"blocked: {what} matches safety rule {f.category}/{f.rule} — {f.why}: "
            f"{f.excerpt!r}{more}; nothing was written"
        )
    return text


def blocked_placeholder(source: str, found: list[Finding]) -> str:
    """What a snapshot shows instead of a poisoned entry."""
    names = ", ".join(f"{f.category}/{f.rule}" for f in found)
    return (f"[BLOCKED: {source} entry broke safety rule(s) {names}; removed from this snapshot. "
            f"Remove it with `nexus memory remove`.]")
