"""The search index's storage engine: the ONLY module that imports Whoosh.

A small interface the rest of ``nexus.search`` uses, so Whoosh's untyped API stays here:

* ``Index``: create, open or check an index folder; its generation and document count;
* ``Writer`` (incremental: add and delete documents, commit or cancel, or commit segments written by
  ``PartWriter``, one new segment written without the index lock, for a parallel build);
* ``Searcher``: counts, stored fields, filters, Whoosh's own matcher (``run``) and the ``Leaf``
  segments whose posting lists ``scoring`` decodes itself;
* ``Query``: Whoosh query syntax parsed, words rewritten to the stems the index holds;
* the languages Whoosh ships stemmers and stop words for.

The schema (``schema``): one ``text`` field of stems whose postings carry a BM25 weight computed at
index time (``_Words``: no positions, no stored text), ids and filters as ID fields, the rest stored.
Callers hand documents over already analysed (``Terms``: stem counts and the number of words).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from array import array
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whoosh import fields, scoring
from whoosh import index as whoosh_index
from whoosh import lang as whoosh_lang
from whoosh import query as whoosh_query
from whoosh.analysis.filters import STOP_WORDS, LowercaseFilter, StopFilter
from whoosh.analysis.tokenizers import RegexTokenizer
from whoosh.codec import whoosh3 as whoosh_w3
from whoosh.matching.wrappers import FilterMatcher
from whoosh.qparser.default import QueryParser
from whoosh.system import pack_uint

from ..errors import QueryError

wq: Any = whoosh_query  # Whoosh does not re-export its query classes for type checkers
lang: Any = whoosh_lang
w3: Any = whoosh_w3  # (subclassed below: typed as Any, as the rest of Whoosh's API here)
STOP = frozenset(STOP_WORDS)
K1, B, AVGDL = 1.2, 0.75, 40.0  # BM25 parameters; AVGDL: a fixed typical length, in words
STORED_KEPT = 20_000  # documents' stored fields a searcher keeps once read (~350 bytes each)

Term = tuple[str, str]  # (field, term)
Group = tuple[Term, ...]  # one query word: its alternatives (its stems, one per language)
Loc = tuple[int, int, int, int]  # byte start, byte end, line start, line end


@dataclass(frozen=True, slots=True)
class Terms:
    """Text as the index takes it: each stem's frequency, and the number of words (for BM25)."""

    counts: dict[str, int]
    words: int


@dataclass(frozen=True, slots=True)
class Doc:
    """One document: a log entry or a note's section. Empty fields get no posting."""

    key: str  # e:ID or n:PATH#N
    kind: str  # entry | section
    path: str
    agent: str
    channel: str
    type: str
    status: str
    ts: str
    heading: str
    text: Terms
    loc: Loc
    seal: bytes = b""  # an entry's seal (keys.seal), when this machine found its signature valid


@dataclass(frozen=True, slots=True)
class Stored:
    """The stored fields of a document (the text is read back from the vault)."""

    key: str
    kind: str
    path: str
    agent: str
    channel: str
    type: str
    status: str
    ts: str
    heading: str
    loc: Loc
    seal: bytes = b""


@dataclass(frozen=True, slots=True)
class Segment:
    """A finished Whoosh segment (picklable: a build process hands it to the parent)."""

    raw: Any


# ------------------------------------------------------------------ schema


class _Words(fields.TEXT):
    """A TEXT field of already analysed ``Terms`` that keeps no positions and stores each posting's
    BM25 term weight, length-normalised at index time, so a query never looks up document lengths
    (that lookup was two thirds of the query time)."""

    def index(self, value: Any, **kwargs: Any) -> Generator[tuple[bytes, int, float | int, bytes], Any, None]:
        norm = K1 * (1 - B + B * value.words / AVGDL)
        for term, freq in value.counts.items():
            yield term.encode("utf-8"), freq, freq * (K1 + 1) / (freq + norm), pack_uint(freq)


