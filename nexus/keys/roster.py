"""The roster: who is in the vault (agent or person) and what their identity notes say, from a JSON
cache so hot paths (``nexus brief``) never parse YAML.

``.nexus/cache/roster.json`` maps each name to the (mtime, size) stamp of its identity note, its kind and
the note's body. A note whose stamp changed is parsed again (YAML, once); the cache is derived and
rebuilt whenever it is missing or unreadable.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..storage import durable
from ..storage.vault import Vault

CACHE = "cache/roster.json"


def roster(vault: Vault) -> dict[str, dict[str, Any]]:
    """``{name: {"kind": "agent"|"human", "body": str, "public_key": str|None, "stamp": [mtime_ns,
    size]}}`` for every identity note, by name."""
    cache_path = vault.state / CACHE
    try:
        cached = json.loads(cache_path.read_bytes())
        if not isinstance(cached, dict):
            cached = {}
    except (FileNotFoundError, ValueError):
        cached = {}
    out: dict[str, dict[str, Any]] = {}
    changed = False
    try:
        children = sorted(os.scandir(vault.agents_dir), key=lambda d: d.name)
    except FileNotFoundError:
        children = []
    for child in children:
        if not child.is_dir():
            continue
        note = vault.identity_path(child.name) if _valid(child.name) else None
        if note is None:
            continue
        try:
            st = note.stat()
        except FileNotFoundError:
            continue
        stamp = [st.st_mtime_ns, st.st_size]
        known = cached.get(child.name)
        if isinstance(known, dict) and known.get("stamp") == stamp and "public_key" in known:
            out[child.name] = known
            continue
        entry = _parse(vault, child.name, stamp)
        if entry is not None:
            out[child.name] = entry
        changed = True
    if changed or set(out) != set(cached):
        durable.replace(cache_path, json.dumps(out).encode(), durable=False)
    return out


def agents(vault: Vault) -> list[str]:
    """Names of identities of kind ``agent`` (people never owe acknowledgements)."""
    return [name for name, info in roster(vault).items() if info.get("kind") == "agent"]


def _valid(name: str) -> bool:
    from ..errors import InputError
    from ..storage.text import check_name

    try:
        check_name(name)
    except InputError:
        return False
    return True


def _parse(vault: Vault, name: str, stamp: list[int]) -> dict[str, Any] | None:
    from ..errors import InputError
    from ..storage import meta, notes

    try:
        props, body = meta.merged(
            *notes.read(vault.identity_path(name), vault.root), meta.IDENTITY
        )  # (as identity.read_note, without importing the crypto library)
    except (InputError, OSError, UnicodeDecodeError):
        return None
    kind = props.get("kind", "agent")
    key = props.get("public_key")
    return {
        "stamp": stamp,
        "kind": kind if kind in ("agent", "human") else "agent",
        "body": body,
        "public_key": key if isinstance(key, str) else None,
    }
