"""Bounded agent memory: ``agents/A/MEMORY.md`` (the agent's notes) and ``USER.md`` (the user's profile).

The files are Hermes Agent's format exactly: entries joined by ``"\\n§\\n"`` (a line holding only ``§``),
no frontmatter, so a Hermes runtime can read and write them too. The rules follow Hermes's memory tool:

* the size counts the separators (``len("\\n§\\n".join(entries))``); a size equal to the limit is fine;
* an add or replace that would pass the limit fails, listing every current entry and the usage;
* an exact duplicate add succeeds and adds nothing;
* replace/remove find the entry by ``old_text``, a case-sensitive substring; an entry equal to it
  wins; several different matches fail with short previews; no match fails listing the entries;
* content is stripped; empty content is refused; everything written passes the safety scan.

Writes hold the store's sidecar lock, re-read the file, and replace it atomically. A file edited by hand
in a way nexus would not write back byte for byte is copied to ``archive/backups/`` first and the result
says so. Each entry's first-seen time is kept in ``.nexus/memory/KEY.json`` (``memory sweep`` needs
ages; the ``§`` file stays Hermes-compatible).

Files nexus did not write are read as far as they can be: a byte-order mark is not part of the first
entry, bytes that are not UTF-8 stay in their entry (shown blocked, written back unchanged), a file that
cannot be read at all is one clear error (and a snapshot shows the other store). A store that is a link
leading out of the vault is never read or written.

A person's edit wins: whatever the file holds when a write takes the lock (entries deleted, changed,
reordered or added by hand) is what the write starts from, and nothing nexus wrote before is ever put
back. Reads never write. The stale-save guard protects the person: a write re-reads the file just before
replacing it and starts again from the new text when an editor saved in between, so an agent's write
never replaces a person's save it did not read.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# records.MemoryResult is named through the package: its family loads when a store is first changed
# or measured, not with every brief
from .. import records
from ..errors import (
    ConflictError,
    IdentityError,
    InputError,
    IntegrityError,
    MemoryFullError,
    NotFoundError,
)
from ..storage import durable, markers
from ..storage.locks import exclusive
from ..storage.text import check_name, describe_char, first_invisible
from ..storage.vault import Vault
from . import scan

DELIM = "\n§\n"
TARGETS = ("memory", "user")
PREVIEW = 80
BAR = "═" * 46


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class Store:
    """Where one bounded store lives."""

    target: str
    agent: str | None
    path: Path
    key: str  # lock and sidecar name

    @property
    def label(self) -> str:
        return "USER.md" if self.target == "user" else f"{self.agent}'s MEMORY.md"


def store(vault: Vault, target: str, agent: str | None) -> Store:
    if target not in TARGETS:
        raise InputError(f"invalid target {target!r}: use memory or user")
    if target == "user":
        return Store("user", None, vault.inside(vault.root / "USER.md"), "memory-user")
    if not agent:
        raise InputError("--agent is required for the memory target")
    check_name(agent)
    if not vault.identity_path(agent).is_file():
        raise IdentityError(f"unknown agent {agent!r} (see `nexus agent list`)")
    return Store("memory", agent, vault.inside(vault.agent_dir(agent) / "MEMORY.md"), f"memory-{agent}")


# ---------------------------------------------------------------- the file format


def parse(raw: str) -> list[str]:
    """Entries of a ``§`` file (Hermes's reading: split on ``"\\n§\\n"``, strip, drop empties); a
    leading byte-order mark is not text."""
    raw = raw.removeprefix("\ufeff")
    if not raw.strip():
        return []
    return [e for e in (part.strip() for part in raw.replace("\r\n", "\n").split(DELIM)) if e]


def render(entries: Sequence[str]) -> str:
    return DELIM.join(entries) + "\n" if entries else ""


def size(entries: Sequence[str]) -> int:
    return len(DELIM.join(entries))


def drift(raw: str, limit: int) -> str | None:
    """Why nexus would not write ``raw`` back byte for byte (None when it would)."""
    if not raw.strip():
        return None
    if raw.startswith("\ufeff"):
        return "it starts with a byte-order mark"
    if any("\udc80" <= ch <= "\udcff" for ch in raw):
        return "it holds bytes that are not UTF-8"
    entries = parse(raw)
    if raw.strip() != DELIM.join(entries):
        return "its separators or spacing differ from one `§` line between entries"
    if len(set(entries)) != len(entries):
        return "it holds the same entry twice"
    big = max((len(e) for e in entries), default=0)
    if big > limit:
        return f"one entry ({big:,} chars) is larger than the whole limit ({limit:,})"
    return None


def decode(data: bytes) -> str:
    """A store's text: bytes that are not UTF-8 become lone surrogates, so they stay in their entry,
    are shown as blocked (the scan sees an invisible character) and are written back unchanged."""
    return data.decode("utf-8", errors="surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


def _read_bytes(path: Path) -> str:
    try:
        return decode(path.read_bytes())
    except FileNotFoundError:
        return ""
    except OSError as err:
        raise InputError(f"cannot read {path.name}: {err.strerror or type(err).__name__}") from None


def read(path: Path) -> list[str]:
    return parse(_read_bytes(path))


def previews(entries: Sequence[str], width: int = PREVIEW) -> list[str]:
    return [(e[:width] + "...") if len(e) > width else e for e in entries]


def display(entries: Sequence[str], source: str, vault_root: Path | None = None) -> list[str]:
    """Entries as they may be shown to a model: a poisoned one becomes a BLOCKED placeholder."""
    out = []
    for e in entries:
        found = scan.findings(e, vault_root)
        out.append(scan.blocked_placeholder(source, found) if found else e)
    return out


def numbered(entries: Sequence[str], source: str, vault_root: Path | None, width: int = 160) -> list[str]:
    """One line an entry, numbered as a consolidation plan names them: ``[2] text…  (N chars)``."""
    out = []
    for i, e in enumerate(display(entries, source, vault_root), 1):
        first, *more = e.split("\n")
        line = first if len(first) <= width else first[: width - 1] + "…"
        extra = f", {len(more)} more line{'s' if len(more) > 1 else ''}" if more else ""
        out.append(f"  [{i}] {line}  ({len(e):,} chars{extra})")
    return out


def listing(vault: Vault, target: str, agent: str | None, *, limit: int) -> dict[str, Any]:
    """A store's entries numbered as a consolidation plan names them (``nexus memory list``)."""
    st = store(vault, target, agent)
    entries = list(dict.fromkeys(parse(read_raw(st))))
    return {
        "label": st.label,
        "usage": f"{size(entries):,}/{limit:,}",
        "limit": limit,
        "entries": display(entries, st.label, vault.root),
        "lines": numbered(entries, st.label, vault.root),
    }


def _listing(entries: Sequence[str], source: str, vault_root: Path) -> str:
    lines = numbered(entries, source, vault_root)
    return (
        "\nCurrent entries (numbered for `nexus memory consolidate --plan`):\n" + "\n".join(lines)
        if lines
        else " There are no entries."
    )


# ---------------------------------------------------------------- dates sidecar


def _digest(entry: str) -> str:
    return hashlib.sha256(encode(entry)).hexdigest()[:20]


def dates_path(vault: Vault, st: Store) -> Path:
    return vault.state / "memory" / f"{st.key}.json"


def load_dates(vault: Vault, st: Store) -> dict[str, str]:
    try:
        data = json.loads(dates_path(vault, st).read_text(encoding="utf-8"))
        return {str(k): str(v) for k, v in data.get("first_seen", {}).items()}
    except (FileNotFoundError, ValueError, AttributeError):
        return {}


def first_seen(dates: dict[str, str], entry: str) -> str | None:
    return dates.get(_digest(entry))


def save_dates(
    vault: Vault,
    st: Store,
    entries: Sequence[str],
    dates: dict[str, str],
    now: str,
    overrides: dict[str, str] | None = None,
) -> None:
    keep = {}
    for e in entries:
        d = _digest(e)
        keep[d] = (overrides or {}).get(e) or dates.get(d) or now
    if keep != dates:
        doc: dict[str, object] = {"store": st.key, "first_seen": keep}
        body = json.dumps(doc, indent=1, sort_keys=True)
        # not fsynced: losing it is safe (entries then count as first seen now, so nothing is swept early)
        durable.replace(dates_path(vault, st), body.encode("utf-8"), durable=False)


# ---------------------------------------------------------------- the write path


@contextmanager
def locked(vault: Vault, st: Store) -> Iterator[None]:
    with exclusive(vault.lock(st.key)):
        yield


def _backup(vault: Vault, st: Store, raw: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    rel = vault.rel(st.path).replace("/", "-").removesuffix(".md")
    path = vault.root / "archive" / "backups" / f"{rel}-{stamp}-{_digest(raw)[:6]}.md"
    if not path.exists():
        vault.inside(path.parent)
        durable.create_exclusive(path, encode(raw))
    return vault.rel(path)


def write_entries(
    vault: Vault,
    st: Store,
    raw: str,
    entries: Sequence[str],
    limit: int,
    *,
    first_seen_overrides: dict[str, str] | None = None,
) -> str | None:
    """Replace the store's file (caller holds the lock and read ``raw`` under it); return a backup
    path when the old file would not have round-tripped.

    The stale-save guard: the file is read again just before it is replaced; when an editor saved it
    since ``raw`` was read (a person's edit this write did not start from), nothing is written and
    :class:`~nexus.errors.ConflictError` says to retry, so the person's text stands."""
    if markers.regions(encode(raw)):
        raise IntegrityError(
            f"{st.label} holds git conflict markers (a merge without the nexus driver): nothing changed; "
            "run `nexus git resolve`, then run this command again"
        )
    if read_raw(st) != raw:
        raise ConflictError(
            f"{st.label} was saved by someone else while this write was under way: nothing changed; "
            "run the command again (it starts from their text)"
        )
    backup = _backup(vault, st, raw) if drift(raw, limit) else None
    dates = load_dates(vault, st)
    st.path.parent.mkdir(parents=True, exist_ok=True)
    vault.inside(st.path)
    durable.replace(st.path, encode(render(entries)))
    save_dates(vault, st, entries, dates, utc_now(), first_seen_overrides)
    return backup


def read_raw(st: Store) -> str:
    return _read_bytes(st.path)


def result(
    vault: Vault,
    st: Store,
    message: str,
    entries: Sequence[str],
    limit: int,
    changed: bool,
    backup: str | None,
) -> records.MemoryResult:
    if backup:
        message += (
            f" The file had been edited by hand in a way nexus would not write back exactly; "
            f"its previous text is kept in {backup}."
        )
    return records.MemoryResult(
        st.target,
        st.agent,
        vault.rel(st.path) if st.path.exists() else st.path.relative_to(vault.root).as_posix(),
        message,
        tuple(entries),
        size(entries),
        limit,
        changed,
        backup,
    )


def _clean(content: str | None, what: str, vault: Vault) -> str:
    text = (content or "").replace("\r\n", "\n").strip()
    if not text:
        raise InputError(
            f"{what} is empty; give the text of the entry"
            + (" (use `nexus memory remove` to delete one)" if what == "new content" else "")
        )
    if DELIM in f"\n{text}\n":
        raise InputError(
            f"{what} contains a line holding only `§`, which separates entries; add each entry separately"
        )
    scan.check(text, f"{what} for memory", vault.root)  # invisible characters are a scan category
    bad = first_invisible(text)
    if bad:
        raise InputError(
            f"{what} contains the control character {describe_char(bad)}; "
            "only visible text, newlines and tabs go into memory"
        )
    return text


def usage(vault: Vault, target: str, agent: str | None, limit: int) -> records.MemoryResult:
    st = store(vault, target, agent)
    entries = list(dict.fromkeys(read(st.path)))
    return result(vault, st, "", entries, limit, False, None)


def add(
    vault: Vault, target: str, agent: str | None, content: str | None, *, limit: int
) -> records.MemoryResult:
    st = store(vault, target, agent)
    text = _clean(content, "content", vault)
    with locked(vault, st):
        raw = read_raw(st)
        entries = list(dict.fromkeys(parse(raw)))
        if text in entries:
            return result(
                vault, st, "Entry already exists (no duplicate added).", entries, limit, False, None
            )
        new = [*entries, text]
        if size(new) > limit:
            current = size(entries)
            raise MemoryFullError(
                f"{st.label} at {current:,}/{limit:,} chars. Adding this entry ({len(text):,} chars) "
                f"would exceed the limit. Consolidate now: replace overlapping entries with shorter "
                f"ones or remove stale ones, then retry.{_listing(entries, st.label, vault.root)}",
                tuple(display(entries, st.label, vault.root)),
                f"{current:,}/{limit:,}",
            )
        backup = write_entries(vault, st, raw, new, limit)
    return result(vault, st, "Entry added.", new, limit, True, backup)


def _find(vault: Vault, st: Store, entries: list[str], old_text: str | None) -> int:
    needle = (old_text or "").strip()
    if not needle:
        raise InputError("--old-text is empty; give a short unique part of the entry")
    if needle in entries:  # an entry equal to old_text wins over entries that merely contain it
        return entries.index(needle)
    matches = [i for i, e in enumerate(entries) if needle in e]
    if not matches:
        raise NotFoundError(f"No entry matched {needle!r}.{_listing(entries, st.label, vault.root)}")
    if len({entries[i] for i in matches}) > 1:
        shown = previews(display([entries[i] for i in matches], st.label, vault.root))
        raise InputError(
            f"Multiple entries matched {needle!r}; be more specific. Matches: "
            + " ".join(f"[{n}] {p!r}" for n, p in enumerate(shown, 1))
        )
    return matches[0]


def replace(
    vault: Vault, target: str, agent: str | None, old_text: str | None, content: str | None, *, limit: int
) -> records.MemoryResult:
    st = store(vault, target, agent)
    text = _clean(content, "new content", vault)
    with locked(vault, st):
        raw = read_raw(st)
        entries = list(dict.fromkeys(parse(raw)))
        idx = _find(vault, st, entries, old_text)
        new = list(entries)
        new[idx] = text
        new = list(dict.fromkeys(new))
        if size(new) > limit:
            current = size(entries)
            raise MemoryFullError(
                f"Replacement would put {st.label} at {size(new):,}/{limit:,} chars. Shorten the new "
                f"content or remove other entries first.{_listing(entries, st.label, vault.root)}",
                tuple(display(entries, st.label, vault.root)),
                f"{current:,}/{limit:,}",
            )
        backup = write_entries(vault, st, raw, new, limit)
    return result(vault, st, "Entry replaced.", new, limit, True, backup)


def remove(
    vault: Vault, target: str, agent: str | None, old_text: str | None, *, limit: int
) -> records.MemoryResult:
    st = store(vault, target, agent)
    with locked(vault, st):
        raw = read_raw(st)
        entries = list(dict.fromkeys(parse(raw)))
        idx = _find(vault, st, entries, old_text)
        new = entries[:idx] + entries[idx + 1 :]
        backup = write_entries(vault, st, raw, new, limit)
    return result(vault, st, "Entry removed.", new, limit, True, backup)


# ---------------------------------------------------------------- import from Hermes


def import_hermes(
    vault: Vault, folder: Path, agent: str, *, memory_limit: int, user_limit: int
) -> list[records.MemoryResult]:
    """Add the entries of a Hermes ``memories/`` folder (MEMORY.md, USER.md) to ``agent``'s memory and
    the vault's USER.md: what is clean and fits is imported, in order; every entry left out is listed
    with why (``skipped``). Each entry passes the same checks as ``memory add``."""
    folder = folder.expanduser()
    if (folder / "memories").is_dir():
        folder = folder / "memories"
    found = [
        (t, folder / f) for t, f in (("memory", "MEMORY.md"), ("user", "USER.md")) if (folder / f).is_file()
    ]
    if not found:
        raise NotFoundError(f"{folder} holds no MEMORY.md or USER.md")
    results = []
    for target, src in found:
        limit = memory_limit if target == "memory" else user_limit
        st = store(vault, target, agent)
        skipped: list[str] = []
        clean: list[tuple[int, str]] = []
        given = parse(_read_bytes(src))
        for n, e in enumerate(given, 1):
            try:
                clean.append((n, _clean(e, f"{src.name} entry {n}", vault)))
            except InputError as err:
                skipped.append(str(err).replace("; nothing was written", ""))
        with locked(vault, st):
            raw = read_raw(st)
            entries = list(dict.fromkeys(parse(raw)))
            new = list(entries)
            there = 0
            for n, e in clean:
                if e in new:
                    there += 1
                    continue
                if size([*new, e]) > limit:
                    skipped.append(
                        f"{src.name} entry {n} {previews([e], 40)[0]!r} ({len(e):,} chars) would "
                        f"put {st.label} over its limit ({size(new):,}/{limit:,} chars)"
                    )
                    continue
                new.append(e)
            added = [e for e in new if e not in entries]
            backup = write_entries(vault, st, raw, new, limit) if new != entries else None
        message = (
            f"{src.name}: imported {len(added)} of {len(given)} entr{'y' if len(given) == 1 else 'ies'} "
            f"into {st.label}, {there} already there, {len(skipped)} skipped."
        )
        res = result(vault, st, message, new, limit, bool(added), backup)
        results.append(dataclasses.replace(res, skipped=tuple(skipped)))
    return results
