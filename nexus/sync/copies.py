"""Conflict copies of log segments that file-sync tools leave beside them, and importing them.

When two machines change a segment at once, Syncthing keeps one version and writes the other beside
it as ``2026-12.sync-conflict-20261201-064500-ABCDEFG.md``; Dropbox writes ``2026-12 (ella's
conflicted copy 2026-12-01).md``, Obsidian Sync and others ``2026-12 (conflicted copy …).md`` or
``2026-12 (1).md``. Appends never go there, so an entry only in a copy is lost to every reader until
it is imported: every entry of the copy with a valid signature whose id the log lacks is put into the
segment (in id order, byte for byte, under the log lock), then the copy moves to
``archive/conflicts/log/``. ``nexus watch`` and ``nexus sync`` do this; ``nexus log import-copies`` on
demand; ``nexus verify`` reports a copy still holding entries the log lacks as an error.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..keys.trust import Keyring, load
from ..records import Located
from ..storage import durable, segments
from ..storage.vault import Vault
from ..team import claimlog
from ..trust import Trust
from . import merge

COPY_RE = re.compile(
    r"(?P<segment>\d{4}-\d\d)(?:\.sync-conflict-\d{8}-\d{6}-[A-Za-z0-9]+"
    r"| \((?:[^()]*conflicted copy[^()]*|\d+)\))\.md",
    re.IGNORECASE,
)
ARCHIVE = "archive/conflicts/log"
SETTLE_SECONDS = 1.0  # a copy this recently written may still be being written: wait


@dataclass(frozen=True)
class Imported:
    """What importing one conflict copy added to the log, skipped, and where the copy went."""

    copy: str
    segment: str
    imported: tuple[str, ...]
    skipped: int  # entries already in the log, or whose signature does not verify
    archived: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "copy": self.copy,
            "segment": self.segment,
            "imported": list(self.imported),
            "skipped": self.skipped,
            "archived": self.archived,
        }


def is_copy(name: str) -> bool:
    return COPY_RE.fullmatch(name) is not None


def find(vault: Vault) -> list[Path]:
    """Conflict copies of segments in ``log/``, oldest name first."""
    try:
        names = os.listdir(vault.log_dir)
    except FileNotFoundError:
        return []
    return [vault.log_dir / n for n in sorted(names) if is_copy(n)]


def log_ids(vault: Vault) -> set[str]:
    from ..ledger.log import segment_files

    out: set[str] = set()
    for _name, path in segment_files(vault):
        out.update(bid for bid, _ in merge.split_segment(path.read_bytes())[1] if bid)
    return out


def missing_entries(
    vault: Vault, path: Path, ring: Keyring, present: set[str] | None = None
) -> tuple[list[Located], int]:
    """Entries of the copy signed by their authors with a key this machine trusts for them (``ring``:
    its pins; an entry signed before a key rotation too) whose id the log lacks; and how many others."""
    from ..ledger.check import check_entry

    present = log_ids(vault) if present is None else present
    found = segments.scan(path.read_bytes(), vault.rel(path)).entries
    out = []
    for located in found:
        if located.entry.id in present:
            continue
        status, problem = check_entry(located, ring)
        if status == "ok" and problem is None:
            out.append(located)
    return out, len(found) - len(out)


def import_copy(vault: Vault, path: Path, trust: Trust) -> Imported:
    """Import the copy's missing valid entries into its segment (written by ``log.py``: its lock, its
    durable write, its tail state), then archive the copy."""
    from ..ledger import log

    name = COPY_RE.fullmatch(path.name)
    assert name is not None
    segment = vault.log_dir / f"{name['segment']}.md"
    with log.locked(vault):
        present = log_ids(vault)
        missing, skipped = missing_entries(vault, path, load(vault, trust.home), present)
        data = path.read_bytes()
        if missing:
            current = (
                segment.read_bytes() if segment.exists() else segments.preamble(name["segment"]).encode()
            )
            extra = b"".join(data[loc.offset : loc.end_offset] + b"\n" for loc in missing)
            rel = vault.rel(segment)
            merged = merge.merge_segment(b"", current, current + b"\n" + extra, rel).data
            ids = {loc.entry.id for loc in missing}
            added = [loc for loc in segments.scan(merged, rel).entries if loc.entry.id in ids]
            log.replace_segment(vault, segment, current if segment.exists() else b"", merged, added)
            newest = max(present, default="")
            log.note_arrivals(vault, sorted(loc.entry.id for loc in missing if loc.entry.id < newest))
        target = vault.root / ARCHIVE / path.name
        if target.exists():
            target = target.with_name(f"{path.stem}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.md")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        durable.fsync_dir(target.parent)
        durable.fsync_dir(path.parent)
    return Imported(
        vault.rel(path),
        vault.rel(segment),
        tuple(loc.entry.id for loc in missing),
        skipped,
        vault.rel(target),
    )


def settled(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime > SETTLE_SECONDS
    except FileNotFoundError:
        return False


def import_all(vault: Vault, trust: Trust, *, only_settled: bool = False) -> list[Imported]:
    out = []
    for path in find(vault):
        if only_settled and not settled(path):
            continue
        try:
            out.append(import_copy(vault, path, trust))
        except FileNotFoundError:  # another process imported it first
            continue
    if any(c.imported for c in out) and (vault.root / claimlog.NOTE).exists():
        claimlog.write_note(vault, claimlog.refresh(vault, trust))  # the claims a copy brought (or lost)
    return out
