"""A note's machine fields, kept where Obsidian does not display them.

Signatures, key ids, public keys, hashes and the ids a program follows mean nothing to a person, yet
Obsidian's Properties panel shows every frontmatter property. Notes nexus writes keep them instead in
one Obsidian comment, the last line of the note (hidden in reading view, never a property)::

    %% nexus:meta {"entry":"01KB7Q…","key":"5f0c9d1a2b3c4d5e","sig":"…"} %%

canonical JSON on one line, as log entries keep theirs in ``%% nexus:end {json} %%``. The frontmatter
keeps what a person reads (title, status, date, who…).

Each note kind names its machine fields (:data:`DECISION`, :data:`IDENTITY`…); each field has one
home. A note with a meta comment takes those fields from the comment only, and every other field from
the frontmatter only: a copy of a field in the other place is ignored, so nothing visible can be
shadowed by a hidden value. A note without the comment (written before it existed) takes everything
from its frontmatter, exactly as before. Only the comment's last line counts.

Imports only ``json``: ``vault.key_id_of`` (the append hot path) reads an identity's key through it.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import InputError

MARK = "%% nexus:meta "
_END = " %%"

# The machine fields of each note kind.
DECISION = frozenset({"refs", "entry", "key", "sig", "superseded_key", "superseded_sig", "renumbered_from"})
IDENTITY = frozenset({"public_key", "key_id"})
CHECKPOINT = frozenset({"seq"})
STATE_VERSION = frozenset({"sha256"})
HANDOFF = frozenset({"since", "last_entry", "last_state_version"})  # where `--since last` starts
SETTINGS = frozenset({"nexus", "vault_id"})  # nexus.md: its format; the name of this machine's files about it
# Every machine field of every kind (what no frontmatter nexus writes holds any more).
ALL = DECISION | IDENTITY | CHECKPOINT | STATE_VERSION | HANDOFF | SETTINGS


def line(meta: dict[str, Any]) -> str:
    """The comment line for ``meta`` (canonical JSON: sorted keys, no spaces)."""
    data = json.dumps(meta, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{MARK}{data}{_END}"


def parse_line(text: str) -> dict[str, Any] | None:
    """The fields of one meta comment line, or None when ``text`` is not one. A line that starts like
    one but does not hold a JSON object raises InputError."""
    text = text.rstrip("\r")
    if not text.startswith(MARK):
        return None
    if not text.endswith(_END):
        raise InputError("the nexus:meta comment is cut short (no closing %%)")
    try:
        data = json.loads(text[len(MARK) : -len(_END)])
    except (ValueError, RecursionError):
        raise InputError("the nexus:meta comment does not hold valid JSON") from None
    if not isinstance(data, dict):
        raise InputError("the nexus:meta comment does not hold a set of fields")
    return data


def _last_line_start(body: str) -> int:
    """Where the body's last meta line starts, or -1."""
    at = body.rfind("\n" + MARK)
    if at >= 0:
        return at + 1
    return 0 if body.startswith(MARK) else -1


def split(body: str) -> tuple[str, dict[str, Any] | None]:
    """(the body without its meta line, the meta fields), or (body, None) when it has none."""
    start = _last_line_start(body)
    if start < 0:
        return body, None
    stop = body.find("\n", start)
    stop = len(body) if stop < 0 else stop
    data = parse_line(body[start:stop])
    assert data is not None
    before, after = body[:start].rstrip("\n"), body[stop + 1 :]
    return (before + "\n" if before else "") + after, data


def merged(props: dict[str, Any], body: str, machine: frozenset[str]) -> tuple[dict[str, Any], str]:
    """(properties, body) of a note of the kind whose machine fields are ``machine``, in either form:
    with a meta comment, its fields come from the comment and every other one from the frontmatter;
    without, all from the frontmatter (the older form)."""
    rest, data = split(body)
    if data is None:
        return props, body
    out = {k: v for k, v in props.items() if k not in machine}
    out.update((k, v) for k, v in data.items() if k in machine)
    return out, rest


def apart(props: dict[str, Any], machine: frozenset[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what the frontmatter shows, what the meta comment holds) of ``props``."""
    shown = {k: v for k, v in props.items() if k not in machine}
    hidden = {k: v for k, v in props.items() if k in machine}
    return shown, hidden


def attach(body: str, hidden: dict[str, Any]) -> str:
    """``body`` with the meta comment as its last line."""
    return body.rstrip("\n") + "\n\n" + line(hidden) + "\n"


def fields_of(data: bytes) -> dict[str, Any] | None:
    """The fields of a note's meta comment, read from its raw bytes without parsing the rest (hot
    paths): None when it has none; {} when its comment is unreadable (then it gives no field)."""
    at = data.rfind(b"\n" + MARK.encode())
    if at < 0:
        return None
    stop = data.find(b"\n", at + 1)
    raw = data[at + 1 : stop if stop >= 0 else len(data)]
    try:
        return parse_line(raw.decode("utf-8")) or {}
    except (InputError, UnicodeDecodeError):
        return {}
