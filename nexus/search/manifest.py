"""The index's manifest: which index folder is current and what each file looked like when indexed.

``.nexus/index/manifest.json`` (derived state, rewritten whole without fsync: a lost or damaged one
means the index is rebuilt)::

    {"version": 8, "dir": "ix-XXXX", "built": TIME, "updated": TIME, "languages": ["en"],
     "files": {"log/2026-11.md": {"size": N, "mtime": NS, "sha": HEX|null,
                                  "offset": N, "line": N, "tail": HEX}, "notes/x.md": {...}}}

Per file its size, mtime and content hash, and for a log segment the ``Position`` indexing stopped
at. A manifest of another version or shape reads as missing. Imports no Whoosh.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import durable
from ..vault import Vault

VERSION = 8  # 8: the package's own field class pickled in the index (7 and older are rebuilt)
INDEX_DIR = "index"
MANIFEST = "manifest.json"
TAIL = 256  # bytes before a position that must be unchanged for an append to be read from there


def index_dir(vault: Vault) -> Path:
    return vault.state / INDEX_DIR


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class Position:
    """Where indexing stopped in a log segment: a byte offset at an entry boundary, the line there,
    and the bytes just before it (hex), which must be unchanged for the segment to have only grown."""

    offset: int
    line: int
    tail: str

    @classmethod
    def at(cls, data: bytes, base: int, end: int, line: int) -> Position:
        """The position ``end`` (a file offset) in ``data``, bytes of the file from offset ``base``."""
        return cls(end, line, data[max(0, end - TAIL - base) : end - base].hex())

    def appended(self, path: Path, size_then: int) -> tuple[bytes, int, int] | None:
        """The bytes appended after this position, with the ``TAIL`` bytes before it (only those are
        read), the file offset they start at, and the file's mtime; None when the file did not just
        grow from ``size_then`` bytes (read it whole again)."""
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                if self.offset <= 0 or st.st_size < self.offset or st.st_size == size_then:
                    return None
                f.seek(max(0, self.offset - TAIL))
                head = f.read(min(self.offset, TAIL))
                rest = f.read()
        except FileNotFoundError:
            return None
        if head.hex() != self.tail:
            return None
        return head + rest, self.offset - len(head), st.st_mtime_ns


@dataclass(frozen=True)
class FileRecord:
    """A file as indexed: size, mtime (ns), SHA-256 (None when only an append was read), and for a
    log segment the position indexing reached."""

    size: int
    mtime: int
    sha: str | None
    position: Position | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"size": self.size, "mtime": self.mtime, "sha": self.sha}
        if self.position is not None:
            p = self.position
            out.update(offset=p.offset, line=p.line, tail=p.tail)
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
        position = None
        if "offset" in data:
            offset, line, tail = data.get("offset"), data.get("line"), data.get("tail")
            if not isinstance(offset, int) or not isinstance(line, int) or not isinstance(tail, str):
                return None
            position = Position(offset, line, tail)
        return cls(size, mtime, sha, position)

    def touched(self, size: int, mtime: int) -> FileRecord:
        return replace(self, size=size, mtime=mtime)

    def at(self, data: bytes, base: int, end: int, line: int) -> FileRecord:
        """This record with the position ``end`` (see ``Position.at``)."""
        return replace(self, position=Position.at(data, base, end, line))

    def grown(self, path: Path) -> tuple[bytes, int, Position, int] | None:
        """What was appended to this segment since it was indexed (see ``Position.appended``): the
        bytes from just before the position, their file offset, the position, the file's mtime."""
        if self.position is None:
            return None
        got = self.position.appended(path, self.size)
        return None if got is None else (got[0], got[1], self.position, got[2])


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
        path = index_dir(vault) / MANIFEST
        try:
            st = path.stat()
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
            cached = self.parsed.get(str(path))
            if cached is not None and cached[0] == stamp:
                return cached[1].copy()
            manifest = Manifest.from_json(json.loads(path.read_bytes()))
        except (FileNotFoundError, ValueError):
            return None
        if manifest is None:
            return None
        self.parsed[str(path)] = (stamp, manifest)
        return manifest.copy()


MANIFESTS = Manifests()  # this process's


def load(vault: Vault) -> Manifest | None:
    return MANIFESTS.load(vault)


def save(vault: Vault, manifest: Manifest) -> None:
    durable.replace(index_dir(vault) / MANIFEST, json.dumps(manifest.to_json()).encode(), durable=False)
