"""``nexus git resolve``: the conflict markers a plain ``git merge`` left (a clone without the nexus
merge driver) resolved as the driver would have merged the file.

Each file nexus merges by kind that holds whole conflict regions (``storage/markers.py``) is split into
the two sides (and the ancestor, when git wrote it), and merged by its kind's rule (``merge.py``): a
segment keeps the entries of both sides by id, each once, in id order; a memory file the union of
entries; a checkpoint the newer save; and so on. What a rule could not keep in the file goes to a
conflict note under ``conflicts/``, as the driver does. A segment is replaced under the log lock
through ``ledger/log.py``; every other file is replaced atomically after checking it did not change
since it was read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConflictError
from ..ledger import log
from ..storage import durable, markers
from ..storage.vault import Vault
from . import merge


@dataclass(frozen=True)
class Resolved:
    """One file whose conflict markers were resolved: its path, kind, regions and what was listed."""

    file: str
    kind: str
    regions: int
    conflicts: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "kind": self.kind,
            "regions": self.regions,
            "conflicts": list(self.conflicts),
        }


def resolve(vault: Vault) -> list[Resolved]:
    """Resolve every managed file's conflict markers; what each file became."""
    done = []
    for rel, found in markers.marked_files(vault.root):
        kind, _ = merge.kind_of(rel)
        path = vault.inside(vault.root / rel)
        if kind == "segment":
            with log.locked(vault):
                data = path.read_bytes()
                result = _merged(kind, data, rel)
                log.replace_segment(vault, path, data, result.data)
        else:
            data = path.read_bytes()
            result = _merged(kind, data, rel)
            if path.read_bytes() != data:
                raise ConflictError(
                    f"{rel} changed while it was being resolved: run `nexus git resolve` again"
                )
            durable.replace(path, result.data)
        listed = []
        for conflict in result.conflicts:
            note = vault.root / conflict.note_name()
            if conflict.other and not note.exists():
                durable.replace(note, conflict.note())
            listed.append(f"{conflict.kind}: {conflict.message}")
        for beside, extra in result.beside:
            target = vault.root / beside
            if not target.exists():
                durable.create_exclusive(target, extra)
            listed.append(f"the other side is kept as {beside}")
        done.append(Resolved(rel, kind, len(found), tuple(listed)))
    return done


def _merged(kind: str, data: bytes, rel: str) -> merge.Merged:
    found = markers.regions(data)
    base, ours, theirs = markers.sides(data, found)
    if kind == "text":  # (not a managed kind: never reached, marked_files lists managed files only)
        return merge.Merged(data)
    return merge.merge(kind, base, ours, theirs, rel)