class _BM25(scoring.WeightingModel):
    """BM25 for Whoosh's own matcher: the stored weight times the term's BM25 idf."""

    def scorer(self, searcher: Any, fieldname: str, text: Any, qf: int = 1) -> Any:
        parent = searcher.get_parent()
        n = parent.doc_count_all()
        df = parent.doc_frequency(fieldname, text)
        return scoring.TF_IDFScorer(searcher.term_info(fieldname, text).max_weight(), idf(n, df))


def idf(n: int, df: int) -> float:
    """BM25's idf of a term in ``df`` of ``n`` documents."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


@functools.cache
def schema() -> Any:
    # the analyzer is what the query parser makes of text-field words: lowercase, no stop words
    analyzer = RegexTokenizer(r"\w+") | LowercaseFilter() | StopFilter(stoplist=STOP, minsize=1)
    return fields.Schema(
        key=fields.STORED,  # a unique term per document would cost a third of the build time
        kind=fields.ID(stored=True),
        path=fields.ID(stored=True),
        agent=fields.ID(stored=True),
        channel=fields.ID(stored=True),
        type=fields.ID(stored=True),
        status=fields.ID(stored=True),
        ts=fields.STORED,
        heading=fields.STORED,
        # One text field: a summary or heading is written twice so it weighs double (field boosts
        # would need a field each, and every field's postings cost build time).
        text=_Words(analyzer=analyzer, phrase=False),
        loc=fields.STORED,  # [byte start, byte end, line start, line end]
        seal=fields.STORED,  # an entry's seal (keys.seal): its signature found valid at index time
    )


def _fields(doc: Doc) -> dict[str, Any]:
    out: dict[str, Any] = {"key": doc.key, "kind": doc.kind, "path": doc.path, "ts": doc.ts}
    for name in ("agent", "channel", "type", "status", "heading"):
        value = getattr(doc, name)
        if value:  # no posting for an empty status or channel
            out[name] = value
    out["text"] = doc.text
    out["loc"] = list(doc.loc)
    if doc.seal:
        out["seal"] = doc.seal
    return out


# ------------------------------------------------------------------ postings on disk

BLOCK = 1024  # postings a block (Whoosh's default: 128)


class FlatPostingsWriter(w3.W3PostingsWriter):  # type: ignore[misc]
    """Whoosh's posting writer, a block of a text or ID field kept as the bytes of two flat arrays
    (docnums as uint32, weights as float32) where Whoosh pickles a tuple of docnum gaps and one of
    floats: decoding a block is two copies of its bytes (``array.frombytes``), where unpickling made
    a Python number a posting and the gaps were added up one by one. ``BLOCK`` postings a block (an
    eighth as many blocks to step through as Whoosh's 128), not compressed."""

    def _mini_ids(self) -> Any:
        return super()._mini_ids() if self._byteids else self._ids.tobytes()

    def _mini_weights(self) -> Any:
        weights = self._weights
        if len(weights) > 1 and any(w != weights[0] for w in weights):
            return weights.tobytes()
        return super()._mini_weights()  # (all equal: Whoosh keeps one number, or none for 1.0)


class FlatMatcher(w3.W3LeafMatcher):  # type: ignore[misc]
    """Whoosh's matcher over ``FlatPostingsWriter``'s blocks (a block of Whoosh's own shape is read
    as Whoosh reads it): Whoosh's own queries (phrases, prefixes, filters) read them too."""

    def _flat(self, part: int, typecode: str) -> array[Any] | None:
        """The block's docnums (``part`` 0) or weights (1) when written flat, else None."""
        if self._data is None:
            self._read_data()
        raw = self._data[part]
        if not isinstance(raw, bytes):
            return None
        out = array(typecode)
        out.frombytes(raw)
        return out

    def _read_ids(self) -> None:
        ids = self._flat(0, "I")
        if ids is None:
            super()._read_ids()
        else:
            self._ids = ids

    def _read_weights(self) -> None:
        weights = self._flat(1, "f")
        if weights is None:
            super()._read_weights()
        else:
            self._weights = weights


class FlatCodec(w3.W3Codec):  # type: ignore[misc]
    """Whoosh's codec with ``FlatPostingsWriter``'s blocks (named in each segment's table of
    contents: the class must stay importable here, or the index is rebuilt)."""

    def __init__(self) -> None:
        super().__init__(blocklimit=BLOCK, compression=0)

    def postings_writer(self, dbfile: Any, byteids: bool = False) -> Any:
        return FlatPostingsWriter(dbfile, blocklimit=self._blocklimit, byteids=byteids, compression=0)

    def postings_reader(
        self, dbfile: Any, terminfo: Any, format_: Any, term: Any = None, scorer: Any = None
    ) -> Any:
        if terminfo.is_inlined():
            return super().postings_reader(dbfile, terminfo, format_, term=term, scorer=scorer)
        offset, length = terminfo.extent()
        return FlatMatcher(dbfile, offset, length, format_, term=term, scorer=scorer)


# ------------------------------------------------------------------ index and writers


class Index:
    """One Whoosh index folder."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    @classmethod
    def create(cls, folder: Path) -> Index:
        return cls(whoosh_index.create_in(str(folder), schema()))

    @classmethod
    def open(cls, folder: Path) -> Index:
        """Raises FileNotFoundError while a writer elsewhere swaps a ``.toc`` file, or for a lost one."""
        return cls(whoosh_index.open_dir(str(folder)))

    @staticmethod
    def exists(folder: Path) -> bool:
        try:
            return bool(whoosh_index.exists_in(str(folder)))
        except Exception:  # an unreadable folder is no index
            return False

    def generation(self) -> int:
        return int(self.raw.latest_generation())

    def doc_count(self) -> int:
        """The documents not deleted, from the table of contents (Whoosh's own count opens a reader:
        every segment's files mapped and read, +110 MB at 330,000 entries, only to count)."""
        return sum(int(segment.doc_count()) for segment in self.raw._segments())

    def searcher(self) -> Searcher:
        return Searcher(self.raw.searcher(weighting=_BM25()))

    def writer(self) -> Writer:
        return Writer(self.raw.writer(codec=FlatCodec()))


class Writer:
    """The index's one writer (holds Whoosh's lock): documents added and deleted, then committed."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def add(self, doc: Doc) -> None:
        self.raw.add_document(**_fields(doc))

    def delete_path(self, rel: str) -> None:
        self.raw.delete_by_term("path", rel)

    def commit(self) -> None:
        self.raw.commit()

    def commit_segments(self, segments: Sequence[Segment]) -> None:
        """Commit segments ``PartWriter``s wrote (this writer's own segment stays empty)."""
        self.raw._close_segment()
        self.raw._commit_toc([s.raw for s in segments])
        self.raw._finish()

    def cancel(self) -> None:
        self.raw.cancel()


RUN_BATCH = 1024  # postings per record of a sorted run on disk (see ``_batched_pool``)


@functools.cache
def _batched_pool() -> Any:
    """Whoosh's posting pool, its sorted runs written and read ``RUN_BATCH`` postings a record
    (``marshal``, each record after its length) instead of one ``pickle`` call a posting. A build
    buffers ``limitmb`` of postings per process and spills the rest to sorted runs, merged at the
    end: with a pickle call a posting, writing and reading the runs took ~40% of the build's CPU
    (docs/performance.md). Merging holds one record per run in memory."""
    import marshal

    from whoosh.writing import PostingPool

    class BatchedPool(PostingPool):
        def _write_run(self, f: Any, items: Any) -> None:
            batch: list[Any] = []
            for item in items:
                batch.append(item)
                if len(batch) >= RUN_BATCH:
                    _write_batch(f, batch)
                    batch = []
            if batch:
                _write_batch(f, batch)
            f.close()

        def _read_run(self, path: str) -> Generator[Any, None, None]:
            f = self._open_run(path)  # type: ignore[no-untyped-call]
            try:
                while size := f.read(4):
                    yield from marshal.loads(f.read(int.from_bytes(size, "little")))
            finally:
                f.close()
                self._remove_run(path)  # type: ignore[no-untyped-call]

    def _write_batch(f: Any, batch: list[Any]) -> None:
        data = marshal.dumps(batch)
        f.write(len(data).to_bytes(4, "little") + data)

    return BatchedPool


class _Bucket:
    """One of the 256 hash buckets of a segment's term index while it is written, as two flat arrays.
    Whoosh keeps each term's (hash, position) as a tuple in a list, ~130 bytes a term held until the
    segment is finished: ~65 MB in a build process indexing 500,000 entries of a 1M-entry vault (each
    entry has terms of its own, its id first). Here 16 bytes a term; the file written is the same."""

    __slots__ = ("hashes", "positions")

    def __init__(self) -> None:
        self.hashes = array("Q")
        self.positions = array("q")

    def append(self, pair: tuple[int, int]) -> None:
        self.hashes.append(pair[0])
        self.positions.append(pair[1])

    def __len__(self) -> int:
        return len(self.hashes)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.hashes, self.positions, strict=True)


class PartWriter:
    """One new segment of an index folder, written without the index lock (the parent process
    holds it and commits the parts' segments together)."""

    def __init__(self, folder: Path, limitmb: int) -> None:
        from whoosh.writing import SegmentWriter

        self.raw: Any = SegmentWriter(
            whoosh_index.open_dir(str(folder)), _lk=False, limitmb=limitmb, codec=FlatCodec()
        )  # type: ignore[no-untyped-call]
        self.raw.pool = _batched_pool()(self.raw._tempstorage, self.raw.newsegment, limitmb=limitmb)
        self.raw.fieldwriter._tindex.buckets = [_Bucket() for _ in range(256)]

    def add(self, doc: Doc) -> None:
        self.raw.add_document(**_fields(doc))

    def finish(self) -> Segment | None:
        """The segment written, or None when nothing was added."""
        if self.raw._added:
            return Segment(self.raw._finalize_segment())
        self.raw._close_segment()
        return None

    def cancel(self) -> None:
        self.raw.cancel()


# ------------------------------------------------------------------ reading


class Leaf:
    """One segment of an open index: its posting lists, decoded whole."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        segment = raw.segment() if hasattr(raw, "segment") else None
        self.segment_id: str | None = segment.segment_id() if segment is not None else None
        self.deleted: frozenset[int] = raw.deleted_docs_set if raw.has_deletions() else frozenset()

    def postings(self, field: str, term: str) -> tuple[array[int], array[float]] | None:
        """One term's docnums (ascending) and stored weights, deleted documents included (callers
        drop them); None when the term is absent."""
        try:
            m = self.raw.postings(field, term)
        except Exception:  # TermNotFound
            return None
        if isinstance(m, FilterMatcher):  # deletions: decode underneath
            m = m.child
            m.reset()  # (the filter moved it past the deleted documents it starts with)
        ids, weights = array("i"), array("f")  # (Whoosh stores weights as float32: kept exactly)
        if isinstance(m, FlatMatcher) and m.is_active():
            if m._data is None:
                m._read_data()
            if isinstance(m._data[0], bytes):  # (a segment FlatCodec wrote)
                return _flat_postings(m)
        if hasattr(m, "_read_data") and hasattr(m, "_next_block") and not getattr(m, "_byteids", True):
            while m.is_active():  # a whole block at a time; ids are delta-encoded
                if m._data is None:
                    m._read_data()
                m._read_weights()
                block, ws = m._data[0], m._weights
                n = min(len(block), len(ws))  # (as a zip of the two would pair them)
                ids.extend(itertools.islice(itertools.accumulate(block), n))
                if isinstance(ws, array) and ws.typecode == weights.typecode and len(ws) == n:
                    weights.extend(ws)  # (a copy of the block's bytes)
                else:  # (anything else: kept as doubles, never rounded)
                    weights = weights if weights.typecode == "d" else array("d", weights)
                    weights.extend(itertools.islice(ws, n))
                m._next_block()
        else:  # another matcher: posting by posting
            weights = array("d")
            for d, w in m.items_as("weight"):
                ids.append(d)
                weights.append(w)
        return ids, weights


def _flat_postings(m: FlatMatcher) -> tuple[array[int], array[float]]:
    """A term's postings from ``FlatPostingsWriter``'s blocks: each block's two arrays copied whole."""
    ids, weights = array("i"), array("f")
    while m.is_active():
        if m._data is None:
            m._read_data()
        raw_ids, raw_ws = m._data[0], m._data[1]
        ids.frombytes(raw_ids)
        if isinstance(raw_ws, bytes):
            weights.frombytes(raw_ws)
        else:  # every weight of the block equal: Whoosh keeps one number (None for 1.0)
            weights.extend(itertools.repeat(1.0 if raw_ws is None else raw_ws, len(ids) - len(weights)))
        m._next_block()
    return ids, weights


def _stored_fields(reader: Any) -> Callable[[int], dict[str, Any]]:
    """docnum -> the stored fields of a document, read straight from its segment's columns: what
    Whoosh's reader does, less its copy of each dict filtered by the schema (an index of another
    schema is another manifest version: rebuilt) and its calls through each layer."""
    leaves = reader.leaf_readers()
    perdocs = [getattr(leaf, "_perdoc", None) for leaf, _ in leaves]
    if not leaves or any(p is None or not hasattr(p, "stored_fields") for p in perdocs):
        return lambda docnum: dict(reader.stored_fields(docnum))
    if len(leaves) == 1:
        return perdocs[0].stored_fields  # type: ignore[no-any-return,union-attr]
    bases = [base for _, base in leaves]
    fields = [p.stored_fields for p in perdocs]  # type: ignore[union-attr]

    def stored(docnum: int) -> dict[str, Any]:
        i = bisect.bisect_right(bases, docnum) - 1
        return fields[i](docnum - bases[i])  # type: ignore[no-any-return]

    return stored


class Searcher:
    """A view of the index at one generation (reused until the index changes)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.allowed: dict[tuple[Term, ...], set[int]] = {}  # filters -> documents (this generation)
        self.kept: dict[int, Stored] = {}  # docnum -> stored fields read (fixed for this generation)
        self._fields: Callable[[int], dict[str, Any]] | None = None  # docnum -> its stored fields

    def doc_count_all(self) -> int:
        return int(self.raw.doc_count_all())

    def doc_count(self) -> int:
        return int(self.raw.doc_count())

    def doc_frequency(self, field: str, term: str) -> int:
        return int(self.raw.doc_frequency(field, term))

    def stored(self, docnum: int) -> Stored:
        got = self.kept.get(docnum)
        if got is None:
            got = self._stored(docnum)
            if len(self.kept) >= STORED_KEPT:
                del self.kept[next(iter(self.kept))]
            self.kept[docnum] = got
        return got

    def _stored(self, docnum: int) -> Stored:
        if self._fields is None:
            self._fields = _stored_fields(self.raw.reader())
        f = self._fields(docnum)
        start, end, line_start, line_end = f["loc"]
        return Stored(
            f["key"],
            f["kind"],
            f["path"],
            f.get("agent", ""),
            f.get("channel", ""),
            f.get("type", ""),
            f.get("status", ""),
            f.get("ts", ""),
            f.get("heading", ""),
            (start, end, line_start, line_end),
            f.get("seal", b""),
        )

    def leaves(self) -> list[tuple[Leaf, int]]:
        """The segments and the docnum each starts at."""
        return [(Leaf(leaf), base) for leaf, base in self.raw.reader().leaf_readers()]

    def matching(self, filters: tuple[Term, ...]) -> set[int]:
        """The documents holding every (field, value) term, computed once per searcher."""
        allowed = self.allowed.get(filters)
        if allowed is None:
            allowed = set(self.raw.docs_for_query(wq.And([wq.Term(f, v) for f, v in filters])))
            self.allowed[filters] = allowed
        return allowed

    def run(self, query: Query, limit: int, allow: set[int] | None) -> list[tuple[float, int]]:
        """(score, docnum) of the best ``limit`` documents by Whoosh's own matcher."""
        return [(r.score, r.docnum) for r in self.raw.search(query.raw, limit=limit, filter=allow)]

    def expand_prefix(self, field: str, prefix: str, limit: int) -> list[str]:
        out: list[str] = []
        for term in self.raw.reader().expand_prefix(field, prefix):
            out.append(term.decode("utf-8") if isinstance(term, bytes) else str(term))
            if len(out) > limit:
                break
        return out

    def close(self) -> None:
        self.raw.close()


# ------------------------------------------------------------------ queries


class Query:
    """A Whoosh query whose text-field words are the stems the index holds."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    @classmethod
    def of_words(cls, groups: Sequence[Group]) -> Query:
        """An AND of words, each a term or an OR of its stems."""
        terms = [_group(g) for g in groups]
        return cls(terms[0] if len(terms) == 1 else wq.And(terms))

    @classmethod
    def parse(cls, text: str, stems: Callable[[str], tuple[str, ...]]) -> Query:
        """Whoosh query syntax; phrases become an AND of their words (no positions are indexed)."""
        try:
            parsed = _parser().parse(text)
        except Exception as err:  # any parser failure is the user's syntax
            raise QueryError(f"cannot parse query {text!r}: {err}") from None
        return cls(_rewrite(parsed, stems))

    def normalized(self) -> Query:
        return Query(self.raw.normalize())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Query) and bool(self.raw.normalize() == other.raw.normalize())

    __hash__ = None  # type: ignore[assignment]

    def groups(self) -> list[Group] | None:
        """The words of a plain AND of words (each a term or an OR of its stems), else None."""
        q = self.raw.normalize()
        leaves = list(q.subqueries) if type(q) is wq.And else [q]
        out: list[Group] = []
        for leaf in leaves:
            alts = list(leaf.subqueries) if type(leaf) is wq.Or else [leaf]
            if leaf.boost != 1.0 or not all(type(t) is wq.Term and t.boost == 1.0 for t in alts):
                return None
            group = tuple((t.fieldname, t.text) for t in alts)
            if group not in out:
                out.append(group)
        return out or None

    def text_terms(self, searcher: Searcher, prefix_limit: int = 50) -> list[str]:
        """The text-field terms the query names, prefixes expanded (for highlighting)."""
        out: list[str] = []
        try:
            for leaf in self.raw.leaves():
                if getattr(leaf, "fieldname", None) != "text":
                    continue
                if isinstance(leaf, wq.Prefix):
                    out.extend(searcher.expand_prefix(leaf.fieldname, leaf.text, prefix_limit))
                elif isinstance(leaf, wq.Term):
                    out.append(str(leaf.text))
        except Exception:  # highlighting is best effort
            pass
        return out


def _group(group: Group, boost: float = 1.0) -> Any:
    if len(group) == 1:
        return wq.Term(*group[0], boost=boost)
    return wq.Or([wq.Term(*t) for t in group], boost=boost)


@functools.cache
def _parser() -> Any:
    return QueryParser("text", schema())


def _word(field: str, word: str, stems: Callable[[str], tuple[str, ...]], boost: float = 1.0) -> Any:
    if field != "text":
        return wq.Term(field, word, boost=boost)
    return _group(tuple((field, s) for s in stems(word)), boost)


def _rewrite(q: Any, stems: Callable[[str], tuple[str, ...]]) -> Any:
    if isinstance(q, wq.Phrase):
        words = [w for w in q.words if w]
        if not words:
            return wq.NullQuery
        terms = [_word(q.fieldname, w, stems) for w in words]
        return terms[0] if len(terms) == 1 else wq.And(terms)
    if type(q) is wq.Term:
        return _word(q.fieldname, q.text, stems, q.boost)
    if isinstance(q, wq.CompoundQuery):
        return q.__class__([_rewrite(sub, stems) for sub in q.subqueries], boost=q.boost)
    if isinstance(q, wq.Not):
        return wq.Not(_rewrite(q.query, stems))
    if hasattr(q, "children") and hasattr(q, "a") and hasattr(q, "b"):
        return q.__class__(_rewrite(q.a, stems), _rewrite(q.b, stems))
    return q


# ------------------------------------------------------------------ languages


def language_code(name: str) -> str | None:
    """Whoosh's code for a language name or code (``en``, ``spanish``…) with a stemmer, else None."""
    code = lang.two_letter_code(name) if name else None
    return str(code) if code and lang.has_stemmer(code) else None


def language_names() -> list[str]:
    return [str(x) for x in lang.languages]


def stop_words(code: str) -> frozenset[str]:
    return frozenset(lang.stopwords_for_language(code)) if lang.has_stopwords(code) else frozenset()
