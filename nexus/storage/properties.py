"""Frontmatter properties written as JSON values, so hot paths read and write them without YAML.

Every property line is ``key: <JSON value>``. JSON is a subset of YAML, so Obsidian (and ``notes.py``)
read these notes as ordinary properties::

    ---
    agent: "ella"
    files: ["nexus/ledger/log.py", "tests/test_log.py"]
    seq: 12
    ---

``parse`` reads that form with ``json`` only (microseconds, no import cost). When a person has saved
the note from Obsidian's property editor, which rewrites it as block-style YAML, ``parse`` falls back
to the safe YAML reader in ``notes.py`` – only then is YAML imported.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import InputError
from .text import TEXT_KEYS

_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _is_text(value: Any) -> bool:
    """A value a text property may hold: text, nothing, or a list of text."""
    return (
        value is None
        or isinstance(value, str)
        or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    )


def render(props: dict[str, Any], body: str) -> str:
    """A note: JSON-valued frontmatter, then ``body`` (ending with a newline)."""
    lines = ["---"]
    for key, value in props.items():
        if not _KEY_RE.fullmatch(key):
            raise InputError(f"bad property name {key!r}")
        lines.append(f"{key}: {json.dumps(value, ensure_ascii=False)}")
    lines.append("---")
    body = body if body.endswith("\n") else body + "\n"
    return "\n".join(lines) + "\n" + body


def split(text: str) -> tuple[list[str], str] | None:
    """(frontmatter lines, body) when ``text`` starts with a ``---`` block, else None."""
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---\n", 3)
    if end < 0:
        if text.endswith("\n---"):
            end = len(text) - 4
        else:
            return None
    block = text[4:end]
    body = text[end + 5 :]
    return (block.split("\n") if block else []), body


def parse(text: str, source: str = "note") -> tuple[dict[str, Any], str]:
    """(properties, body) of a note; fast for notes written by :func:`render`, YAML otherwise."""
    parts = split(text)
    if parts is None:
        return {}, text
    lines, body = parts
    props: dict[str, Any] = {}
    for line in lines:
        key, sep, raw = line.partition(": ")
        if not sep or not _KEY_RE.fullmatch(key):
            return _slow(text, source)
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            return _slow(text, source)
        if key in TEXT_KEYS and not _is_text(value):
            return _slow(text, source)  # (YAML reads it as the text written)
        props[key] = value
    return props, body


def _slow(text: str, source: str) -> tuple[dict[str, Any], str]:
    from . import notes

    props, _ = notes.parse(text, source)
    parts = split(text)
    body = parts[1] if parts else text
    return {k: _plain(v) for k, v in props.items()}, body


def _plain(value: Any) -> Any:
    """YAML reads an unquoted ``2026-11-30T04:41:07Z`` as a datetime: give nexus its string back."""
    import datetime as dt

    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
