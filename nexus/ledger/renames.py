"""Notes renamed in Obsidian: signed text whose links Obsidian updated still proves who wrote it.

Renaming a note in Obsidian (with "Automatically update internal links" on) rewrites every wikilink to
it, inside signed log entries and decision notes too. The signature covers the text as signed, so
``verify`` and the watcher ask this module whether a changed text differs from the signed one only in
the targets of wikilinks to renamed notes:

* ``.nexus/renames.jsonl`` — one ``{"old", "new", "ts"}`` line per note rename ``nexus watch`` saw
  (vault paths without ``.md``); derived, never needed to read anything;
* a decision note's own name follows from its id and title (``D-0001-slug``), so a renamed decision
  note is recognised without any record;
* the watcher's shadow copy of an entry is the signed text itself.

A link is only ever put back to a target that no longer exists, from one that does: a link pointed
elsewhere by hand is still an edit.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..storage.vault import Vault

LOG = "renames.jsonl"
LINK_RE = re.compile(r"\[\[([^\]\[#|]*)")  # the target of a wikilink: up to #heading, |alias or ]]
MAX_VARIANTS = 256


def record(vault: Vault, old: str, new: str) -> None:
    """Remember that note ``old`` was renamed ``new`` (vault paths; ``.md`` is dropped)."""
    from ..storage import durable

    line = (
        json.dumps(
            {
                "old": old.removesuffix(".md"),
                "new": new.removesuffix(".md"),
                "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )
        + "\n"
    )
    durable.append(vault.state / LOG, line.encode())


def is_note_rename(old: str, new: str) -> bool:
    """A move between two Markdown notes, not an editor's temp file saved over a note."""
    return (
        old != new
        and old.endswith(".md")
        and new.endswith(".md")
        and not Path(old).name.startswith(".")
        and not old.startswith(".nexus/")
    )


def known(vault: Vault, decision_renames: Mapping[str, str] | None = None) -> dict[str, str]:
    """new path -> old path (without ``.md``) of every rename known: the watcher's record, then
    ``decision_renames``, the decision notes whose name no longer follows from their id and title
    (``project/decisions.py``'s ``renamed_notes``, passed in by a caller above it)."""
    out: dict[str, str] = {}
    try:
        for line in (vault.state / LOG).read_text(encoding="utf-8").splitlines():
            try:
                item = json.loads(line)
                out[str(item["new"])] = str(item["old"])
            except (ValueError, KeyError, TypeError):
                continue
    except (FileNotFoundError, OSError):
        pass
    for rel, canonical in (decision_renames or {}).items():
        out[rel] = canonical
    for new, old in list(out.items()):  # a → b → c: c was a
        seen = {new}
        while old in out and old not in seen:
            seen.add(old)
            old = out[old]
        out[new] = old
    return out


def _forms(path: str) -> list[str]:
    """How a link may name a note: its vault path, or (Obsidian's shortest form) its name alone."""
    name = path.rsplit("/", 1)[-1]
    return [path] if name == path else [path, name]


def originals(text: str, renames: dict[str, str], exists: set[str] | None = None) -> Iterator[str]:
    """``text`` with links to renamed notes put back to their old targets, each way it may have been
    written (full path or name alone); nothing when no link names a renamed note."""
    by_target: dict[str, list[str]] = {}
    for new, old in renames.items():
        for form in _forms(new):
            by_target.setdefault(form.lower(), [])
            for o in _forms(old):
                if o not in by_target[form.lower()]:
                    by_target[form.lower()].append(o)
    spots = [
        (m.start(1), m.end(1), by_target[m.group(1).strip().lower()])
        for m in LINK_RE.finditer(text)
        if m.group(1).strip().lower() in by_target
    ]
    if not spots:
        return
    choices = [[None, *alts] for _, _, alts in spots]  # None: this link was not rewritten
    for n, pick in enumerate(itertools.product(*choices)):
        if n >= MAX_VARIANTS:
            return
        if all(p is None for p in pick):
            continue
        out, pos = [], 0
        for (start, end, _), alt in zip(spots, pick, strict=True):
            if alt is not None:
                out.append(text[pos:start])
                out.append(alt)
                pos = end
        out.append(text[pos:])
        yield "".join(out)


def _mask(text: str) -> str:
    return LINK_RE.sub("[[", text)


def link_changes(signed: str, current: str) -> list[tuple[str, str]] | None:
    """The (old, new) link targets when ``current`` differs from ``signed`` only in wikilink targets,
    else None."""
    if _mask(signed) != _mask(current):
        return None
    olds = [m.group(1) for m in LINK_RE.finditer(signed)]
    news = [m.group(1) for m in LINK_RE.finditer(current)]
    return [(o, n) for o, n in zip(olds, news, strict=True) if o != n]


def renamed_only(vault: Vault, signed: str, current: str) -> list[tuple[str, str]] | None:
    """The link renames when ``current`` is ``signed`` with links moved from notes that no longer
    exist to notes that do (what Obsidian does on a rename), else None."""
    changes = link_changes(signed, current)
    if not changes:
        return None
    for old, new in changes:
        if _resolves(vault, old) or not _resolves(vault, new):
            return None
    return changes


def _resolves(vault: Vault, target: str) -> bool:
    target = target.strip()
    if not target:
        return False
    if (vault.root / f"{target}.md").is_file() or (vault.root / target).is_file():
        return True
    if "/" in target:
        return False
    name = f"{target}.md".lower()  # Obsidian's shortest form: the name alone, anywhere in the vault
    return any(p.name.lower() == name for p in vault.root.rglob("*.md") if ".nexus" not in p.parts)
