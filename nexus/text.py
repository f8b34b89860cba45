"""Rules for text that enters the vault: names, tokens, one-line summaries and bodies.

Names (agents, people) and tokens (channels, types) are ASCII lowercase letters, digits and dashes, so a
name can never be a path, a dot-file, or a Unicode look-alike of another name. Invisible and
bidirectional-control characters and control characters other than newline and tab are refused in
one-line fields and made visible in bodies (``⟦U+200B⟧``), never silently kept.
"""

from __future__ import annotations

import re

from .errors import InputError

NAME_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?", re.ASCII)
TOKEN_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?", re.ASCII)

# Windows device names and words nexus gives a meaning of its own.
RESERVED_NAMES = frozenset(
    {"con", "prn", "aux", "nul", "all", "none", "nexus", "system", "watcher", "everyone", "human"}
    | {f"com{i}" for i in range(10)}
    | {f"lpt{i}" for i in range(10)}
)

SUMMARY_MAX = 200
BODY_MAX_BYTES = 64 * 1024

_INVISIBLE = (
    "\u200b-\u200f"  # zero-width space/joiners, LRM/RLM
    "\u202a-\u202e"  # bidi embeddings and overrides
    "\u2060-\u2064"  # word joiner, invisible operators
    "\u2066-\u2069"  # bidi isolates
    "\ufeff"  # BOM / zero-width no-break space
    "\U000e0000-\U000e007f"  # tag characters
)
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f"
_SURROGATE = "\ud800-\udfff"  # lone surrogates (undecodable bytes in argv) cannot be stored as UTF-8
INVISIBLE_RE = re.compile(f"[{_INVISIBLE}]")
FORBIDDEN_INLINE_RE = re.compile(f"[{_INVISIBLE}{_CONTROL}{_SURROGATE}\n]")
FORBIDDEN_BODY_RE = re.compile(f"[{_INVISIBLE}{_CONTROL}{_SURROGATE}]")


def describe_char(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def check_name(name: str, what: str = "agent name") -> str:
    """Return ``name`` if it is a valid identity name, else raise InputError saying why."""
    if not name:
        raise InputError(f"{what} is empty")
    if not NAME_RE.fullmatch(name):
        bad = [c for c in name if not (c.isascii() and (c.islower() or c.isdigit() or c == "-"))]
        why = (
            f"it contains {', '.join(repr(c) + ' ' + describe_char(c) for c in dict.fromkeys(bad))}"
            if bad
            else "it must start and end with a letter or digit and be at most 32 characters"
        )
        raise InputError(
            f"invalid {what} {name!r}: use lowercase letters, digits and dashes only ({why})"
        )
    if name in RESERVED_NAMES:
        raise InputError(f"invalid {what} {name!r}: the name is reserved")
    return name


def check_token(value: str, what: str) -> str:
    """Channels and types: lowercase letters, digits and dashes, up to 40 characters."""
    if not value:
        raise InputError(f"{what} is empty")
    if not TOKEN_RE.fullmatch(value):
        raise InputError(
            f"invalid {what} {value!r}: use lowercase letters, digits and dashes only, at most 40"
        )
    return value


def check_line(value: str, what: str, max_len: int = SUMMARY_MAX) -> str:
    """A one-line field (summary, title): stripped, non-empty, no newline or invisible characters."""
    bad = FORBIDDEN_INLINE_RE.search(value)
    if bad:
        ch = bad.group()
        label = "a newline" if ch == "\n" else f"the invisible or control character {describe_char(ch)}"
        raise InputError(f"{what} contains {label}; it must be one line of visible text")
    value = value.strip()
    if not value:
        raise InputError(f"{what} is empty")
    if len(value) > max_len:
        raise InputError(f"{what} is {len(value)} characters; the limit is {max_len}")
    return value


def make_visible(text: str) -> str:
    """Replace invisible, bidi-control and control characters (except newline and tab) by ⟦U+XXXX⟧."""
    return FORBIDDEN_BODY_RE.sub(lambda m: f"⟦{describe_char(m.group())}⟧", text)


def check_body(body: str | None, max_bytes: int = BODY_MAX_BYTES) -> str | None:
    """Normalise a body: CRLF to LF, invisible characters made visible, size bounded; '' becomes None."""
    if body is None:
        return None
    body = make_visible(body.replace("\r\n", "\n"))
    if not body.strip():
        return None
    size = len(body.encode("utf-8"))
    if size > max_bytes:
        raise InputError(f"body is {size} bytes; the limit is {max_bytes} bytes")
    return body
