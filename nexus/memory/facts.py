"""The memory index: one note per fact under ``memory/``, and an index note listing them.

A fact note ``memory/NAME.md`` has frontmatter ``name``, ``description`` (one line), ``type`` (user,
feedback, project or reference), ``created``, and, for a fact promoted from a retention bank,
``approved_by``, ``approved_at`` and ``source``; its body is short. ``memory/MEMORY-INDEX.md`` lists one
line per fact linking to its note: the brief always carries it, and an agent opens a fact's note only
when it matters. The index is rebuilt from the fact notes on every change (a note a person adds by hand
is picked up at the next one, or by ``rebuild_index``).

Retiring moves a fact to ``archive/facts/NAME.md`` (never deleted); ``restore`` moves it back.
Everything written is checked by the safety scan first.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

# records.Fact is named through the package: its family loads when a fact is first read, not with
# every brief
from .. import records
from ..errors import InputError, NexusError, NotFoundError
from ..storage import durable
from ..storage.locks import exclusive
from ..storage.text import DEVICE_NAMES, TOKEN_RE, check_body, check_file_name, check_line
from ..storage.vault import Vault
from . import scan

TYPES = ("user", "feedback", "project", "reference")
INDEX_NAME = "MEMORY-INDEX.md"
BODY_MAX = 4000
LOCK = "memory-index"

_INDEX_HEAD = """---
tags:
  - nexus/memory-index
---
# Memory index

One line per fact the team keeps (`nexus memory facts list`); open a fact's note when it matters.
nexus rewrites this note from the notes in `memory/` — edit a fact in its own note, and retire one with
`nexus memory facts retire NAME` (it moves to `archive/facts/`, never deleted).

