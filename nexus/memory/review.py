"""The review note in Obsidian: ticking a fact's checkbox in ``memory/REVIEW.md`` approves it.

``nexus watch`` runs :func:`on_change` (one of its ``watcher.note_handlers``) whenever the review note
changes (and once at start), which approves
every ticked fact in the name of the vault's human identity (``bank.apply_review_note``) and rewrites
the note. Idempotent: a fact already reviewed is left alone.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..storage.vault import Vault
from . import bank

# Per vault: the note's (inode, size, mtime_ns) when last read, when that read started, and its text.
_seen: dict[str, tuple[tuple[int, int, int], int, str]] = {}
_CLOCK_SLACK_NS = 100_000_000  # file times are coarse (a few ms); trust a stamp only well after it


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def on_change(vault: Vault, keys_home: Path, relpath: str) -> None:
    """Approve what was ticked. Reading the note raises open/close events that call this again: an
    unchanged stamp read well after the file's time is proof nothing changed, so the loop ends."""
    path = bank.review_path(vault)
    key = str(vault.root)
    stamp = _stamp(path)
    if stamp is None:
        return
    prev = _seen.get(key)
    if prev and prev[0] == stamp and prev[1] - stamp[2] > _CLOCK_SLACK_NS:
        return
    started = time.time_ns()
    text = path.read_text(encoding="utf-8")
    if prev and prev[0] == stamp and prev[2] == text:
        _seen[key] = (stamp, started, text)
        return
    outcome = bank.apply_review_note(vault)
    # Record what was read before applying, never a later read: a tick saved in the same clock tick
    # as our read keeps the stamp, and must still differ from the text we remember.
    _seen[key] = (stamp, started, text)
    if outcome.problems:
        raise RuntimeError("; ".join(outcome.problems))  # the watcher reports it as an error event
