"""What ``nexus verify`` proved on this machine, as the index build uses it: entries not to check again.

``audit.verify_state`` keeps, outside the vault (``<NEXUS_HOME>/verified/``), each segment's verified
prefix as SHA-256 hashes of byte ranges, and the problems it found there. While the proof's context
(identities, pinned keys, renames, the checking code) is the current one, every entry inside a range
that still hashes as remembered, with no problem found, was canonical and signed by its author's
pinned key: the build seals it (``seals``) without an Ed25519 check. A build process hashes the
ranges overlapping what it indexes with the very bytes it parses (their slice of a range compared byte
for byte), so bytes changed after the proof, or between two reads, are never vouched for.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..keys.trust import Keyring
from ..storage.vault import Vault

_BLOCK = 1 << 20


@dataclass(frozen=True)
class Proof:
    """Per segment (vault-relative path) its verified ranges ``(start, end, sha256 hex)`` from byte
    0, and the entries (by id, or by line when a problem names none) verification found a problem in."""

    ranges: dict[str, tuple[tuple[int, int, str], ...]]
    flagged: frozenset[tuple[str, str]]  # (path, entry id)
    flagged_lines: frozenset[tuple[str, int]]  # (path, line)

    def covered(self, path: Path, rel: str, begin: int, data: bytes) -> range:
        """The byte offsets of ``data`` (``rel``'s bytes from ``begin``, as a build process read
        them) inside ranges that hash as the proof remembers, their bytes the same as ``data``'s."""
        ranges = [r for r in self.ranges.get(rel, ()) if r[1] > begin and r[0] < begin + len(data)]
        lo = hi = -1
        try:
            with open(path, "rb") as f:
                for start, end, sha in ranges:
                    if (hi >= 0 and start != hi) or not _holds(f, start, end, sha, begin, data):
                        break
                    lo, hi = (start if lo < 0 else lo), end
        except OSError:
            return range(0)
        if lo < 0:
            return range(0)
        return range(max(lo, begin), min(hi, begin + len(data)))

    def vouches(self, rel: str, entry_id: str, line: int) -> bool:
        return (rel, entry_id) not in self.flagged and (rel, line) not in self.flagged_lines


def _holds(f: BinaryIO, start: int, end: int, sha: str, begin: int, data: bytes) -> bool:
    """Bytes ``start``..``end`` of ``f`` hash to ``sha``, and where they overlap ``data`` (which
    starts at ``begin``) they are the same bytes."""
    f.seek(start)
    h = hashlib.sha256()
    pos = start
    stop = begin + len(data)
    while pos < end:
        block = f.read(min(_BLOCK, end - pos))
        if not block:
            return False
        h.update(block)
        a, b = max(pos, begin), min(pos + len(block), stop)
        if a < b and block[a - pos : b - pos] != data[a - begin : b - begin]:
            return False
        pos += len(block)
    return h.hexdigest() == sha


def load(vault: Vault, ring: Keyring, home: Path) -> Proof | None:
    """This machine's proof for ``vault`` (kept beside its pins, in ``home``) while it holds for the
    current identities, pins and code; None otherwise (no proof, another context, an unexpected
    shape)."""
    from ..audit import verify_state
    from ..audit.verify import note_identities

    try:
        state = json.loads(verify_state.state_path(vault, home).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("v") != verify_state.STATE_VERSION:
        return None
    if state.get("context") != verify_state.context_of(vault, note_identities(vault), ring):
        return None
    try:
        return _proof(state)
    except (AttributeError, KeyError, TypeError, ValueError, IndexError):
        return None


def _proof(state: dict[str, Any]) -> Proof:
    ranges: dict[str, tuple[tuple[int, int, str], ...]] = {}
    flagged: set[tuple[str, str]] = set()
    lines: set[tuple[str, int]] = set()
    for name, seg in state["segments"].items():
        rel = f"log/{name}.md"
        ranges[rel] = tuple((int(a), int(b), str(s)) for a, b, s in seg["ranges"])
        found = [p for p in seg["problems"]] + [p for _, p in seg["broken"]] + [p for _, p in seg["stray"]]
        for p in found:
            if p.get("entry_id"):
                flagged.add((rel, str(p["entry_id"])))
            lines.add((rel, int(p["line"])))
    return Proof(ranges, frozenset(flagged), frozenset(lines))
