"""Search over the whole vault by words and by meaning, never stale, with provenance.

What is indexed: every log entry (id, agent, channel, type, time, summary, body) and every section of
every other Markdown note (decisions, checkpoints, state, identities, memory, a person's own notes)
with the note's status, author and time. The index lives in ``.nexus/index/`` (derived: rebuilt
when missing, damaged or of another version); before every search only what changed is indexed.

Relevance (docs/performance.md, benchmarks/relevance.py): every word is indexed as its Snowball stem
in each of the index's languages (``search_languages``: English by default). A query of plain words
ranks the hits that match every word first, then the best partial matches. A hit about a superseded
decision says so and ranks below the decision that replaced it.

The package, one idea a module (only ``engine`` imports Whoosh; importing this package imports
none of them: each name below is loaded on first use):

* ``engine`` — Whoosh behind a small interface: index, writers, searcher, postings, queries;
* ``language`` — words, stop words and stems in the index's languages;
* ``documents`` — the vault's files and the documents made of them (entries, note sections);
* ``watches`` — the kernel's word that nothing in a vault changed (inotify), so a search skips its stats;
* ``manifest`` — which index folder is current, each file as indexed, a segment's mark;
* ``builder`` — a full build, shared between processes; ``indexer`` — refresh and rebuild;
* ``query`` — query syntax, phrases, filters; ``scoring`` — BM25 over posting blocks;
* ``reader`` — a process's open view of an index; ``hits`` — hits read back from the vault;
* ``verdicts`` — entries parsed and signatures checked once per process, keyed by their exact bytes;
* ``seals`` — entries sealed when indexed (their signature proven at query time by two hashes);
  ``proof`` — what ``nexus verify`` proved, so the build need not check those signatures again;
* ``snippets`` — the text around the matched words;
* ``supersession`` — superseded decisions ranked below what replaced them; ``finder`` — ``search``;
* ``embedding`` — text to vectors by meaning (the only import of the model); ``vectors`` — the
  vector store under ``.nexus/vectors/``, read through memory maps; ``vector_writer`` — it kept up
  to date, never stale; ``fusion`` — ranking by meaning and words.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .builder import Progress
    from .finder import search, status
    from .indexer import rebuild, refresh
    from .language import check_languages
    from .manifest import MANIFEST, index_dir
    from .query import parse_query
    from .vector_writer import refresh_vectors

__all__ = [
    "MANIFEST",
    "Progress",
    "check_languages",
    "index_dir",
    "parse_query",
    "rebuild",
    "refresh",
    "refresh_vectors",
    "search",
    "status",
]

_WHERE = {
    "search": "finder",
    "status": "finder",
    "rebuild": "indexer",
    "refresh": "indexer",
    "check_languages": "language",
    "index_dir": "manifest",
    "MANIFEST": "manifest",
    "parse_query": "query",
    "Progress": "builder",
    "refresh_vectors": "vector_writer",
}


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
