"""The log's segment files, read: listing them, every entry, the last entries, an entry by id.

Reading only; ``log.py`` is the one module that writes segments, ``cursors.py`` reads what an agent
has not read yet.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..records import Located
from ..storage import entries, segments
from ..storage.vault import Vault

if TYPE_CHECKING:
    from ..keys.trust import Keyring


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


def marked(vault: Vault, items: list[Located], ring: Keyring | None) -> list[Located]:
    """``items`` with their verdicts (see ``verify.mark``)."""
    if not items:
        return items
    from .verify import mark  # (imports the signature check only when there is something to check)

    return mark(items, ring, vault)


def tail(vault: Vault, n: int = 10, *, ring: Keyring | None = None) -> list[Located]:
    """The last ``n`` entries, oldest first, reading backwards from the end of the newest segments,
    each with its verdict (as :func:`scan_unread`)."""
    if n <= 0:
        return []
    out: list[Located] = []
    for _name, path in reversed(segment_files(vault)):
        found = _tail_of(vault, path, n - len(out))
        out[:0] = found
        if len(out) >= n:
            break
    return marked(vault, out[-n:], ring)


def _tail_of(vault: Vault, path: Path, n: int) -> list[Located]:
    size = path.stat().st_size
    chunk = max(4096, n * 1024)  # about n entries; doubled until n complete entries are in it
    start = size
    marker = b"\n" + entries.BEGIN_PREFIX.encode()
    with open(path, "rb") as f:
        while True:
            start = max(0, start - chunk)
            f.seek(start)
            data = f.read(size - start)
            if start == 0:
                aligned = 0
            else:
                idx = data.find(marker)
                aligned = -1 if idx < 0 else idx + 1
            if aligned >= 0:
                count = data.count(entries.BEGIN_PREFIX.encode(), aligned)
                if count > n or start == 0:
                    break
            chunk *= 2
        line = _line_at(vault, path, f, start + aligned, data, start)
    result = segments.scan(data[aligned:], vault.rel(path), offset=start + aligned, line=line)
    return result.entries[-n:]


def _line_at(vault: Vault, path: Path, f: Any, offset: int, data: bytes, data_start: int) -> int:
    """The 1-based line number of the line starting at ``offset``, without reading the whole prefix
    when the tail state knows the line count at a size inside ``data``."""
    from .tailstate import load

    state = load(vault)
    if state is not None and not state.get("stale") and state["segment"] == path.stem:
        known, lines = state["size"], state["lines"]
        if data_start <= known <= data_start + len(data):
            if known >= offset:
                return int(lines) - data.count(b"\n", offset - data_start, known - data_start) + 1
            return int(lines) + data.count(b"\n", known - data_start, offset - data_start) + 1
    f.seek(0)
    count, left = 0, offset
    while left > 0:
        block = f.read(min(left, 1 << 20))
        if not block:
            break
        count += block.count(b"\n")
        left -= len(block)
    return count + 1


def missing_entry(vault: Vault, ids: tuple[str, ...]) -> str | None:
    """The first of ``ids`` no segment holds (a byte search from the end, its month first), or None."""
    if not ids:
        return None
    import mmap

    files = segment_files(vault)
    for entry_id in ids:
        needle = f"\n{entries.BEGIN_PREFIX}{entry_id} %%\n".encode()
        month = entries.segment_name(entries.utc_ts(entries.decode_id_ms(entry_id)))
        found = False
        for _name, path in sorted(files, key=lambda item: item[0] != month):
            try:
                with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    found = mm.rfind(needle) >= 0
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
