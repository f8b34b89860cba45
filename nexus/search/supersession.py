"""Superseded decisions in search: a hit about one says so and ranks below what replaced it.

A document is about a decision when it is the decision's note (any of its sections) or the log entry
the decision was recorded with. Its score is scaled by ``SUPERSEDED_FACTOR`` (among hits matching as
many words), and a hit about a superseded decision moves below the first hit about any decision that
replaced it (D-0001 → D-0002 → D-0003: any successor counts).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from ..records import Decision, Hit
from ..storage.vault import Vault

SUPERSEDED_FACTOR = 0.2  # a superseded decision's score is scaled by this, so active ones rank above
SETTLED_NS = 2_000_000_000  # a cached register is reused only once the folder's mtime is this old


class Superseded:
    """The decisions as search needs them: which entry or note is about which decision, and what
    replaced each superseded one."""

    def __init__(self, decisions: Sequence[Decision]) -> None:
        self.by_entry = {d.entry: d.id for d in decisions if d.entry}
        self.by_path = {d.path: d.id for d in decisions}
        self.replaced_by = {d.id: d.superseded_by or "" for d in decisions if d.status == "superseded"}

    def about(self, key: str, path: str) -> str | None:
        """The decision a document (``e:ID`` or ``n:PATH#N`` key) is about, if any."""
        if key.startswith("e:"):
            return self.by_entry.get(key[2:])
        return self.by_path.get(path)

    def superseded_by(self, key: str, path: str) -> str | None:
        """The decision that replaced the one this document is about ('' when unknown), or None."""
        did = self.about(key, path)
        return self.replaced_by.get(did) if did else None

    def _successors(self, first: str) -> set[str]:
        chain = {first}
        nxt = self.replaced_by.get(first)
        while nxt and nxt not in chain:
            chain.add(nxt)
            nxt = self.replaced_by.get(nxt)
        return chain

    def replacements_first(self, hits: list[Hit]) -> list[Hit]:
        """Each hit about a superseded decision moved below the first hit about a decision that
        replaced it, when one is among the hits (scaling its score down usually did it already)."""
        out = list(hits)
        for hit in hits:
            if not hit.superseded_by:
                continue
            chain = self._successors(hit.superseded_by)
            mine = out.index(hit)
            later = [
                i
                for i, h in enumerate(out)
                if i > mine and self.about(f"e:{h.entry_id}" if h.entry_id else "n:", h.path) in chain
            ]
            if later:
                out.insert(later[0], out.pop(mine))
        return out


class Register:
    """One vault's ``Superseded``, read again when the ``decisions/`` folder's mtime moves (notes
    are only ever added or replaced by rename, which moves it) or is within the clock's resolution."""

    def __init__(self) -> None:
        self.cached: tuple[int, Superseded] | None = None

    def load(self, vault: Vault) -> Superseded:
        from ..project import decisions

        try:  # (its mtime only: reading the notes checks the folder stays inside the vault)
            mtime = os.stat(os.path.join(vault.root, "decisions")).st_mtime_ns
        except OSError:
            return Superseded([])
        if self.cached is not None and self.cached[0] == mtime:
            return self.cached[1]
        try:
            found = Superseded(decisions.all_decisions(vault))
        except Exception:  # the register is best effort here; verify names a damaged note
            return Superseded([])
        if time.time_ns() - mtime > SETTLED_NS:
            self.cached = (mtime, found)
        return found
