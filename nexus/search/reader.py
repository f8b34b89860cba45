"""A process's open view of a vault's index, reused between searches.

``View`` holds, per vault, the open index folder and its searcher (opened again when another
generation is committed, or when the manifest names another folder), the ``Scorer`` whose decoded
postings belong to that folder, the authors' keys and the superseded-decision register. A reader
that meets a commit in progress in another process (a ``.toc`` file vanishing) retries; an index file
still missing under the index lock was deleted, and an unreadable index is rebuilt from the vault.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..errors import BusyError
from ..storage.locks import exclusive
from ..storage.vault import Vault
from ..trust import Trust
from . import builder, engine, indexer
from .manifest import MANIFESTS, Manifest, index_dir
from .manifest import load as load_manifest
from .scoring import Scorer
from .supersession import Register
from .verdicts import Signatures


@dataclass
class OpenIndex:
    """One index folder, open at one generation."""

    folder: str
    index: engine.Index
    generation: int
    searcher: engine.Searcher
    languages: tuple[str, ...]
    scorer: Scorer = field(default_factory=Scorer)


class View:
    """This process's view of one vault's index (see the module)."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.open: OpenIndex | None = None
        self.signatures = Signatures(vault)
        self.register = Register()

    @property
    def folder(self) -> str | None:
        return self.open.folder if self.open is not None else None

    def forget(self) -> None:
        self.open = None

    def _current(self, manifest: Manifest) -> OpenIndex:
        """The index the manifest names, at its latest generation (raises what Whoosh raises)."""
        cached = self.open
        if cached is not None and cached.folder == manifest.dir:
            generation = cached.index.generation()
            if cached.generation != generation:
                cached.searcher = cached.index.searcher()
                cached.generation = generation
            return cached
        ix = engine.Index.open(index_dir(self.vault) / manifest.dir)
        generation = ix.generation()
        self.open = OpenIndex(manifest.dir, ix, generation, ix.searcher(), manifest.languages)
        return self.open

    def current(self, trust: Trust) -> OpenIndex:
        """The current index, retried while a writer in another process commits (``trust``: what a
        rebuild seals with)."""
        for attempt in range(50):
            manifest = MANIFESTS.peek(self.vault)
            if manifest is None:
                indexer.refresh(self.vault, trust=trust)
                continue
            try:
                return self._current(manifest)
            except FileNotFoundError:
                self.open = None
                if attempt >= 2:  # still missing: a file of the index may be gone for good
                    self._rebuild_if_missing(manifest, trust)
                else:
                    time.sleep(0.01 * (attempt + 1))
            except Exception:  # an unreadable index: rebuild it
                self.open = None
                self._rebuild_if_still(manifest, trust)
        raise BusyError("the search index is busy; try again")

    def _rebuild_if_still(self, manifest: Manifest, trust: Trust) -> None:
        with exclusive(self.vault.lock("index")):
            current = load_manifest(self.vault)
            if current is None or current.dir == manifest.dir:
                indexer.swap_in(self.vault, builder.build(self.vault, None, manifest.languages, trust))

    def _rebuild_if_missing(self, manifest: Manifest, trust: Trust) -> None:
        """Under the index lock (so no writer is committing), open the index once more; a file that
        is still missing was deleted, not replaced: rebuild the index from the vault."""
        with exclusive(self.vault.lock("index")):
            current = load_manifest(self.vault)
            if current is None or current.dir != manifest.dir:
                return  # another process swapped in a new index meanwhile
            try:
                engine.Index.open(index_dir(self.vault) / current.dir).searcher().close()
            except FileNotFoundError:
                indexer.swap_in(self.vault, builder.build(self.vault, None, current.languages, trust))


VIEWS: dict[str, View] = {}  # vault root -> this process's view


def view(vault: Vault) -> View:
    got = VIEWS.get(str(vault.root))
    if got is None:
        got = VIEWS[str(vault.root)] = View(vault)
    return got
