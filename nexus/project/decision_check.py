"""The check of decision notes ``verify`` runs: each note still signed by its author (or changed only
by Obsidian updating links to a renamed note), a status change to superseded signed by the
successor's author, links that lead to the notes they name, ids unique and logged. The notes' format
and signed bytes are ``decisions.py``'s; the keys come from the caller (what this machine trusts).
"""

from __future__ import annotations

from collections.abc import Container
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..keys.signatures import valid as verify_signature
from ..ledger import renames as renames_mod
from ..records import Problem
from ..storage.vault import Vault
from .decisions import (
    LINKED,
    SUPERSEDED_MARK,
    decision_bytes,
    id_of,
    link_target,
    note_ids,
    note_of,
    read_note,
    renamed_notes,
    signed_body,
    status_bytes,
    superseded_tail,
)


def check_notes(
    vault: Vault,
    identities: dict[str, Any],
    entry_ids: Container[str] | None = None,
    ring: Any = None,
) -> list[Problem]:
    """Problems with decision notes: a hand edit (signature mismatch), a bad status change, no entry.

    Signatures are checked with the keys ``ring`` (a ``trust.Keyring``) trusts for their author, every
    key pinned for the name (a decision signed before a key rotation still verifies), or without a
    ring with the key each identity note declares now."""
    keys: dict[str, dict[str, str]] = (
        ring.keys if ring is not None else {n: {i.key_id: i.public_key} for n, i in identities.items()}
    )

    out: list[Problem] = []
    seen: dict[str, str] = {}
    renames = renames_mod.known(vault, renamed_notes(vault))
    for path, named in note_ids(vault).items():
        rel = vault.rel(path)
        try:
            props, body = read_note(vault, path)
        except (InputError, OSError) as err:
            out.append(Problem("decision-edited", rel, 1, f"unreadable decision note: {err}"))
            continue
        did = str(props.get("id"))
        if did != named:
            out.append(Problem("decision-edited", rel, 1, f"id {did!r} does not match the file name"))
            continue
        if did in seen:
            out.append(Problem("duplicate", rel, 1, f"decision id {did} is also used by {seen[did]}"))
        seen[did] = rel
        found, body = _check_signature(rel, did, props, body, keys, renames)
        out.extend(found)
        out.extend(_check_status(vault, rel, did, props, body, keys, renames))
        out.extend(_check_links(vault, rel, did, props))
        entry = props.get("entry")
        if entry is None or (entry_ids is not None and entry not in entry_ids):
            out.append(Problem("decision-unlogged", rel, 1, f"{did} has no decision entry in the log"))
    return out


def _check_signature(
    rel: str,
    did: str,
    props: dict[str, Any],
    body: str,
    keys: dict[str, dict[str, str]],
    renames: dict[str, str],
) -> tuple[list[Problem], str]:
    """The author's signature over the note (problems, and the body as signed: the text before
    Obsidian updated links to renamed notes when that is what changed)."""
    public = keys.get(str(props.get("author")), {}).get(str(props.get("key")), "")
    bodies = [body, *renames_mod.originals(body, renames)] if public else []
    sig = str(props.get("sig"))
    signed = next((b for b in bodies if verify_signature(public, sig, decision_bytes(props, b))), None)
    if signed is None:
        return [
            Problem(
                "decision-edited",
                rel,
                1,
                f"{did}: signature by {props.get('author')} does not match the note: its title, author, "
                "date, supersedes or text was edited by hand (a decision is never edited; supersede it "
                "instead)",
            )
        ], body
    out = []
    if f"decisions/{Path(rel).stem}" in renames:
        was = renames[f"decisions/{Path(rel).stem}"]
        out.append(
            Problem("renamed", rel, 1, f"{did}'s note was renamed from {was}.md (nothing changed in it)")
        )
    if signed != body:
        out.append(
            Problem(
                "renamed",
                rel,
                1,
                f"{did}: Obsidian updated links to renamed notes in it; the signature holds for the text "
                "before the rename",
            )
        )
    return out, signed


def _check_status(
    vault: Vault,
    rel: str,
    did: str,
    props: dict[str, Any],
    body: str,
    keys: dict[str, dict[str, str]],
    renames: dict[str, str] | None = None,
) -> list[Problem]:
    status = props.get("status")
    if status == "active":
        if props.get("superseded_by") or SUPERSEDED_MARK in body:
            return [Problem("decision-edited", rel, 1, f"{did} is marked active but names a successor")]
        return []
    if status != "superseded":
        return [Problem("decision-edited", rel, 1, f"{did} has status {status!r}: only active or superseded")]
    succ_id = str(id_of(props.get("superseded_by")))
    succ = note_of(vault, succ_id)
    kid = str(props.get("superseded_key"))
    signer = next((name for name, known in keys.items() if kid in known), None)
    if (
        succ is None
        or signer is None
        or not verify_signature(keys[signer][kid], str(props.get("superseded_sig")), status_bytes(props))
    ):
        return [
            Problem(
                "decision-edited",
                rel,
                1,
                f"{did}: the status change to superseded is not signed by its successor's author",
            )
        ]
    tail = superseded_tail(f"decisions/{succ.stem}", succ_id, str(props.get("superseded_at")), signer)
    wanted = signed_body(body) + tail.rstrip()
    if body.rstrip() != wanted and not (
        renames_mod.link_changes(wanted, body.rstrip()) is not None
        and renames_mod.renamed_only(vault, wanted, body.rstrip())
    ):
        return [Problem("decision-edited", rel, 1, f"{did}: the superseded notice was edited")]
    return []


def _check_links(vault: Vault, rel: str, did: str, props: dict[str, Any]) -> list[Problem]:
    """A ``supersedes``/``superseded_by`` link must lead to the note of the id it names (its label
    is signed; its target is not, so it is checked here). A link Obsidian updated when that note was
    renamed still leads there."""
    out = []
    for key in LINKED:
        target = link_target(props.get(key))
        named = id_of(props.get(key))
        if target is not None and _note_id_at(vault, target) != named:
            out.append(
                Problem(
                    "decision-edited",
                    rel,
                    1,
                    f"{did}: its {key} property links to {target}, which is not {named}'s note "
                    "(edited by hand; a decision is never edited)",
                )
            )
    return out


def _note_id_at(vault: Vault, target: str) -> str | None:
    """The id of the decision note a link target names: its vault path, or (Obsidian's shortest
    form) its name alone."""
    target = target.removesuffix(".md")
    ids = note_ids(vault)
    for path, did in ids.items():
        if vault.rel(path)[:-3] == target:
            return did
    if "/" not in target:
        found = [did for path, did in ids.items() if path.stem == target]
        return found[0] if len(found) == 1 else None
    return None
