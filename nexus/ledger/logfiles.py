"""The log's segment files, read: listing them, every entry, the last entries, an entry by id.

Reading only; ``log.py`` is the one module that writes segments, ``cursors.py`` reads what an agent
has not read yet.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..records import Located
from ..storage import entries, segments
from ..storage.vault import Vault
from ..trust import NO_PINS

if TYPE_CHECKING:
    from .check import Checker


def segment_files(vault: Vault) -> list[tuple[str, Path]]:
    """(segment name, path) of every segment, oldest first."""
    log_dir = vault.log_dir
    try:
        names = os.listdir(log_dir)
    except FileNotFoundError:
        return []
    return [(n[:-3], log_dir / n) for n in sorted(names) if n.endswith(".md") and is_segment_name(n[:-3])]


def is_segment_name(name: str) -> bool:
    """A segment file's name without .md: YYYY-MM."""
    return len(name) == 7 and name[4] == "-" and name[:4].isdigit() and name[5:].isdigit()


def scan_file(vault: Vault, path: Path) -> segments.Scan:
    return segments.scan(path.read_bytes(), vault.rel(path))


def iter_entries(vault: Vault) -> Iterator[Located]:
    """Every readable entry of every segment, in log order."""
    for _, path in segment_files(vault):
        yield from scan_file(vault, path).entries


def marked(vault: Vault, items: list[Located], checker: Checker | None) -> list[Located]:
    """``items`` with their verdicts (``check.Checker``; None: the identity notes' keys as they are,
    ``nexus.trust.NO_PINS``, the decision notes' renames unknown)."""
    if not items:
        return items
    if checker is None:
        from .check import Checker  # (the signature check loaded only when there is something to check)

        checker = Checker(vault, trust=NO_PINS)
    return checker.mark(items)


def missing_entry(vault: Vault, ids: tuple[str, ...]) -> str | None:
    """The first of ``ids`` no segment holds (a byte search from the end, its month first), or None."""
    if not ids:
        return None
    import mmap

    files = segment_files(vault)
    for entry_id in ids:
        month = entries.segment_name(entries.utc_ts(entries.decode_id_ms(entry_id)))
        found = False
        for _name, path in sorted(files, key=lambda item: item[0] != month):
            try:
                with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    found = bool(segments.entry_starts(mm, entry_id))  # type: ignore[arg-type]
            except (OSError, ValueError):  # (an empty file cannot be mapped)
                continue
            if found:
                break
        if not found:
            return entry_id
    return None


def find_entry(vault: Vault, entry_id: str) -> Located:
    """The entry with this id (a full scan, newest segment first)."""
    from ..errors import NotFoundError

    ms = entries.decode_id_ms(entry_id) if entries.ID_RE.fullmatch(entry_id) else None
    files = segment_files(vault)
    if ms is not None:
        month = entries.segment_name(entries.utc_ts(ms))
        files.sort(key=lambda item: item[0] != month)
    for _name, path in files:
        for located in scan_file(vault, path).entries:
            if located.entry.id == entry_id:
                return located
    raise NotFoundError(f"no entry {entry_id} in the log")
