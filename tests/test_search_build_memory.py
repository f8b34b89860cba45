"""What keeps a full index build's memory flat as the log grows (issue 15): the term index's hash
buckets held as flat arrays write the very bytes Whoosh's own lists write, and the index's document
count is read from its table of contents, equal to what a reader counts, deletions included."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from conftest import Env
from whoosh.filedb import filestore, filetables

from nexus import search
from nexus.search import engine
from nexus.search.manifest import index_dir
from nexus.search.manifest import load as load_manifest

whoosh_files: Any = filetables  # (Whoosh is untyped)
whoosh_storage: Any = filestore


def _write(path: Path, keys: list[bytes], compact: bool) -> bytes:
    storage = whoosh_storage.FileStorage(str(path.parent))
    writer = whoosh_files.OrderedHashWriter(storage.create_file(path.name))
    if compact:
        writer.buckets = [engine._Bucket() for _ in range(256)]
    for i, key in enumerate(keys):
        writer.add(key, str(i).encode())
    writer.close()
    return path.read_bytes()


def test_compact_buckets_write_the_same_term_index(tmp_path: Path) -> None:
    rng = random.Random(7)
    keys = sorted({rng.randbytes(rng.randint(1, 30)) for _ in range(20_000)})
    standard = _write(tmp_path / "standard.trm", keys, compact=False)
    assert _write(tmp_path / "compact.trm", keys, compact=True) == standard
    storage = whoosh_storage.FileStorage(str(tmp_path))
    reader = whoosh_files.OrderedHashReader(storage.open_file("compact.trm"))
    for i in rng.sample(range(len(keys)), 200):
        assert reader[keys[i]] == str(i).encode()
    reader.close()


def test_the_document_count_is_the_readers_after_deletions(env: Env) -> None:
    for i in range(30):
        env.append("ella", f"entry number {i} about keychains")
    search.refresh(env.vault)
    manifest = load_manifest(env.vault)
    assert manifest is not None
    index = engine.Index.open(index_dir(env.vault) / manifest.dir)
    raw = index.raw
    assert index.doc_count() == raw.doc_count() > 30
    writer = index.writer()
    writer.delete_path("log/" + sorted(p.name for p in (env.vault.root / "log").glob("*.md"))[0])
    writer.commit()
    index = engine.Index.open(index_dir(env.vault) / manifest.dir)
    assert index.doc_count() == index.raw.doc_count() < raw.doc_count_all()
