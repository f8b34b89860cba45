"""The index's manifest: which index folder is current and what each file looked like when indexed.

``.nexus/index/manifest.json`` (derived state, rewritten whole without fsync: a lost or damaged one
means the index is rebuilt)::

    {"version": 10, "dir": "ix-XXXX", "built": TIME, "updated": TIME, "languages": ["en"],
     "files": {"log/2026-11.md": {"size": N, "mtime": NS, "sha": HEX|null,
                                  "mark": [OFFSET, LINE, LAST_ID, SCANNED]}, "notes/x.md": {...}}}

Per file its size, mtime and content hash, and for a log segment the ``marks.Mark`` indexing reached
(the one mark every incremental reader of the log keeps: valid while the line before it is still the
end line of the last entry indexed; reading goes on from it). A manifest of another version or shape
reads as missing. Imports no Whoosh.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..ledger.marks import Mark
from ..storage import durable
from ..storage.vault import Vault

VERSION = 11  # 11: flat posting blocks (engine.FlatCodec), Snowball's C stemmers;
#               10: entries' seals (keys.seal); 9: a segment's marks.Mark; 8: own field class (older: rebuilt)
INDEX_DIR = "index"
MANIFEST = "manifest.json"


def index_dir(vault: Vault) -> Path:
    return vault.state / INDEX_DIR


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class FileRecord:
    """A file as indexed: size, mtime (ns), SHA-256 (None when only an append was read), and for a
    log segment the ``Mark`` indexing reached (just after the last entry indexed)."""

    size: int
    mtime: int
    sha: str | None
    mark: Mark | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"size": self.size, "mtime": self.mtime, "sha": self.sha}
        if self.mark is not None:
            out["mark"] = self.mark.to_json()
        return out

    @classmethod
    def from_json(cls, data: object) -> FileRecord | None:
        if not isinstance(data, dict):
            return None
        size, mtime, sha = data.get("size"), data.get("mtime"), data.get("sha")
        if (
            not isinstance(size, int)
            or not isinstance(mtime, int)
            or not (sha is None or isinstance(sha, str))
        ):
            return None
        mark = Mark.from_json(data["mark"]) if "mark" in data else None
        if "mark" in data and mark is None:
            return None
        return cls(size, mtime, sha, mark)

    def touched(self, size: int, mtime: int) -> FileRecord:
        return replace(self, size=size, mtime=mtime)


@dataclass
class Manifest:
    """The current index folder and the files it holds (changed in place while indexing)."""

    dir: str
    languages: tuple[str, ...]
    files: dict[str, FileRecord] = field(default_factory=dict)
    built: str = ""
    updated: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "version": VERSION,
            "dir": self.dir,
            "files": {rel: r.to_json() for rel, r in self.files.items()},
            "built": self.built,
            "updated": self.updated,
            "languages": list(self.languages),
        }

    @classmethod
    def from_json(cls, data: object) -> Manifest | None:
        """None for another version or any unexpected shape."""
        if not isinstance(data, dict) or data.get("version") != VERSION:
            return None
        folder, files, langs = data.get("dir"), data.get("files"), data.get("languages")
        if not isinstance(folder, str) or not isinstance(files, dict):
            return None
        if not isinstance(langs, list) or not langs or not all(isinstance(x, str) for x in langs):
            return None
        records: dict[str, FileRecord] = {}
        for rel, value in files.items():
            record = FileRecord.from_json(value)
            if record is None:
                return None
            records[str(rel)] = record
        built, updated = data.get("built"), data.get("updated")
        return cls(folder, tuple(langs), records, str(built or ""), str(updated or ""))

    def copy(self) -> Manifest:
        return replace(self, files=dict(self.files))


class Manifests:
    """Manifests read from disk, a parsed copy reused while the file's (inode, mtime, size) stays
    the same; callers get their own copy."""

    def __init__(self) -> None:
        self.parsed: dict[str, tuple[tuple[int, int, int], Manifest]] = {}

    def load(self, vault: Vault) -> Manifest | None:
        """The manifest, or None when missing, unreadable or of another version or shape."""
        found = self.peek(vault)
        return found.copy() if found is not None else None

    def peek(self, vault: Vault) -> Manifest | None:
        """``load`` without the copy: the caller only reads it (its folder, its languages)."""
        path = _path(vault)
        try:
            st = os.stat(path)
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
            cached = self.parsed.get(path)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            manifest = Manifest.from_json(json.loads(Path(path).read_bytes()))
        except (FileNotFoundError, ValueError):
            return None
        if manifest is None:
            return None
        self.parsed[path] = (stamp, manifest)
        return manifest


MANIFESTS = Manifests()  # this process's


def stamp(vault: Vault) -> tuple[int, int, int] | None:
    """The manifest file's (inode, mtime, size), or None when it is missing: rewritten whole by
    ``save`` (a new inode), so the same stamp means the same manifest."""
    try:
        st = os.stat(_path(vault))
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


_PATHS: dict[Path, str] = {}  # vault root -> its manifest's path (worked out once a process)


def _path(vault: Vault) -> str:
    got = _PATHS.get(vault.root)
    if got is None:
        got = _PATHS[vault.root] = str(index_dir(vault) / MANIFEST)
    return got


def load(vault: Vault) -> Manifest | None:
    return MANIFESTS.load(vault)


def save(vault: Vault, manifest: Manifest) -> None:
    durable.replace(index_dir(vault) / MANIFEST, json.dumps(manifest.to_json()).encode(), durable=False)
