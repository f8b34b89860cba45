"""The review note in Obsidian: ticking a fact's checkbox in ``memory/REVIEW.md`` approves it.

``nexus watch`` imports this module at start (``watcher.PLUGIN_MODULES``); its ``register`` call makes
the watcher run :func:`on_change` whenever the review note changes (and once at start), which approves
every ticked fact in the name of the vault's human identity (``bank.apply_review_note``) and rewrites
the note. Idempotent: a fact already reviewed is left alone.
"""

from __future__ import annotations

from . import bank
from .vault import Vault
from .watcher import register


def on_change(vault: Vault, relpath: str) -> None:
    outcome = bank.apply_review_note(vault)
    if outcome.problems:
        raise RuntimeError("; ".join(outcome.problems))  # the watcher reports it as an error event


register(bank.is_review_note, on_change)
