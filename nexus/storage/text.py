"""Rules for text that enters the vault: names, tokens, one-line summaries and bodies.

Names (agents, people, facts) and tokens (channels, types) are ASCII lowercase letters, digits and
dashes, so a name can never be a path, a dot-file, a Windows device name or a Unicode look-alike of
another name; every name that becomes a file name goes through :func:`check_file_name`.

Nothing an agent writes may be invisible to the person reviewing it in Obsidian:

- Invisible characters (zero-width and bidi controls, soft hyphen, fillers, private-use and
  non-characters, line/paragraph separators, stray variation selectors and tag characters) and control
  characters other than newline and tab are refused in one-line fields and shown as ``⟦U+200B⟧`` in
  bodies. Emoji sequences that use some of them (a variation selector after a character, ZWJ between
  emoji, a subdivision flag's tag sequence) are kept as they are.
- Markup Obsidian hides is neutralised in bodies outside fenced code: ``%%`` (a comment) is written
  ``%\\%`` and ``<!--`` (an HTML comment) ``<\\!--``, which Obsidian shows as typed. A code fence left
  open is closed, so it cannot swallow the entries after it. One-line fields refuse both.

:func:`prepare_body` says what it changed, so the caller can tell the writer.
"""

from __future__ import annotations

import functools
import re

from ..errors import InputError

# Properties whose values are text, always: ids, references, names, keys, hashes, times, one-line
# fields. A hand edit may leave one unquoted (``vault_id: 1234567890123456``, ``id: 0012``,
# ``created: 2026-11-30T04:41:07Z``); YAML would read a number or a date and change the text (an octal
# ``0012`` is 10), so these are read as the text written. nexus writes them quoted (JSON or YAML dump).
TEXT_KEYS = frozenset(
    {
        "vault_id",
        "id",
        "name",
        "key_id",
        "key",
        "sig",
        "public_key",
        "prev",
        "seen",
        "ack",
        "entry",
        "refs",
        "ref",
        "source",
        "fact",
        "supersedes",
        "superseded_by",
        "superseded_key",
        "superseded_sig",
        "sha256",
        "agent",
        "author",
        "human",
        "updated_by",
        "approved_by",
        "reviewed_by",
        "kind",
        "type",
        "target",
        "status",
        "title",
        "description",
        "task",
        "step",
        "next",
        "summary",
        "reason",
        "files",
        "tags",
        "aliases",
        "created",
        "saved",
        "ts",
        "date",
        "archived",
        "first_seen",
        "approved_at",
        "reviewed_at",
        "superseded_at",
        "updated",
        "retired",
        "until",
        "since",
        "last_entry",
    }
)

NAME_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?", re.ASCII)
TOKEN_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?", re.ASCII)

# Windows device names and words nexus gives a meaning of its own.
DEVICE_NAMES = frozenset(
    {"con", "prn", "aux", "nul", "conin", "conout", "clock"}
    | {f"com{i}" for i in range(10)}
    | {f"lpt{i}" for i in range(10)}
)
RESERVED_NAMES = DEVICE_NAMES | {"all", "none", "nexus", "system", "watcher", "everyone", "human"}

SUMMARY_MAX = 200
BODY_MAX_BYTES = 64 * 1024

