"""What this machine trusts, as a value passed from the entry point down (``keys/trust.py`` reads and
writes the pins themselves)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


class Trust:
    """What this machine trusts for the vaults it reads, as an entry point found it: the folder
    (``NEXUS_HOME``) that holds the pinned keys (``keys/trust.py``), the memo of signatures already
    found valid (``keys/checked.py``) and the seal secret (``keys/seal.py``). It travels from the entry
    point (``Workspace.trust``, ``Call.trust``) to every reader that decides a signature; no module
    keeps one of its own.

    ``source``: that folder, a function that finds it when first asked (the per-user default costs an
    import that the per-turn commands reading no entry do not pay; pass one that remembers its answer),
    or None: nothing is pinned, the identity notes' keys are taken as they are (:data:`NO_PINS`, what a
    library caller gets). A value: a plain class with slots, in a module that imports nothing, because
    the hooks' quiet answers import it (through ``operations``) and must not pay for ``records``'
    dataclasses or the settings."""

    __slots__ = ("source",)

    def __init__(self, source: Path | Callable[[], Path] | None = None) -> None:
        self.source = source

    def __repr__(self) -> str:
        return f"Trust({self.source!r})"

    @property
    def home(self) -> Path | None:
        """The folder, or None: nothing pinned (also when no per-user folder can be found)."""
        if callable(self.source):
            try:
                return self.source()
            except (ImportError, OSError):
                return None
        return self.source


NO_PINS = Trust(None)  # a library caller's trust: the identity notes as they are, nothing pinned