"""


def memory_dir(vault: Vault) -> Path:
    return vault.inside(vault.root / "memory")


def retired_dir(vault: Vault) -> Path:
    return vault.inside(vault.root / "archive" / "facts")


def index_path(vault: Vault) -> Path:
    return memory_dir(vault) / INDEX_NAME


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def check_fact_name(name: str) -> str:
    return check_file_name(name, "fact name")


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    s = s[:40].rstrip("-")
    if s in DEVICE_NAMES:
        s = f"{s}-fact"
    return s or "fact"


def _is_fact_file(p: Path) -> bool:
    return p.suffix == ".md" and TOKEN_RE.fullmatch(p.stem) is not None


def _load(vault: Vault, path: Path, retired: bool = False) -> records.Fact:
    """A fact note; one that cannot be read (bad YAML, bad UTF-8, a link out of the vault…) comes
    back marked ``invalid`` with the reason, so one bad note never hides the others."""
    from ..storage import notes

    try:
        props, body = notes.read(vault.inside(path), vault.root)
    except (NexusError, OSError, UnicodeDecodeError) as err:
        why = (
            str(err)
            if isinstance(err, NexusError)
            else (
                f"not valid UTF-8 at byte {err.start}"
                if isinstance(err, UnicodeDecodeError)
                else err.strerror or type(err).__name__
            )
        )
        return records.Fact(
            name=path.stem,
            description="",
            type="reference",
            body="",
            created="",
            path=vault.rel(path),
            retired=retired,
            invalid=why,
        )

    def opt(key: str) -> str | None:
        v = props.get(key)
        return str(v) if v not in (None, "") else None

    return records.Fact(
        name=str(props.get("name") or path.stem),
        description=str(props.get("description") or ""),
        type=str(props.get("type") or "reference"),
        body=body.strip(),
        created=str(props.get("created") or ""),
        path=vault.rel(path),
        approved_by=opt("approved_by"),
        approved_at=opt("approved_at"),
        source=opt("source"),
        retired=retired,
    )


def all_facts(vault: Vault) -> list[records.Fact]:
    folder = memory_dir(vault)
    if not folder.is_dir():
        return []
    return [_load(vault, p) for p in sorted(folder.iterdir()) if _is_fact_file(p)]


def retired(vault: Vault) -> list[records.Fact]:
    folder = retired_dir(vault)
    if not folder.is_dir():
        return []
    return [_load(vault, p, True) for p in sorted(folder.iterdir()) if _is_fact_file(p)]


def get(vault: Vault, name: str) -> records.Fact:
    path = memory_dir(vault) / f"{check_fact_name(name)}.md"
    if not path.is_file():
        raise NotFoundError(f"no fact {name!r} in the memory index (see `nexus memory facts list`)")
    fact = _load(vault, path)
    if fact.invalid is not None:
        raise InputError(f"{fact.path} cannot be read: {fact.invalid}")
    return fact


def render_index(facts: list[records.Fact]) -> str:
    lines = [
        f"- [[{f.path.removesuffix('.md')}|{f.name}]] ({f.type}) — {f.description}"
        for f in facts
        if f.invalid is None
    ]
    return _INDEX_HEAD + ("\n".join(lines) if lines else "_No facts yet._") + "\n"


def rebuild_index(vault: Vault) -> Path:
    """Rewrite the index note from the fact notes (only when its text changes)."""
    path = index_path(vault)
    text = render_index(all_facts(vault))
    try:
        if path.read_text(encoding="utf-8") == text:
            return path
    except FileNotFoundError:
        pass
    durable.replace(path, text.encode("utf-8"))
    return path


def index_text(vault: Vault) -> str | None:
    """The index note's body, without YAML (for the brief's hot path)."""
    try:
        raw = index_path(vault).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    if raw.startswith("---\n"):
        end = raw.find("\n---\n", 3)
        raw = raw[end + 5 :] if end >= 0 else raw
    return raw.strip()


def _props(
    fact_name: str, description: str, type: str, created: str, extra: dict[str, Any]
) -> dict[str, Any]:
    props: dict[str, Any] = {"name": fact_name, "description": description, "type": type, "created": created}
    props.update({k: v for k, v in extra.items() if v})
    props["tags"] = ["nexus/memory-fact"]
    return props


def add(
    vault: Vault,
    *,
    description: str,
    type: str,
    body: str = "",
    name: str | None = None,
    approved_by: str | None = None,
    approved_at: str | None = None,
    source: str | None = None,
) -> records.Fact:
    """Write a new fact note and rebuild the index. Refuses unsafe text and taken names."""
    from ..storage import notes

    if type not in TYPES:
        raise InputError(f"invalid fact type {type!r}: use one of {', '.join(TYPES)}")
    description = check_line(description, "description")
    if name is not None:
        check_fact_name(name)
    for what, text in (("fact name", name or ""), ("fact description", description), ("fact body", body)):
        if text:
            scan.check(text, what, vault.root)
    clean_body = check_body(body or "", BODY_MAX) or ""
    with exclusive(vault.lock(LOCK)):
        if name is not None:
            fact_name = check_fact_name(name)
            if (memory_dir(vault) / f"{fact_name}.md").exists():
                raise InputError(f"a fact named {fact_name!r} already exists; pick another --name")
        else:
            base, n = slug(description), 1
            fact_name = base
            while (memory_dir(vault) / f"{fact_name}.md").exists() or (
                retired_dir(vault) / f"{fact_name}.md"
            ).exists():
                n += 1
                fact_name = f"{base[:36]}-{n}"
        path = memory_dir(vault) / f"{fact_name}.md"
        props = _props(
            fact_name,
            description,
            type,
            _utc_now(),
            {"approved_by": approved_by, "approved_at": approved_at, "source": source},
        )
        durable.create_exclusive(path, notes.render(props, clean_body).encode("utf-8"))
        rebuild_index(vault)
    return _load(vault, path)


def _move(src: Path, dest: Path, props_update: dict[str, Any], drop: tuple[str, ...] = ()) -> None:
    from ..storage import notes

    props, body = notes.read(src)
    props.update(props_update)
    for k in drop:
        props.pop(k, None)
    durable.replace(dest, notes.render(props, body).encode("utf-8"))
    os.unlink(src)
    durable.fsync_dir(src.parent)


def retire(vault: Vault, name: str) -> records.Fact:
    src = memory_dir(vault) / f"{check_fact_name(name)}.md"
    with exclusive(vault.lock(LOCK)):
        if not src.is_file():
            raise NotFoundError(f"no fact {name!r} in the memory index (see `nexus memory facts list`)")
        dest = retired_dir(vault) / f"{name}.md"
        if dest.exists():
            raise InputError(f"archive/facts/{name}.md already exists; restore or rename it first")
        _move(src, dest, {"retired": _utc_now()})
        rebuild_index(vault)
    return _load(vault, dest, True)


def restore(vault: Vault, name: str) -> records.Fact:
    src = retired_dir(vault) / f"{check_fact_name(name)}.md"
    with exclusive(vault.lock(LOCK)):
        if not src.is_file():
            raise NotFoundError(f"no retired fact {name!r} (see `nexus memory restore`)")
        back = _load(vault, src, True)
        scan.check(f"{back.description}\n{back.body}", f"retired fact {name}", vault.root)
        dest = memory_dir(vault) / f"{name}.md"
        if dest.exists():
            raise InputError(f"memory/{name}.md exists again; rename one of them first")
        _move(src, dest, {}, drop=("retired",))
        rebuild_index(vault)
    return _load(vault, dest)