_VS = "\ufe00-\ufe0f\U000e0100-\U000e01ef\u180b-\u180d\u180f"  # variation selectors
_TAGS = "\U000e0000-\U000e007f"  # tag characters (kept only in a flag's tag sequence)
_INVISIBLE = (
    "\u00ad"  # soft hyphen
    "\u034f"  # combining grapheme joiner
    "\u061c"  # Arabic letter mark
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers
    "\u17b4\u17b5"  # Khmer inherent vowels (render as nothing)
    "\u180e"  # Mongolian vowel separator
    "\u200b-\u200f"  # zero-width space/joiners, LRM/RLM
    "\u2028-\u202e"  # line/paragraph separators, bidi embeddings and overrides
    "\u2060-\u206f"  # word joiner, invisible operators, bidi isolates, deprecated format characters
    "\u2800"  # braille blank
    "\ufeff"  # BOM / zero-width no-break space
    "\ufff9-\ufffb"  # interlinear annotation
    "\U0001bca0-\U0001bca3"  # shorthand format controls
    "\U0001d173-\U0001d17a"  # musical format controls
    "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"  # private use
    "\ufdd0-\ufdef\ufffe\uffff"  # non-characters
    f"{_TAGS}{_VS}"
)
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f"
_SURROGATE = "\ud800-\udfff"  # lone surrogates (undecodable bytes in argv) cannot be stored as UTF-8
_EMOJI = (
    "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u21ff\u2300-\u27bf\u2900-\u2bff\u3030\u303d"
    "\u3297\u3299\U0001f000-\U0001faff"
)
# Sequences kept whole although they hold characters of the classes above.
_FLAG = "\U0001f3f4[\U000e0020-\U000e007e]{1,30}\U000e007f"  # 🏴 + tag letters + cancel tag
_VS_AFTER_CHAR = f"(?<![\\s{_INVISIBLE}{_CONTROL}])[{_VS}]"  # a variation selector on a character
_EMOJI_ZWJ = f"(?<=[{_EMOJI}\ufe0f])\u200d(?=[{_EMOJI}])"  # 👩‍💻
_KEPT = f"({_FLAG}|{_VS_AFTER_CHAR}|{_EMOJI_ZWJ})"
# The full patterns are large (planes 14-16) and cost milliseconds to compile: compiled on first use,
# and only for text that is not ASCII (ASCII text can only hold control characters and newlines).
_PATTERNS = {
    "body": f"{_KEPT}|[{_INVISIBLE}{_CONTROL}{_SURROGATE}]",
    "inline": f"{_KEPT}|[{_INVISIBLE}{_CONTROL}{_SURROGATE}\n]",
    "no-control": f"{_KEPT}|[{_INVISIBLE}{_SURROGATE}]",
}
_ASCII_PATTERNS = {
    "body": re.compile("((?!))|[\x00-\x08\x0b-\x1f\x7f]"),
    "inline": re.compile("((?!))|[\x00-\x08\x0b-\x1f\x7f\n]"),
    "no-control": re.compile("((?!))|(?!)"),
}


@functools.cache
def _compiled(kind: str) -> re.Pattern[str]:
    return re.compile(_PATTERNS[kind])


def _scan(kind: str, value: str) -> re.Pattern[str]:
    """The pattern for ``value``: group 1 is a kept emoji sequence, anything else a character to show."""
    return _ASCII_PATTERNS[kind] if value.isascii() else _compiled(kind)


# Markup Obsidian hides from a reader.
_HIDDEN_MARKUP_RE = re.compile(r"(?<=%)%|<!--")
# Markup Obsidian renders, which can hide text too: raw HTML (`<span style="display:none">`,
# `<details>`, an unknown tag such as the `<String>` of `List<String>`) and TeX math (`$\phantom{…}$`,
# `\color{white}`). In a body, outside fenced code, every `<` that could open a tag, a comment, a
# declaration or an instruction, and every `$`, is written with a backslash (shown as typed); an even
# number of backslashes before it escapes only themselves. Inline code spans are escaped too: a span
# can pair with a backtick lines earlier, so which text is code is not certain line by line.
_MARKUP_START_RE = re.compile(r"(?<!\\)((?:\\\\)*)(<(?=[A-Za-z/!?])|\$)")
# In a one-line field (which must be stored as given): a whole tag, or a math span, is refused.
_LINE_MARKUP_RE = re.compile(
    r"(?<!\\)(?:\\\\)*(<(?:[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?|/[A-Za-z][A-Za-z0-9-]*\s*)>|<[!?]"
    r"|\$\$|\$[^\s$](?:[^$]*[^\s$\\])?\$)"
)
_CODE_RUN_RE = re.compile(r"`+")
_FENCE_OPEN_RE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_CLOSE_RE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")


@functools.cache
def secret_hint() -> re.Pattern[str]:
    """A cheap first look for what the safety scan's secrets category could find: only text that holds
    one of these pays for the scan (the log appends every entry through it). Compiled by the first
    append (~0.6 ms), not by every reader."""
    return re.compile(
        r"-----BEGIN|eyJ|AKIA|ASIA|AIza|ya29\.|xox[abprs]-|sk_live_|sk-|gh[pousr]_|github_pat_|glpat-|"
        r"npm_|pypi-|api[_-]?key|secret|token|passw|pwd|passphrase|credential|auth|://[^\s/@]+:[^\s/@]+@|"
        r"[A-Za-z0-9+/=_-]{32,}",
        re.IGNORECASE,
    )


def describe_char(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def first_invisible(value: str, *, newline: bool = False, controls: bool = True) -> str | None:
    """The first invisible (or, with ``controls``, control) character of ``value`` that no kept
    emoji sequence explains; with ``newline`` a newline counts too."""
    pattern = _scan("inline" if newline else "body" if controls else "no-control", value)
    for match in pattern.finditer(value):
        if match.group(1) is None:
            return match.group()
    return None


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
        raise InputError(f"invalid {what} {name!r}: use lowercase letters, digits and dashes only ({why})")
    if name in RESERVED_NAMES:
        raise InputError(f"invalid {what} {name!r}: the name is reserved")
    return name


def check_file_name(name: str, what: str) -> str:
    """A name that becomes a file name (``memory/NAME.md``): a token that is no Windows device name."""
    check_token(name, what)
    if name in DEVICE_NAMES:
        raise InputError(f"invalid {what} {name!r}: the name is reserved (a Windows device name)")
    return name


def check_token(value: str, what: str) -> str:
    """Channels and types: lowercase letters, digits and dashes, up to 40 characters."""
    if not value:
        raise InputError(f"{what} is empty")
    if not TOKEN_RE.fullmatch(value):
        raise InputError(
            f"invalid {what} {value!r}: use lowercase letters, digits and dashes only, at most 40 characters"
        )
    return value


# Entry types nexus (or its default settings) gives a meaning to; a near miss of one is a typo.
KNOWN_TYPES = frozenset(
    {
        "note",
        "correction",
        "decision",
        "question",
        "answer",
        "handoff",
        "reconcile",
        "ack",
        "state",
        "state-conflict",
        "checkpoint",
        "resume",
    }
)


def _near(a: str, b: str) -> bool:
    """A typo of each other: one edit (insert, delete, substitute, swap of neighbours) apart, or two
    for words of eight letters or more."""
    most = 2 if min(len(a), len(b)) >= 8 else 1
    if abs(len(a) - len(b)) > most:
        return False
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1] <= most


def check_type(value: str, known: frozenset[str] = KNOWN_TYPES) -> str:
    """An entry type: a token, and not a near miss of a type nexus gives a meaning to (``corection``
    would never be owed an acknowledgement)."""
    check_token(value, "type")
    if value in known or len(value) < 5:
        return value
    near = sorted(k for k in known if len(k) >= 4 and _near(value, k))
    if near:
        raise InputError(
            f"unknown type {value!r}: did you mean {near[0]!r}? (a new type must not be "
            "a letter or two away from a known one)"
        )
    return value


def check_line(value: str, what: str, max_len: int = SUMMARY_MAX) -> str:
    """A one-line field (summary, title): stripped, non-empty, no newline, invisible characters or
    markup Obsidian hides."""
    ch = first_invisible(value, newline=True)
    if ch is not None:
        label = "a newline" if ch == "\n" else f"the invisible or control character {describe_char(ch)}"
        raise InputError(f"{what} contains {label}; it must be one line of visible text")
    hidden = _HIDDEN_MARKUP_RE.search(value)
    if hidden:
        shown = "%%" if hidden.group() == "%" else hidden.group()
        raise InputError(
            f"{what} contains {shown!r}, which Obsidian hides from a reader; write it another way"
        )
    markup = rendered_markup(value)
    if markup is not None:
        raise InputError(
            f"{what} contains {markup[:40]!r}, which Obsidian renders as "
            f"{'math' if markup.startswith('$') else 'HTML'} (it can hide text from a reader); "
            "put it in `backticks`, or write it with a backslash (\\< or \\$)"
        )
    value = value.strip()
    if not value:
        raise InputError(f"{what} is empty")
    if len(value) > max_len:
        raise InputError(f"{what} is {len(value)} characters; the limit is {max_len}")
    return value


def _visible(match: re.Match[str]) -> str:
    if match.group(1) is not None:  # a kept emoji sequence
        return match.group()
    return f"⟦{describe_char(match.group())}⟧"


def make_visible(text: str) -> str:
    """One line or a whole text shown as typed: invisible and control characters (except newline and
    tab) become ⟦U+XXXX⟧, ``%%`` becomes ``%\\%``, ``<!--`` becomes ``<\\!--`` and rendered markup is
    escaped (:func:`escape_markup`; not fence-aware: for summaries; bodies go through
    :func:`prepare_body`)."""
    return "\n".join(
        escape_markup(line) for line in _unhide(_scan("body", text).sub(_visible, text)).split("\n")
    )


def _unhide(line: str) -> str:
    return _HIDDEN_MARKUP_RE.sub(lambda m: "\\%" if m.group() == "%" else "<\\!--", line)


def prepare_body(body: str | None, max_bytes: int = BODY_MAX_BYTES) -> tuple[str | None, list[str]]:
    """A body as nexus stores it, and one line for each kind of change made (empty: stored as given).

    CRLF becomes LF; invisible and control characters are made visible; outside fenced code ``%%`` and
    ``<!--`` are neutralised; an unclosed code fence is closed. Applying it twice changes nothing more.
    A body of only white space becomes None. Raises InputError when the result is too large.
    """
    if body is None:
        return None, []
    changes: list[str] = []
    if "\r\n" in body:
        body = body.replace("\r\n", "\n")
        changes.append("CRLF line endings were stored as LF")
    pattern = _scan("body", body)
    shown = pattern.sub(_visible, body)
    if shown != body:
        count = sum(1 for m in pattern.finditer(body) if m.group(1) is None)
        changes.append(f"{count} invisible or control character(s) were made visible as ⟦U+XXXX⟧")
        body = shown
    lines, (hidden, rendered), fence = _unhide_outside_code(body.split("\n"))
    if hidden:
        changes.append(
            r"'%%' and '<!--' (hidden by Obsidian) were written as '%\%' and '<\!--' on "
            f"{hidden} line(s)"
        )
    if rendered:
        changes.append(
            r"HTML tags and '$' (rendered by Obsidian) were written as '\<' and '\$' outside code on "
            f"{rendered} line(s)"
        )
    if fence is not None:
        lines.append(fence[0] * fence[1])
        changes.append("an unclosed code fence was closed")
    body = "\n".join(lines)
    if not body.strip():
        return None, [*changes, "a body of only white space is stored as no body"]
    size = len(body.encode("utf-8"))
    if size > max_bytes:
        raise InputError(f"body is {size} bytes; the limit is {max_bytes} bytes")
    return body, changes


def _unhide_outside_code(lines: list[str]) -> tuple[list[str], tuple[int, int], tuple[str, int] | None]:
    """The lines with hidden and rendered markup neutralised outside fenced code, how many lines
    changed for each, and the fence still open at the end (its character and length), if any."""
    fence: tuple[str, int] | None = None
    hidden = rendered = 0
    out = []
    for line in lines:
        if fence is None:
            opened = _FENCE_OPEN_RE.fullmatch(line)
            if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
                fence = (opened.group(1)[0], len(opened.group(1)))
                fixed = _unhide(line)  # (a fence's info string is not rendered: no other markup)
                hidden += fixed != line
                out.append(fixed)
                continue
            unhidden = _unhide(line)
            hidden += unhidden != line
            fixed = escape_markup(unhidden)
            rendered += fixed != unhidden
            out.append(fixed)
        else:
            closed = _FENCE_CLOSE_RE.fullmatch(line)
            if closed and closed.group(1)[0] == fence[0] and len(closed.group(1)) >= fence[1]:
                fence = None
            out.append(line)
    return out, (hidden, rendered), fence


def _outside_code_spans(line: str) -> list[tuple[bool, str]]:
    """``line`` cut into (is code, text) pieces: a run of backticks opens a code span that the next
    run of the same length closes; a run nothing closes is plain text."""
    pieces: list[tuple[bool, str]] = []
    start = pos = 0
    while True:
        run = _CODE_RUN_RE.search(line, pos)
        if run is None:
            break
        closing = re.compile(rf"(?<!`){run.group()}(?!`)").search(line, run.end())
        if closing is None:
            pos = run.end()
            continue
        pieces.append((False, line[start : run.start()]))
        pieces.append((True, line[run.start() : closing.end()]))
        start = pos = closing.end()
    pieces.append((False, line[start:]))
    return pieces


def escape_markup(line: str) -> str:
    """``line`` with the markup Obsidian renders (a ``<`` that could open HTML, every ``$``) written
    with a backslash, so a person sees it as typed. Applying it twice changes nothing more."""
    if "<" not in line and "$" not in line:
        return line
    return _MARKUP_START_RE.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", line)


def rendered_markup(value: str) -> str | None:
    """The first HTML tag or TeX math span of a one-line field outside code spans, or None. (Line by
    line is exact here: nothing before a summary on its line holds a backtick, so CommonMark pairs
    its backticks as this does.)"""
    for code, text in _outside_code_spans(value):
        found = None if code else _LINE_MARKUP_RE.search(text)
        if found:
            return found.group(1)
    return None


def check_body(body: str | None, max_bytes: int = BODY_MAX_BYTES) -> str | None:
    """The body as stored (see :func:`prepare_body`); '' or white space becomes None."""
    return prepare_body(body, max_bytes)[0]


def body_notice(changes: list[str]) -> str:
    """One line telling a writer how their body was changed."""
    return "the body was changed so a person sees all of it: " + "; ".join(changes)
