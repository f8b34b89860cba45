"""Full-text search over the whole vault, never stale: the only module that imports Whoosh.

What is indexed (one Whoosh document each):

* every log entry (id, agent, channel, type, time, summary, body), read with ``log.scan_file``;
* every section of every other Markdown note (decisions, checkpoints, state, identities, memory, a
  person's own notes), split at headings by ``sections.split``, with the note's frontmatter status,
  author/agent and time.

The index lives in ``.nexus/index/``: ``manifest.json`` says which Whoosh folder (``ix-XXXX/``) is
current and, per file, its size, mtime, content hash and (for a log segment) the byte offset indexed so
far. Before every search ``refresh`` compares the vault with the manifest (a stat of each file, a hash
only when size or mtime moved) and indexes just what changed; an appended segment is read from its
saved offset. One writer at a time (``.nexus/locks/index.lock``); readers that meet a Whoosh commit in
progress retry. A missing, corrupt or outdated index is rebuilt from the vault into a fresh folder and
swapped in by rewriting the manifest.

Speed choices (measured in ``benchmarks/bench_search.py``; see docs/performance.md): no positions and
no stored text (snippets and signature checks read the entry's bytes back from the vault by offset);
words are counted with one regex instead of Whoosh's token pipeline; stop words are not indexed;
phrases are matched as an AND of their words, then checked against the text itself; a full build
shares the work between processes, each writing a Whoosh segment.

Relevance (docs/performance.md, benchmarks/relevance.py): every word is indexed as its Snowball stem in
each of the index's languages (``search_languages``: English by default; Whoosh ships stemmers for
Spanish, Italian and a dozen more), so "paginate" finds "paginates" and "paginación". A query of plain
words ranks the hits that match every word first, then the best partial matches (a word nothing
matches never empties the answer). A hit about a superseded decision (its note, or its decision
entry) says so and ranks below the decision that replaced it.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import itertools
import json
import math
import os
import re
import secrets
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, TypeVar

from whoosh import fields, index, scoring
from whoosh import query as _whoosh_query
from whoosh.analysis.filters import STOP_WORDS, LowercaseFilter, StopFilter
from whoosh.analysis.tokenizers import RegexTokenizer
from whoosh.qparser.default import QueryParser
from whoosh.system import pack_uint

from . import durable, log, sections
from .errors import QueryError
from .locks import exclusive
from .records import Hit, IndexStatus, Located, RefreshStats
from .vault import Vault

query: Any = _whoosh_query  # Whoosh does not re-export its query classes for type checkers
SCHEMA_VERSION = 7
INDEX_DIR = "index"
MANIFEST = "manifest.json"
WORD_RE = re.compile(r"\w+")
STOP = frozenset(STOP_WORDS)
SUPERSEDED_FACTOR = 0.2  # a superseded decision's score is scaled by this, so active ones rank above
PARALLEL_BYTES = 4 * 1024 * 1024  # a vault larger than this is indexed by several processes
FAST = True  # score plain AND-of-terms queries block by block (see _top_conjunction)
CHUNK_BYTES = 1 << 20  # a segment larger than this may be split between processes
MAX_JOB_BYTES = 2 << 20  # ... and one larger than this always is (memory stays flat as the log grows)
LIMIT_MB = 16  # postings a build process buffers before writing a sorted run to disk (Whoosh limitmb;
#                128 peaked at ~180 MB a process, 16 at ~100 MB, flat as the vault grows)
Progress = Callable[[int, int], None]

QUERY_FIELDS = ("text", "agent", "channel", "type", "status", "path", "kind")


def _words(value: str) -> list[str]:
    return [w for w in WORD_RE.findall(value.lower()) if w not in STOP]


DEFAULT_LANGUAGES = ("en",)


def check_languages(languages: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Languages as Whoosh names them (``en``, ``es``, ``it``…), checked, in order, without repeats."""
    from whoosh import lang as whoosh_lang

    lang: Any = whoosh_lang
    out: list[str] = []
    for name in languages:
        code = lang.two_letter_code(str(name).strip().lower()) if str(name).strip() else None
        if not code or not lang.has_stemmer(code):
            raise QueryError(f"search language {name!r} has no stemmer; one of: {', '.join(lang.languages)}")
        if code not in out:
            out.append(code)
    return tuple(out) or DEFAULT_LANGUAGES


class _Analysis:
    """How one index turns text into terms: lowercase words, stop words of its languages dropped,
    each word indexed as its stem in every language (the distinct ones), accents folded after
    stemming. Stems are memoised per word: the vocabulary is small next to the text."""

    def __init__(self, langs: tuple[str, ...]) -> None:
        from whoosh import lang as whoosh_lang

        lang: Any = whoosh_lang
        self.langs = langs
        stop = set(STOP)
        for code in langs:
            if lang.has_stopwords(code):
                stop.update(lang.stopwords_for_language(code))
        self.stop = frozenset(stop)
        self.stemmers = [lang.stemmer_for_language(code) for code in langs]
        self.memo: dict[str, tuple[str, ...]] = {}

    def stems(self, word: str) -> tuple[str, ...]:
        got = self.memo.get(word)
        if got is None:
            got = tuple(dict.fromkeys(_fold(stem(word)) or word for stem in self.stemmers))
            if len(self.memo) < 1_000_000:
                self.memo[word] = got
        return got

    def words(self, value: str) -> list[str]:
        return [w for w in WORD_RE.findall(value.lower()) if w not in self.stop]


def _fold(word: str) -> str:
    if word.isascii():
        return word
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


@functools.lru_cache(maxsize=8)
def _analysis(langs: tuple[str, ...]) -> _Analysis:
    return _Analysis(langs)


class _Terms(set[str]):
    """The index terms a query matched; a word of a snippet matches when one of its stems is here."""

    def __init__(self, analysis: _Analysis) -> None:
        super().__init__()
        self.analysis = analysis
        self.known: dict[str, bool] = {}  # word -> matches (a snippet asks about every word it shows)

    def __contains__(self, word: object) -> bool:
        if not isinstance(word, str):
            return False
        got = self.known.get(word)
        if got is None:
            got = set.__contains__(self, word)
            if not got:
                for stem in self.analysis.stems(word):
                    if set.__contains__(self, stem):
                        got = True
                        break
            self.known[word] = got
        return got


K1, B, AVGDL = 1.2, 0.75, 40.0  # BM25 parameters; AVGDL: a fixed typical length, in words


class _Words(fields.TEXT):
    """A TEXT field that counts words with one regex (4× less CPU than the token pipeline), keeps no
    positions, and stores each posting's BM25 term weight, length-normalised at index time, so a query
    never looks up document lengths (that lookup was two thirds of the query time). Words are indexed
    as their stems in the field's languages (``langs``, pickled with the index's schema)."""

    langs: tuple[str, ...] = DEFAULT_LANGUAGES

    def index(self, value: Any, **kwargs: Any) -> Generator[tuple[bytes, int, float | int, bytes], Any, None]:
        analysis = _analysis(self.langs)
        words = analysis.words(value)
        norm = K1 * (1 - B + B * len(words) / AVGDL)
        terms: Counter[str] = Counter()
        for word, freq in Counter(words).items():
            for stem in analysis.stems(word):
                terms[stem] += freq
        for term, freq in terms.items():
            yield term.encode("utf-8"), freq, freq * (K1 + 1) / (freq + norm), pack_uint(freq)


class _BM25(scoring.WeightingModel):
    """BM25: the stored weight (term frequency saturated and length-normalised at index time) times
    the term's BM25 idf. Supports Whoosh's block-quality skipping."""

    def scorer(self, searcher: Any, fieldname: str, text: Any, qf: int = 1) -> Any:
        parent = searcher.get_parent()
        n = parent.doc_count_all()
        df = parent.doc_frequency(fieldname, text)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return scoring.TF_IDFScorer(searcher.term_info(fieldname, text).max_weight(), idf)


def _schema(langs: tuple[str, ...] = DEFAULT_LANGUAGES) -> fields.Schema:
    analyzer = RegexTokenizer(r"\w+") | LowercaseFilter() | StopFilter(stoplist=STOP, minsize=1)
    text = _Words(analyzer=analyzer, phrase=False)
    text.langs = langs
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
        text=text,
        loc=fields.STORED,  # [byte start, byte end, line start, line end]
    )


# ------------------------------------------------------------------ documents


def _entry_doc(located: Located) -> dict[str, Any]:
    e = located.entry
    text = e.summary if e.body is None else f"{e.summary}\n{e.summary}\n{e.body}"
    return {
        "key": f"e:{e.id}",
        "kind": "entry",
        "path": located.file,
        "agent": e.agent,
        "channel": e.channel,
        "type": e.type,
        "status": "",
        "ts": e.ts,
        "heading": "",
        "text": text,
        "loc": [located.offset, located.end_offset, located.line_start, located.line_end],
    }


def _note_type(rel: str, props: dict[str, Any]) -> str:
    parts = rel.split("/")
    by_folder = {
        "decisions": "decision",
        "state": "state",
        "handoff": "handoff",
        "memory": "memory",
        "archive": "archive",
    }
    if parts[0] in by_folder:
        return by_folder[parts[0]]
    if parts[0] == "agents" and len(parts) == 3:
        stem = parts[2][:-3].lower()
        return {"identity": "identity", "checkpoint": "checkpoint", "memory": "memory"}.get(
            stem, "bank" if "bank" in stem else "note"
        )
    if rel == "USER.md":
        return "memory"
    value = props.get("type")
    return value.lower() if isinstance(value, str) and re.fullmatch(r"[\w-]+", value) else "note"


def _prop(props: dict[str, Any], *names: str) -> str:
    for name in names:
        value = props.get(name)
        if value is not None and not isinstance(value, (dict, list)):
            return str(value)
    return ""


def _note_docs(rel: str, data: bytes, mtime: float) -> list[dict[str, Any]]:
    text = data.decode("utf-8", errors="replace")
    props, parts = sections.split(text)
    parts_dir = rel.split("/")
    agent = (
        _prop(props, "agent", "author") or _prop(props, "name")
        if parts_dir[0] == "agents"
        else _prop(props, "agent", "author")
    )
    if not agent and parts_dir[0] == "agents" and len(parts_dir) >= 3:
        agent = parts_dir[1]
    ts = _prop(props, "ts", "updated", "date", "created") or time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(mtime)
    )
    status = _prop(props, "status").lower()
    note_title = " ".join(x for x in (_prop(props, "id"), _prop(props, "title") or Path(rel).stem) if x)
    base = {
        "kind": "section",
        "path": rel,
        "agent": agent.lower(),
        "channel": "",
        "type": _note_type(rel, props),
        "status": status,
        "ts": ts,
    }
    docs = []
    if not parts:  # only properties: still findable by its title and fields
        docs.append(
            {
                **base,
                "key": f"n:{rel}#0",
                "heading": "",
                "text": note_title,
                "loc": [0, len(data), 1, max(1, text.count("\n"))],
            }
        )
    for i, sec in enumerate(parts):
        docs.append(
            {
                **base,
                "key": f"n:{rel}#{i}",
                "heading": sec.heading,
                "text": f"{note_title}\n{sec.heading}\n{sec.heading}\n{sec.text}",
                "loc": [sec.start, sec.end, sec.line_start, sec.line_end],
            }
        )
    return docs


# ------------------------------------------------------------------ the vault's files


def _is_segment(rel: str) -> bool:
    return rel.startswith("log/") and rel.count("/") == 1 and log.is_segment_name(rel[4:-3])


_LISTINGS: dict[str, tuple[int, list[str], list[tuple[str, str]]]] = {}  # folder -> (mtime_ns,
#   subfolders, [(path, relpath)] of its Markdown files); reused while the folder's mtime is unchanged
SETTLED_NS = 2_000_000_000  # a folder's listing is reused only once its mtime is this old: a file
#   created within the same clock tick as an earlier change would leave the mtime as it was


def _listing(folder: str, root: str) -> tuple[list[str], list[tuple[str, str]]] | None:
    """A folder's subfolders and Markdown files (no dot-names, no symlinks), listed again only when
    the folder's mtime moved: one ``stat`` instead of a ``scandir`` for an unchanged folder."""
    try:
        mtime = os.stat(folder).st_mtime_ns
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    cached = _LISTINGS.get(folder)
    if cached is not None and cached[0] == mtime:
        return cached[1], cached[2]
    try:
        items = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    subfolders: list[str] = []
    notes: list[tuple[str, str]] = []
    for item in items:
        if item.name.startswith("."):
            continue
        try:
            if item.is_dir(follow_symlinks=False):
                subfolders.append(item.path)
            elif item.name.endswith(".md") and item.is_file(follow_symlinks=False):
                notes.append((item.path, item.path[len(root) + 1 :].replace(os.sep, "/")))
        except FileNotFoundError:
            continue
    if time.time_ns() - mtime > SETTLED_NS:
        _LISTINGS[folder] = (mtime, subfolders, notes)
    return subfolders, notes


def _vault_files(vault: Vault) -> dict[str, tuple[int, int]]:
    """Every Markdown file outside dot-folders: relpath -> (size, mtime_ns). A ``stat`` per file
    (an edit in place changes only the file) and per folder (listed again when its mtime moved)."""
    out: dict[str, tuple[int, int]] = {}
    root = str(vault.root)
    stack = [root]
    stat = os.stat
    while stack:
        found = _listing(stack.pop(), root)
        if found is None:
            continue
        stack.extend(found[0])
        for path, rel in found[1]:
            try:
                st = stat(path)
            except (FileNotFoundError, NotADirectoryError):
                continue
            out[rel] = (st.st_size, st.st_mtime_ns)
    return out


# ------------------------------------------------------------------ manifest and index folder


def index_dir(vault: Vault) -> Path:
    return vault.state / INDEX_DIR


_MANIFESTS: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}  # parsed, by file stamp


def _load_manifest(vault: Vault) -> dict[str, Any] | None:
    """The manifest, or None when missing, unreadable or of another schema version. A parsed copy is
    reused while the file's (inode, mtime, size) stays the same; callers get their own copy."""
    path = index_dir(vault) / MANIFEST
    try:
        st = path.stat()
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        cached = _MANIFESTS.get(str(path))
        if cached is not None and cached[0] == stamp:
            return {**cached[1], "files": dict(cached[1]["files"])}
        data = json.loads(path.read_bytes())
    except (FileNotFoundError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("version") != SCHEMA_VERSION
        or not isinstance(data.get("files"), dict)
        or not isinstance(data.get("dir"), str)
    ):
        return None
    _MANIFESTS[str(path)] = (stamp, data)
    return {**data, "files": dict(data["files"])}


def _save_manifest(vault: Vault, manifest: dict[str, Any]) -> None:
    durable.replace(index_dir(vault) / MANIFEST, json.dumps(manifest).encode(), durable=False)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _open(vault: Vault, manifest: dict[str, Any]) -> Any:
    return index.open_dir(str(index_dir(vault) / manifest["dir"]))


# ------------------------------------------------------------------ indexing


_THREAD = threading.RLock()  # one search or refresh at a time per process (MCP calls, a watcher thread)
T = TypeVar("T", bound=Callable[..., Any])


def _serialised(fn: T) -> T:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _THREAD:
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _tail_mark(data: bytes, end: int) -> str:
    return data[max(0, end - 256) : end].hex()


def _add(writer: Any) -> Callable[..., None]:
    """``writer.add_document`` leaving out empty fields (no posting for an empty status or channel)."""

    def add(**doc: Any) -> None:
        writer.add_document(**{k: v for k, v in doc.items() if v != ""})

    return add


def _index_segment(
    rel: str, data: bytes, offset: int, line: int, add: Callable[..., None]
) -> tuple[int, int, int]:
    """Add the entries of ``data`` (bytes of segment ``rel`` from ``offset``); return (entries added,
    end offset, end line) where the end excludes a torn tail still being written."""
    from . import segments

    result = segments.scan(data, rel, offset=offset, line=line)
    for located in result.entries:
        add(**_entry_doc(located))
    return len(result.entries), result.end_offset, result.end_line


def _plan(
    vault: Vault, manifest: dict[str, Any], files: dict[str, tuple[int, int]]
) -> tuple[list[str], list[str]]:
    """(changed or new files, removed files) according to size and mtime."""
    known: dict[str, Any] = manifest["files"]
    changed = [
        rel
        for rel, (size, mtime) in files.items()
        if rel not in known or known[rel]["size"] != size or known[rel]["mtime"] != mtime
    ]
    removed = [rel for rel in known if rel not in files]
    return sorted(changed), sorted(removed)


def _apply(vault: Vault, manifest: dict[str, Any], changed: list[str], removed: list[str]) -> tuple[int, int]:
    """Index the changes into the current index (caller holds the index lock). Returns (files
    reindexed, documents added)."""
    known: dict[str, Any] = manifest["files"]
    ix = _open(vault, manifest)
    writer = ix.writer()
    added = 0
    touched = 0
    try:
        for rel in removed:
            writer.delete_by_term("path", rel)
            del known[rel]
        for rel in changed:
            path = vault.root / rel
            old = known.get(rel)
            if _is_segment(rel) and old is not None:
                appended = _appended(rel, path, old, writer)
                if appended is not None:  # read only the new tail of an append-only segment
                    known[rel] = appended[0]
                    added += appended[1]
                    touched += 1
                    continue
            try:
                data = path.read_bytes()
                st = path.stat()
            except FileNotFoundError:
                if rel in known:
                    writer.delete_by_term("path", rel)
                    del known[rel]
                continue
            digest = hashlib.sha256(data).hexdigest()
            record = {"size": len(data), "mtime": st.st_mtime_ns, "sha": digest}
            if old is not None and old.get("sha") == digest:
                known[rel] = {**old, **record}  # touched, not changed
                continue
            touched += 1
            if _is_segment(rel):
                writer.delete_by_term("path", rel)
                n, end, line = _index_segment(rel, data, 0, 1, _add(writer))
                record.update(offset=end, line=line, tail=_tail_mark(data, end))
                added += n
            else:
                writer.delete_by_term("path", rel)
                for doc in _note_docs(rel, data, st.st_mtime_ns / 1e9):
                    _add(writer)(**doc)
                    added += 1
            known[rel] = record
        writer.commit()
    except BaseException:
        writer.cancel()
        raise
    manifest["updated"] = _now()
    return touched, added


def _appended(rel: str, path: Path, old: dict[str, Any], writer: Any) -> tuple[dict[str, Any], int] | None:
    """Index what was appended to a segment since ``old`` (its manifest record), reading only the
    new bytes and the 256 before them; None when the segment changed otherwise (reindex it whole)."""
    offset = old.get("offset", 0)
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if offset <= 0 or st.st_size < offset or st.st_size == old["size"]:
                return None
            f.seek(max(0, offset - 256))
            head = f.read(min(offset, 256))
            rest = f.read()
    except FileNotFoundError:
        return None
    if head.hex() != old.get("tail"):
        return None
    # duplicates (a crash between the commit and the manifest) are dropped when searching
    n, end, line = _index_segment(rel, rest, offset, old["line"], _add(writer))
    buf = head + rest
    base = offset - len(head)
    record = {
        "size": offset + len(rest),
        "mtime": st.st_mtime_ns,
        "sha": None,
        "offset": end,
        "line": line,
        "tail": buf[max(0, end - 256 - base) : end - base].hex(),
    }
    return record, n


Job = tuple[str, int, int, int]  # (relpath, start byte, end byte, line at start)


def _plan_jobs(
    root: Path, files: dict[str, tuple[int, int]], parts: int
) -> tuple[list[list[Job]], dict[str, dict[str, Any]]]:
    """Read every file once, a block at a time (its sha256 for the manifest; flat memory however large
    the vault), and deal the work into ``parts`` lists of similar size; a large segment is cut at entry
    boundaries into jobs of at most MAX_JOB_BYTES, which each process reads back from the file."""
    records: dict[str, dict[str, Any]] = {}
    jobs: list[Job] = []
    for rel in sorted(files):
        try:
            f = open(root / rel, "rb")  # noqa: SIM115 (closed below)
        except FileNotFoundError:
            continue
        with f:
            st = os.fstat(f.fileno())
            chunk = min(MAX_JOB_BYTES, max(CHUNK_BYTES, st.st_size // (2 * parts) + 1))
            whole = not _is_segment(rel) or (parts == 1 and st.st_size <= MAX_JOB_BYTES)
            sha = hashlib.sha256()
            begin, line, pos = 0, 1, 0  # the current job's start and line; bytes read so far
            pending = b""  # bytes from ``begin`` not yet dealt into a job
            marker = b"\n" + entries_begin()
            while block := f.read(1 << 20):
                sha.update(block)
                pos += len(block)
                if whole:
                    continue
                pending += block
                while len(pending) > chunk:
                    cut = pending.find(marker, chunk - 1)
                    if cut < 0:
                        break  # (no entry boundary yet: read on)
                    jobs.append((rel, begin, begin + cut + 1, line))
                    line += pending.count(b"\n", 0, cut + 1)
                    begin += cut + 1
                    pending = pending[cut + 1 :]
            jobs.append((rel, begin, pos, line))
        records[rel] = {"size": pos, "mtime": st.st_mtime_ns, "sha": sha.hexdigest()}
    buckets: list[list[Job]] = [[] for _ in range(parts)]
    weights = [0] * parts
    for job in sorted(jobs, key=lambda j: j[2] - j[1], reverse=True):
        k = weights.index(min(weights))
        buckets[k].append(job)
        weights[k] += job[2] - job[1]
    for bucket in buckets:  # each process reads its jobs in file order
        bucket.sort(key=lambda j: (j[0], j[1]))
    return buckets, records


def _read_range(root: Path, rel: str, begin: int, stop: int) -> bytes:
    with open(root / rel, "rb") as f:
        f.seek(begin)
        return f.read(stop - begin)


def entries_begin() -> bytes:
    from .entries import BEGIN_PREFIX

    return BEGIN_PREFIX.encode()


def _build_part(
    folder: str, jobs: list[Job], root: Path, mtimes: dict[str, int], progress: Progress | None = None
) -> tuple[Any, dict[tuple[str, int], tuple[int, int]]]:
    """Index ``jobs`` into one new Whoosh segment (no lock: the parent holds the index's lock and
    commits the segments together). Returns the segment and each job's (end offset, end line).
    ``progress`` sees this part's share (the parts are dealt to be of similar size)."""
    from whoosh.writing import SegmentWriter

    ix = index.open_dir(folder)
    writer: Any = SegmentWriter(ix, _lk=False, limitmb=LIMIT_MB)  # type: ignore[no-untyped-call]
    ends: dict[tuple[str, int], tuple[int, int]] = {}
    add = _add(writer)
    total = sum(j[2] - j[1] for j in jobs) or 1
    done = 0
    try:
        for rel, begin, stop, line in jobs:
            data = _read_range(root, rel, begin, stop)  # (the bytes the parent hashed: files only grow
            if _is_segment(rel):  # or are replaced; a refresh catches either)
                _n, end, end_line = _index_segment(rel, data, begin, line, add)
                ends[(rel, begin)] = (end, end_line)
            else:
                for doc in _note_docs(rel, data, mtimes[rel] / 1e9):
                    add(**doc)
            done += stop - begin
            if progress is not None:
                progress(done, total)
        segment = writer._finalize_segment() if writer._added else None
        if segment is None:
            writer._close_segment()
    except BaseException:
        writer.cancel()
        raise
    return segment, ends


def _child(folder: str, jobs: list[Job], root: Path, mtimes: dict[str, int], out: Any) -> None:
    try:
        out.send(("ok", _build_part(folder, jobs, root, mtimes)))
    except BaseException as err:  # reported to the parent, which cancels the build
        out.send(("error", f"{type(err).__name__}: {err}"))
    finally:
        out.close()


def _build(
    vault: Vault, progress: Progress | None, langs: tuple[str, ...] = DEFAULT_LANGUAGES
) -> dict[str, Any]:
    """A fresh index of the whole vault in a new folder; returns its manifest (not yet saved).

    On a large vault the work is shared between this process and one child per further core, each
    writing its own Whoosh segment (so parsing entries runs in parallel too, unlike Whoosh's own
    multiprocess writer, which parses everything in the parent); the parent commits them together.
    """
    import multiprocessing

    files = _vault_files(vault)
    name = f"ix-{secrets.token_hex(4)}"
    folder = index_dir(vault) / name
    folder.mkdir(parents=True, exist_ok=True)
    ix = index.create_in(str(folder), _schema(langs))
    total_bytes = sum(size for size, _ in files.values())
    methods = multiprocessing.get_all_start_methods()
    parts = min(os.cpu_count() or 1, 4) if total_bytes > PARALLEL_BYTES and "fork" in methods else 1
    buckets, records = _plan_jobs(vault.root, files, parts)
    mtimes = {rel: r["mtime"] for rel, r in records.items()}
    writer: Any = ix.writer()  # holds Whoosh's own lock; commits the parts' segments
    children: list[tuple[Any, Any]] = []
    try:
        ctx = multiprocessing.get_context("fork") if parts > 1 else None
        for jobs in buckets[1:]:
            assert ctx is not None
            receive, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(str(folder), jobs, vault.root, mtimes, send), daemon=True)
            proc.start()
            send.close()
            children.append((proc, receive))
        own = _build_part(str(folder), buckets[0], vault.root, mtimes, progress)
        results = [own]
        for proc, receive in children:
            status, value = receive.recv()
            proc.join()
            if status != "ok":
                raise RuntimeError(f"an index build process failed: {value}")
            results.append(value)
        segments_ = [seg for seg, _ in results if seg is not None]
        ends: dict[tuple[str, int], tuple[int, int]] = {}
        for _, part_ends in results:
            ends.update(part_ends)
        writer._close_segment()
        writer._commit_toc(segments_)
        writer._finish()
    except BaseException:
        for proc, _ in children:
            proc.kill()
        writer.cancel()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    for rel, record in records.items():
        if _is_segment(rel):
            last = max(begin for (r, begin) in ends if r == rel)
            end, line = ends[(rel, last)]
            record.update(
                offset=end, line=line, tail=_read_range(vault.root, rel, max(0, end - 256), end).hex()
            )
    if progress is not None:
        progress(total_bytes, total_bytes)
    return {
        "version": SCHEMA_VERSION,
        "dir": name,
        "files": records,
        "built": _now(),
        "updated": _now(),
        "languages": list(langs),
    }


def _swap_in(vault: Vault, manifest: dict[str, Any]) -> None:
    _save_manifest(vault, manifest)
    for child in index_dir(vault).iterdir():  # earlier folders (readers that hold one keep their fds)
        if child.is_dir() and child.name.startswith("ix-") and child.name != manifest["dir"]:
            shutil.rmtree(child, ignore_errors=True)


def _languages(manifest: dict[str, Any] | None) -> tuple[str, ...]:
    value = manifest.get("languages") if manifest is not None else None
    return tuple(value) if isinstance(value, list) and value else DEFAULT_LANGUAGES


@_serialised
def rebuild(
    vault: Vault, *, progress: Progress | None = None, languages: tuple[str, ...] | None = None
) -> RefreshStats:
    """Build the index from scratch (``nexus index rebuild``), in ``languages`` (default: those the
    index had, else English)."""
    started = time.perf_counter()
    with exclusive(vault.lock("index")):
        langs = check_languages(languages) if languages else _languages(_load_manifest(vault))
        manifest = _build(vault, progress, langs)
        _swap_in(vault, manifest)
    _CACHE.pop(str(vault.root), None)
    n = len(manifest["files"])
    return RefreshStats(n, n, 0, _doc_count(vault), True, time.perf_counter() - started)


@_serialised
def refresh(
    vault: Vault, *, progress: Progress | None = None, languages: tuple[str, ...] | None = None
) -> RefreshStats:
    """Bring the index up to date with the vault: index what changed since the last refresh; rebuild
    a missing, corrupt or outdated index, or one in other ``languages`` than asked (None: keep the
    index's own, English for a new one). Cheap when nothing changed (a stat per file)."""
    started = time.perf_counter()
    files = _vault_files(vault)
    manifest = _load_manifest(vault)
    langs = check_languages(languages) if languages else None
    if manifest is not None and langs is not None and _languages(manifest) != langs:
        manifest = None  # asked for other languages: rebuild
        with exclusive(vault.lock("index")):
            theirs = _load_manifest(vault)
            if theirs is None or _languages(theirs) != langs:
                built = _build(vault, progress, langs)
                _swap_in(vault, built)
                _CACHE.pop(str(vault.root), None)
                n = len(built["files"])
                return RefreshStats(n, n, 0, _doc_count(vault), True, time.perf_counter() - started)
        manifest = _load_manifest(vault)
    if manifest is not None:
        changed, removed = _plan(vault, manifest, files)
        current = _CACHE.get(str(vault.root))
        if (
            not changed
            and not removed
            and ((current is not None and current[0] == manifest["dir"]) or _usable(vault, manifest))
        ):
            return RefreshStats(len(files), 0, 0, 0, False, time.perf_counter() - started)
    with exclusive(vault.lock("index")):
        manifest = _load_manifest(vault)  # another process may have done the work meanwhile
        if manifest is None or not _usable(vault, manifest):
            manifest = _build(vault, progress, langs or _languages(manifest))
            _swap_in(vault, manifest)
            _CACHE.pop(str(vault.root), None)
            n = len(manifest["files"])
            return RefreshStats(n, n, 0, _doc_count(vault), True, time.perf_counter() - started)
        changed, removed = _plan(vault, manifest, _vault_files(vault))
        if not changed and not removed:
            return RefreshStats(len(files), 0, 0, 0, False, time.perf_counter() - started)
        try:
            touched, added = _apply(vault, manifest, changed, removed)
        except Exception:  # a damaged index: rebuild from the vault
            manifest = _build(vault, progress, _languages(manifest))
            _swap_in(vault, manifest)
            _CACHE.pop(str(vault.root), None)
            n = len(manifest["files"])
            return RefreshStats(n, n, 0, _doc_count(vault), True, time.perf_counter() - started)
        _save_manifest(vault, manifest)
    return RefreshStats(len(files), touched, len(removed), added, False, time.perf_counter() - started)


def _usable(vault: Vault, manifest: dict[str, Any]) -> bool:
    folder = index_dir(vault) / manifest["dir"]
    try:
        return index.exists_in(str(folder))
    except Exception:
        return False


# ------------------------------------------------------------------ reading


_CACHE: dict[str, tuple[str, Any, int, Any]] = {}  # vault root -> (folder, index, generation, searcher)


def _searcher(vault: Vault) -> Any:
    """An up-to-date searcher, reused between searches in one process. Retries while a writer in
    another process is committing (a .toc file may vanish under a reader)."""
    root = str(vault.root)
    for attempt in range(50):
        manifest = _load_manifest(vault)
        if manifest is None:
            refresh(vault)
            continue
        try:
            cached = _CACHE.get(root)
            if cached is not None and cached[0] == manifest["dir"]:
                generation = cached[1].latest_generation()
                if cached[2] == generation:
                    return cached[3]
                searcher = cached[1].searcher(weighting=_BM25())
                _CACHE[root] = (cached[0], cached[1], generation, searcher)
                return searcher
            ix = _open(vault, manifest)
            generation = ix.latest_generation()
            searcher = ix.searcher(weighting=_BM25())
            _CACHE[root] = (manifest["dir"], ix, generation, searcher)
            return searcher
        except FileNotFoundError:
            _CACHE.pop(root, None)
            if attempt >= 2:  # still missing: a file of the index may be gone for good
                _rebuild_if_missing(vault, manifest)
            else:
                time.sleep(0.01 * (attempt + 1))
        except Exception:  # unreadable index: rebuild it
            _CACHE.pop(root, None)
            with exclusive(vault.lock("index")):
                current = _load_manifest(vault)
                if current is None or current["dir"] == manifest["dir"]:
                    _swap_in(vault, _build(vault, None, _languages(manifest)))
    raise QueryError("the search index is busy; try again")


def _rebuild_if_missing(vault: Vault, manifest: dict[str, Any]) -> None:
    """Under the index lock (so no writer is committing), open the index once more; a file that is
    still missing was deleted, not replaced: rebuild the index from the vault."""
    with exclusive(vault.lock("index")):
        current = _load_manifest(vault)
        if current is None or current["dir"] != manifest["dir"]:
            return  # another process swapped in a new index meanwhile
        try:
            _open(vault, current).searcher().close()
        except FileNotFoundError:
            _swap_in(vault, _build(vault, None))


def _doc_count(vault: Vault) -> int:
    manifest = _load_manifest(vault)
    if manifest is None:
        return 0
    try:
        return int(_open(vault, manifest).doc_count())
    except Exception:
        return 0


# ------------------------------------------------------------------ queries

_FIELD_RE = re.compile(r"(?:(?<=^)|(?<=[\s(]))([A-Za-z_]\w*):(?=\S)")
_PHRASE_RE = re.compile(r'"([^"]*)"')
_TIME_RE = re.compile(r"(\d{4}-\d\d-\d\d)(?:[T ](\d\d:\d\d)(?::(\d\d))?Z?)?")


def _check_syntax(text: str) -> None:
    if not text.strip():
        raise QueryError("the query is empty")
    if text.count('"') % 2:
        raise QueryError(f'unbalanced quote in query {text!r}: close the phrase with "')
    depth = 0
    for ch in _PHRASE_RE.sub("", text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            raise QueryError(f"unbalanced parentheses in query {text!r}: a ) closes nothing")
    if depth:
        raise QueryError(f"unbalanced parentheses in query {text!r}: a ( is never closed")
    for name in _FIELD_RE.findall(_PHRASE_RE.sub("", text)):
        if name not in QUERY_FIELDS:
            raise QueryError(f"unknown field {name!r} in query; fields: {', '.join(QUERY_FIELDS)}")
    words = _PHRASE_RE.sub("x", text).split()
    ops = {"AND", "OR", "NOT", "ANDNOT", "ANDMAYBE"}
    if words and (words[-1] in ops or words[0] in ops - {"NOT"}):
        raise QueryError(
            f"query {text!r} starts or ends with the operator {words[0] if words[0] in ops else words[-1]}"
        )


def _word(field: str, word: str, analysis: _Analysis, boost: float = 1.0) -> Any:
    """A query word as the index holds it: its stem, or an OR of its stems in several languages."""
    if field != "text":
        return query.Term(field, word, boost=boost)
    stems = analysis.stems(word)
    if len(stems) == 1:
        return query.Term(field, stems[0], boost=boost)
    return query.Or([query.Term(field, s) for s in stems], boost=boost)


def _rewrite(q: Any, langs: tuple[str, ...] = DEFAULT_LANGUAGES) -> Any:
    """Words become their stems; phrases an AND of their words (the index keeps no positions;
    phrases are checked against the text later)."""
    analysis = _analysis(langs)
    if isinstance(q, query.Phrase):
        words = [w for w in q.words if w]
        if not words:
            return query.NullQuery
        terms = [_word(q.fieldname, w, analysis) for w in words]
        return terms[0] if len(terms) == 1 else query.And(terms)
    if type(q) is query.Term:
        return _word(q.fieldname, q.text, analysis, q.boost)
    if isinstance(q, query.CompoundQuery):
        return q.__class__([_rewrite(sub, langs) for sub in q.subqueries], boost=q.boost)
    if isinstance(q, query.Not):
        return query.Not(_rewrite(q.query, langs))
    if hasattr(q, "children") and hasattr(q, "a") and hasattr(q, "b"):
        return q.__class__(_rewrite(q.a, langs), _rewrite(q.b, langs))
    return q


_PLAIN_RE = re.compile(r"[^\W_]\w*(?:\s+[^\W_]\w*)*")  # words only: no syntax at all
_OPERATORS = frozenset({"AND", "OR", "NOT", "ANDNOT", "ANDMAYBE", "TO"})


def is_plain(text: str) -> bool:
    """Words only, no query syntax: answered with every-word matches first, then partial ones."""
    plain = text.strip()
    return bool(_PLAIN_RE.fullmatch(plain)) and not _OPERATORS.intersection(plain.split())


def parse_query(text: str, langs: tuple[str, ...] = DEFAULT_LANGUAGES) -> tuple[Any, list[re.Pattern[str]]]:
    """A Whoosh query and the phrases every hit must contain (checked against the text)."""
    if is_plain(text):
        analysis = _analysis(langs)
        words = analysis.words(text.strip())  # what the parser makes of words alone
        if words:  # an AND of their terms (~0.5 ms less per query than running the parser)
            terms = [_word("text", w, analysis) for w in words]
            return (terms[0] if len(terms) == 1 else query.And(terms)), []
    _check_syntax(text)
    try:
        parsed = _PARSER.parse(text)
    except Exception as err:  # any parser failure is the user's syntax
        raise QueryError(f"cannot parse query {text!r}: {err}") from None
    phrases: list[re.Pattern[str]] = []
    simple = not re.search(r"\b(OR|NOT|ANDNOT)\b|(^|\s)-", _PHRASE_RE.sub("", text))
    if simple:
        for raw in _PHRASE_RE.findall(text):
            words = WORD_RE.findall(raw.lower())
            if len(words) > 1:
                phrases.append(re.compile(r"\b" + r"\W+".join(map(re.escape, words)) + r"\b", re.IGNORECASE))
    return _rewrite(parsed, langs), phrases


_SCHEMA = _schema()
_PARSER = QueryParser("text", _SCHEMA)


def _when(value: str | None, flag: str) -> str | None:
    if value is None:
        return None
    m = re.fullmatch(r"(\d+)([mhd])", value.strip())
    if m:
        seconds = int(m.group(1)) * {"m": 60, "h": 3600, "d": 86400}[m.group(2)]
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds))
    m = _TIME_RE.fullmatch(value.strip())
    if not m:
        from .errors import InputError

        raise InputError(
            f"{flag} {value!r}: use a UTC time like 2026-11-30 or 2026-11-30T04:00, "
            "or an age like 30m, 12h, 2d"
        )
    return f"{m.group(1)}T{m.group(2) or '00:00'}:{m.group(3) or '00'}Z"


# ------------------------------------------------------------------ searching


@_serialised
def search(
    vault: Vault,
    text: str,
    *,
    agent: str | None = None,
    type: str | None = None,
    channel: str | None = None,
    since: str | None = None,
    until: str | None = None,
    path: str | None = None,
    limit: int = 10,
    progress: Progress | None = None,
    fresh: bool = True,
    languages: tuple[str, ...] | None = None,
) -> list[Hit]:
    """The best ``limit`` hits for ``text`` (Whoosh query syntax: fields, "phrases", prefix*, AND OR
    NOT, parentheses) over the vault as it is now, with provenance. Plain words rank the hits that
    match all of them first, then partial matches. ``languages``: the stemming languages the index
    must have (None: whatever it has). ``fresh=False`` skips the freshness check (only for measuring
    what a watcher already indexed)."""
    langs = check_languages(languages) if languages else None
    if not is_plain(text):
        _check_syntax(text)  # before any indexing: a typo costs nothing
    start, end = _when(since, "--since"), _when(until, "--until")
    filters = tuple(
        (name, value.lower())
        for name, value in (("agent", agent), ("type", type), ("channel", channel))
        if value
    )
    if path and not any(ch in path for ch in "*?["):
        filters += (("path", path),)
        path = None
    if limit <= 0:
        return []
    if fresh:
        refresh(vault, progress=progress, languages=langs)
    searcher = _searcher(vault)
    q, phrases = parse_query(text, getattr(searcher.schema["text"], "langs", DEFAULT_LANGUAGES))
    terms = _highlight_terms(
        q, searcher, _analysis(getattr(searcher.schema["text"], "langs", DEFAULT_LANGUAGES))
    )
    groups = _groups(q.normalize()) if FAST else None
    partial = is_plain(text)
    dead = _superseded(vault)
    reader = _Reader(vault)
    k = limit + 20
    try:
        while True:
            try:
                allow = _allowed(searcher, filters) if filters else None
                if groups is not None:
                    rows = _top_words(searcher, groups, allow, k, partial)
                else:
                    rows = [(1, r.score, r.docnum) for r in searcher.search(q, limit=k, filter=allow)]
                hits: list[Hit] = []
                for score, stored in _ranked(searcher, rows, path, start, end, dead):
                    hit = _hit(vault, reader, stored, score, terms, phrases, dead)
                    if hit is not None:
                        hits.append(hit)
                        if len(hits) >= limit:
                            break
            except FileNotFoundError:  # a writer in another process committed under us
                _CACHE.pop(str(vault.root), None)
                searcher = _searcher(vault)
                continue
            if len(hits) >= limit or len(rows) < k:
                return _replacements_first(hits, dead)
            k *= 4
    finally:
        reader.close()


class _Dead:
    """The superseded decisions, as search needs them: which entry or note is about which decision,
    and what replaced each superseded one."""

    def __init__(self, decisions: list[Any]) -> None:
        self.by_entry = {d.entry: d.id for d in decisions if d.entry}
        self.by_path = {d.path: d.id for d in decisions}
        self.replaced_by = {d.id: d.superseded_by or "" for d in decisions if d.status == "superseded"}

    def about(self, key: str, path: str) -> str | None:
        """The decision a document (``e:ID`` or ``n:PATH#N`` key) is about, if any."""
        if key.startswith("e:"):
            return self.by_entry.get(key[2:])
        return self.by_path.get(path)

    def superseded_by(self, key: str, path: str) -> str | None:
        """The decision that replaced the one this document is about ('' when unknown), or None."""
        did = self.about(key, path)
        return self.replaced_by.get(did) if did else None


_DEAD: dict[str, tuple[int, _Dead]] = {}  # vault root -> (decisions/ folder mtime, what it holds)


def _superseded(vault: Vault) -> _Dead:
    """The decisions as search needs them, reused while the ``decisions/`` folder's mtime stays the
    same and is older than the clock's resolution (notes are only ever added or replaced by rename,
    which moves that mtime)."""
    from . import decisions

    try:
        mtime = os.stat(decisions.folder(vault)).st_mtime_ns
    except OSError:
        return _Dead([])
    cached = _DEAD.get(str(vault.root))
    if cached is not None and cached[0] == mtime:
        return cached[1]
    try:
        dead = _Dead(decisions.all_decisions(vault))
    except Exception:  # the register is best effort here; verify names a damaged note
        return _Dead([])
    if time.time_ns() - mtime > SETTLED_NS:
        _DEAD[str(vault.root)] = (mtime, dead)
    return dead


def _replacements_first(hits: list[Hit], dead: _Dead) -> list[Hit]:
    """A hit about a superseded decision moves below the first hit about the decision that replaced
    it, when that one is among the hits (scaling its score down usually did it already)."""
    out = list(hits)
    for hit in hits:
        if not hit.superseded_by:
            continue
        chain = {hit.superseded_by}
        nxt = dead.replaced_by.get(hit.superseded_by)
        while nxt and nxt not in chain:  # D-0001 → D-0002 → D-0003: any live successor counts
            chain.add(nxt)
            nxt = dead.replaced_by.get(nxt)
        mine = out.index(hit)
        later = [
            i
            for i, h in enumerate(out)
            if i > mine and dead.about(f"e:{h.entry_id}" if h.entry_id else "n:", h.path) in chain
        ]
        if later:
            out.insert(later[0], out.pop(mine))
    return out


Row = tuple[int, float, int]  # (words matched, score, docnum)


def _ranked(
    searcher: Any, rows: list[Row], path: str | None, start: str | None, end: str | None, dead: _Dead
) -> Iterator[tuple[float, dict[str, Any]]]:
    """(score, stored fields) of ``rows`` (words matched, score, docnum; best first) in final order:
    the first document of each key, within the path and time filters, a hit about a superseded
    decision with its score scaled down (among hits matching as many words). Stored fields are read
    lazily: a document is yielded once no later row can outrank it (scaling only lowers a score), so
    the caller reads as many as it uses."""
    import heapq

    pending: list[tuple[int, float, int, dict[str, Any]]] = []  # (-matched, -score, row, stored)
    seen: set[str] = set()
    for i, (matched, raw, doc) in enumerate(rows):
        while pending and (-pending[0][0], -pending[0][1]) >= (matched, raw):
            _, neg, _, stored = heapq.heappop(pending)
            yield -neg, stored
        stored = searcher.stored_fields(doc)
        if stored["key"] in seen:
            continue
        seen.add(stored["key"])
        if path and not fnmatch.fnmatchcase(stored["path"], path):
            continue
        if (start and stored.get("ts", "") < start) or (end and stored.get("ts", "") > end):
            continue
        old = (
            stored.get("status", "") == "superseded"
            or dead.superseded_by(stored["key"], stored["path"]) is not None
        )
        score = raw * SUPERSEDED_FACTOR if old else raw
        heapq.heappush(pending, (-matched, -score, i, stored))
    while pending:
        _, neg, _, stored = heapq.heappop(pending)
        yield -neg, stored


Group = list[tuple[str, str]]  # one query word: its (field, term) alternatives (stems per language)


def _groups(q: Any) -> list[Group] | None:
    """The words of a query that is a plain AND of words (each a term or an OR of its stems), else
    None (the query goes to Whoosh's own matcher)."""
    leaves = list(q.subqueries) if type(q) is query.And else [q]
    out: list[Group] = []
    for leaf in leaves:
        alts = list(leaf.subqueries) if type(leaf) is query.Or else [leaf]
        if leaf.boost != 1.0 or not all(type(t) is query.Term and t.boost == 1.0 for t in alts):
            return None
        group = [(t.fieldname, t.text) for t in alts]
        if group not in out:
            out.append(group)
    return out or None


_POSTINGS: dict[tuple[str, str, str], dict[int, float]] = {}  # (segment id, field, word) -> postings
_POSTINGS_HELD = [0]
POSTINGS_BUDGET = 400_000  # postings kept decoded per process (~30 MB): the most recently used terms


def _postings(leaf: Any, field: str, word: str) -> dict[int, float] | None:
    """docnum -> stored weight for one term in one segment, deleted documents included (callers
    drop them); None when the term is absent. A Whoosh segment's postings never change, so decoded
    lists are kept by segment id, term and field while the budget allows."""
    segment = leaf.segment() if hasattr(leaf, "segment") else None
    key = (segment.segment_id(), field, word) if segment is not None else None
    if key is not None and (cached := _POSTINGS.get(key)) is not None:
        _POSTINGS[key] = _POSTINGS.pop(key)  # (most recently used last)
        return cached
    try:
        m = leaf.postings(field, word)
    except Exception:  # TermNotFound
        return None
    if type(m).__name__ == "FilterMatcher" and hasattr(m, "child"):  # deletions: decode underneath
        m = m.child
    out: dict[int, float] = {}
    if hasattr(m, "_read_data") and hasattr(m, "_next_block") and not getattr(m, "_byteids", True):
        while m.is_active():  # a whole block at a time; ids are delta-encoded
            if m._data is None:
                m._read_data()
            m._read_weights()
            out.update(zip(itertools.accumulate(m._data[0]), m._weights, strict=False))
            m._next_block()
    else:  # another matcher: posting by posting
        out.update(m.items_as("weight"))
    if key is not None and len(out) < POSTINGS_BUDGET // 4:
        _POSTINGS[key] = out
        _POSTINGS_HELD[0] += len(out)
        while _POSTINGS_HELD[0] > POSTINGS_BUDGET:
            _POSTINGS_HELD[0] -= len(_POSTINGS.pop(next(iter(_POSTINGS))))
    return out


Posts = tuple[dict[int, float], float]  # docnum -> stored weight, and the factor (idf) scoring them


def _group_postings(leaf: Any, group: Group, idfs: dict[tuple[str, str], float]) -> Posts:
    """One query word in one segment: the postings of its stem, scored by its idf (no copy: the
    decoded postings are shared), or, for a word with several stems, the best of them per document
    (different stems of one word are never counted twice)."""
    found = [(got, idfs[term]) for term in group if (got := _postings(leaf, *term))]
    if len(found) <= 1:
        return found[0] if found else ({}, 0.0)
    out: dict[int, float] = {}
    for got, idf in found:
        for d, w in got.items():
            sc = w * idf
            if sc > out.get(d, 0.0):
                out[d] = sc
    return out, 1.0


def _top_words(
    searcher: Any, groups: list[Group], allow: set[int] | None, k: int, partial: bool
) -> list[Row]:
    """BM25 top ``k`` for words (``groups``), scoring whole posting blocks at once (the same scores
    as the ``_BM25`` weighting, several times faster than Whoosh's per-posting collector). Documents
    matching every word come first; with ``partial``, documents matching fewer follow, most words
    and then best score first (computed only when fewer than ``k`` match them all)."""
    import heapq

    n = searcher.doc_count_all()
    idfs: dict[tuple[str, str], float] = {}
    df_of: list[int] = []
    for group in groups:
        total_df = 0
        for term in group:
            df = searcher.doc_frequency(*term)
            total_df += df
            idfs[term] = math.log(1 + (n - df + 0.5) / (df + 0.5))
        df_of.append(total_df)
    total = len(groups)
    if not partial and not all(df_of):
        return []
    order = sorted(range(total), key=lambda gi: df_of[gi])
    scored: list[tuple[int, float, int]] = []  # (words matched, score, -docnum)
    leaves = []
    for leaf, base in searcher.reader().leaf_readers():
        posts = [_group_postings(leaf, groups[gi], idfs) for gi in order]
        sources = [groups[gi] for gi in order]
        deleted = leaf.deleted_docs_set if leaf.has_deletions() else ()
        got, f = posts[0]
        acc = (
            {d: w * f for d, w in got.items() if d not in deleted}
            if deleted
            else {d: w * f for d, w in got.items()}
        )
        for got, f in posts[1:]:
            if not acc:
                break
            acc = {d: s + got[d] * f for d, s in acc.items() if d in got}
        leaves.append((leaf, base, posts, sources, deleted, acc))
        if acc:  # ties go to the earlier document, as in Whoosh
            if allow is not None:
                scored.extend((total, sc, -d - base) for d, sc in acc.items() if d + base in allow)
            else:
                scored.extend(zip([total] * len(acc), acc.values(), [-d - base for d in acc], strict=True))
    if partial and total > 1 and len(scored) < k:
        scored.extend(_partial_rows(leaves, total, allow, k))
    return [(m, sc, -neg) for m, sc, neg in heapq.nlargest(k, scored)]


_BY_WEIGHT: dict[tuple[str, str, str], list[tuple[int, float]]] = {}  # a term's postings, best first
_BY_WEIGHT_HELD = [0]


def _by_weight(leaf: Any, group: Group, got: dict[int, float]) -> list[tuple[int, float]]:
    """A word's postings in one segment, heaviest first; kept per Whoosh segment and term like the
    decoded postings (a segment never changes), within the same budget."""
    from operator import itemgetter

    segment = leaf.segment() if hasattr(leaf, "segment") and len(group) == 1 else None
    key = (segment.segment_id(), *group[0]) if segment is not None else None
    if key is not None and (cached := _BY_WEIGHT.get(key)) is not None:
        return cached
    ranked = sorted(got.items(), key=itemgetter(1), reverse=True)
    if key is not None and len(ranked) < POSTINGS_BUDGET // 4:
        _BY_WEIGHT[key] = ranked
        _BY_WEIGHT_HELD[0] += len(ranked)
        while _BY_WEIGHT_HELD[0] > POSTINGS_BUDGET:
            _BY_WEIGHT_HELD[0] -= len(_BY_WEIGHT.pop(next(iter(_BY_WEIGHT))))
    return ranked


def _partial_rows(
    leaves: list[tuple[Any, int, list[Posts], list[Group], Any, dict[int, float]]],
    total: int,
    allow: set[int] | None,
    k: int,
) -> list[tuple[int, float, int]]:
    """Documents matching some but not all words: (words matched, score, -docnum), at most the best
    ``k`` of each segment."""
    import heapq

    out: list[tuple[int, float, int]] = []
    for leaf, base, posts, sources, deleted, full in leaves:

        def keep(d: int, deleted: Any = deleted, base: int = base, full: dict[int, float] = full) -> bool:
            return d not in full and d not in deleted and (allow is None or d + base in allow)

        if total == 2:  # the common case, without building the union: one word or the other
            for (got, f), group in zip(posts, sources, strict=True):
                rows: list[tuple[int, float, int]] = []
                for d, w in _by_weight(leaf, group, got):  # best first: stop at k
                    if keep(d):
                        rows.append((1, w * f, -d - base))
                        if len(rows) >= k:
                            break
                out.extend(rows)
            continue
        acc: dict[int, list[float]] = {}
        for got, f in posts:  # three words or more: the union, counted
            for d, w in got.items():
                slot = acc.get(d)
                if slot is None:
                    acc[d] = [1, w * f]
                else:
                    slot[0] += 1
                    slot[1] += w * f
        out.extend(heapq.nlargest(k, ((int(m), sc, -d - base) for d, (m, sc) in acc.items() if keep(d))))
    return out


def _allowed(searcher: Any, filters: tuple[tuple[str, str], ...]) -> set[int]:
    """The documents matching every (field, value) filter, as a set Whoosh checks each match against
    (cheaper than intersecting long posting lists per query); cached on the searcher, which is
    replaced whenever the index changes."""
    cache: dict[tuple[tuple[str, str], ...], set[int]] = searcher.__dict__.setdefault("_nexus_allow", {})
    allowed = cache.get(filters)
    if allowed is None:
        allowed = set(searcher.docs_for_query(query.And([query.Term(f, v) for f, v in filters])))
        cache[filters] = allowed
    return allowed


def _highlight_terms(q: Any, searcher: Any, analysis: _Analysis) -> set[str]:
    words = _Terms(analysis)
    text_fields = ("text",)
    try:
        for leaf in q.leaves():
            if getattr(leaf, "fieldname", None) not in text_fields:
                continue
            if isinstance(leaf, query.Prefix):
                for i, term in enumerate(searcher.reader().expand_prefix(leaf.fieldname, leaf.text)):
                    words.add(term.decode("utf-8") if isinstance(term, bytes) else str(term))
                    if i > 50:
                        break
            elif isinstance(leaf, query.Term):
                words.add(str(leaf.text))
    except Exception:  # highlighting is best effort
        pass
    return words


class _Reader:
    """Reads hits' bytes back from the vault, one open file per path."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.files: dict[str, Any] = {}
        self.keys: dict[str, tuple[str, str]] | None = None  # the authors' public keys, read once

    def read(self, rel: str, start: int, end: int) -> bytes | None:
        f = self.files.get(rel)
        if f is None:
            try:
                f = open(self.vault.root / rel, "rb")  # noqa: SIM115 - closed in close()
            except FileNotFoundError:
                return None
            self.files[rel] = f
        f.seek(start)
        return bytes(f.read(end - start))

    def public_keys(self) -> dict[str, tuple[str, str]]:
        if self.keys is None:
            self.keys = _public_keys(self.vault)
        return self.keys

    def close(self) -> None:
        for f in self.files.values():
            f.close()


def _hit(
    vault: Vault,
    reader: _Reader,
    stored: dict[str, Any],
    score: float,
    terms: set[str],
    phrases: list[re.Pattern[str]],
    dead: _Dead,
) -> Hit | None:
    start, end, line_start, line_end = stored["loc"]
    rel = stored["path"]
    data = reader.read(rel, start, end)
    if data is None:
        return None
    note = rel[:-3] if rel.endswith(".md") else rel
    if phrases:  # reject on the raw text before parsing (most candidates of a phrase fail here)
        raw = data.decode("utf-8", errors="replace")
        if any(not p.search(raw) for p in phrases):
            return None
    by = dead.superseded_by(stored["key"], rel)
    if stored["kind"] == "entry":
        from . import segments

        scan = segments.scan(data, rel, offset=start, line=line_start)
        if not scan.entries:
            return None
        located = scan.entries[0]
        e = located.entry
        body = f"{e.summary}\n{e.body or ''}"
        if any(not p.search(body) for p in phrases):
            return None
        return Hit(
            kind="entry",
            path=rel,
            line_start=line_start,
            line_end=line_end,
            link=located.link,
            title=e.summary,
            snippet=_entry_snippet(e.summary, e.body, terms),
            score=round(score, 4),
            entry_id=e.id,
            agent=e.agent,
            time=e.ts,
            type=e.type,
            channel=e.channel,
            verified=_verified(vault, located, reader.public_keys()),
            superseded=by is not None,
            superseded_by=by or None,
        )
    text = data.decode("utf-8", errors="replace")
    if any(not p.search(text) for p in phrases):
        return None
    heading = stored.get("heading", "") or None
    anchor = re.sub(r"[#|^\[\]]", " ", heading).strip() if heading else ""
    status = stored.get("status", "") or None
    superseded = status == "superseded" or by is not None
    return Hit(
        kind="section",
        path=rel,
        line_start=line_start,
        line_end=line_end,
        link=f"[[{note}#{anchor}]]" if anchor else f"[[{note}]]",
        title=heading or Path(rel).stem,
        snippet=_snippet(_section_text(text), terms),
        score=round(score, 4),
        heading=heading,
        agent=stored.get("agent", "") or None,
        time=stored.get("ts", "") or None,
        type=stored.get("type", "") or None,
        status=status,
        superseded=superseded,
        superseded_by=by or None,
    )


def _entry_snippet(summary: str, body: str | None, terms: set[str]) -> str:
    if body and any(m.group(0).lower() in terms for m in WORD_RE.finditer(body)):
        return _snippet(body, terms)
    return _snippet(summary if not body else f"{summary} — {body}", terms)


def _section_text(text: str) -> str:
    """A section without its heading line (the hit shows the heading apart)."""
    first, _, rest = text.partition("\n")
    return rest if first.lstrip().startswith("#") and rest.strip() else text


_LINK_OR_STRONG_RE = re.compile(r"\[\[[^\]]*\]\]|\*\*[^*]+\*\*")


def _snippet(text: str, terms: set[str], width: int = 200) -> str:
    flat = " ".join(text.split())
    # Never bold inside a wikilink (it would break the link) or inside text already bold.
    fenced = [(m.start(), m.end()) for m in _LINK_OR_STRONG_RE.finditer(flat)]
    matches = [
        m
        for m in WORD_RE.finditer(flat)
        if m.group(0).lower() in terms and not any(a <= m.start() < b for a, b in fenced)
    ]
    if not matches:
        return flat[:width] + ("…" if len(flat) > width else "")
    begin = max(0, matches[0].start() - width // 3)
    if begin:
        space = flat.find(" ", begin)
        begin = space + 1 if 0 <= space < matches[0].start() else begin
    stop = min(len(flat), begin + width)
    out, pos = [], begin
    for m in matches:
        if m.start() < begin or m.end() > stop:
            continue
        out.append(flat[pos : m.start()])
        out.append(f"**{m.group(0)}**")
        pos = m.end()
    out.append(flat[pos:stop])
    return ("…" if begin else "") + "".join(out) + ("…" if stop < len(flat) else "")


_KEYS: dict[str, tuple[tuple[tuple[str, int], ...], dict[str, tuple[str, str]]]] = {}
_CHECKED: dict[tuple[str, str, str], bool] = {}  # (public key, sig, sha256 of signed bytes) -> valid


def _verified(vault: Vault, located: Located, keys: dict[str, tuple[str, str]] | None = None) -> bool:
    """The entry's signature checks against its author's public key in the vault (``keys``: from
    ``_public_keys``, when the caller checks several entries at once)."""
    from . import entries, identity

    keys = _public_keys(vault) if keys is None else keys
    e = located.entry
    if located.verdict is not None and located.verdict.startswith("non-canonical"):
        return False  # only an entry's canonical encoding verifies (verify.check_entry)
    key = keys.get(e.agent)
    from . import trust

    if trust.configured() is not None:  # the keys this machine pinned, not what a note says now
        public = trust.load(vault).public_key(e.agent, e.key)
        key = None if public is None else (e.key, public)
    if key is None or key[0] != e.key:
        return False
    data = entries.signing_bytes(e)
    memo = (key[1], e.sig, hashlib.sha256(data).hexdigest())
    valid = _CHECKED.get(memo)
    if valid is None:
        valid = identity.verify_signature(key[1], e.sig, data)
        if len(_CHECKED) > 100_000:
            _CHECKED.clear()
        _CHECKED[memo] = valid
    return valid


def _public_keys(vault: Vault) -> dict[str, tuple[str, str]]:
    """agent -> (key id, public key) from the identity notes, read again when one changes."""
    from . import identity

    stamp: list[tuple[str, int]] = []
    try:
        for child in sorted(os.scandir(vault.agents_dir), key=lambda d: d.name):
            try:
                stamp.append((child.name, os.stat(os.path.join(child.path, "identity.md")).st_mtime_ns))
            except (FileNotFoundError, NotADirectoryError):
                continue
    except FileNotFoundError:
        pass
    cached = _KEYS.get(str(vault.root))
    if cached is None or cached[0] != tuple(stamp):
        keys = {name: (i.key_id, i.public_key) for name, i in identity.all_identities(vault).items()}
        cached = (tuple(stamp), keys)
        _KEYS[str(vault.root)] = cached
    return cached[1]


# ------------------------------------------------------------------ status


@_serialised
def status(vault: Vault) -> IndexStatus:
    """What the index holds and which files changed since they were indexed (no writing)."""
    folder = index_dir(vault)
    manifest = _load_manifest(vault)
    rel_folder = f"{vault.rel(vault.state)}/{INDEX_DIR}"
    if manifest is None or not _usable(vault, manifest):
        return IndexStatus(rel_folder, False, 0, 0, 0, 0, (), 0, None, None)
    changed, removed = _plan(vault, manifest, _vault_files(vault))
    size = sum(p.stat().st_size for p in (folder / manifest["dir"]).iterdir() if p.is_file())
    try:
        with _open(vault, manifest).searcher() as s:
            docs = s.doc_count()
            n_entries = s.doc_frequency("kind", "entry")
    except FileNotFoundError as err:  # (a file of the index deleted: the next search rebuilds it)
        missing = Path(err.filename).name if err.filename else "a file"
        return IndexStatus(
            rel_folder,
            True,
            0,
            0,
            0,
            len(manifest["files"]),
            tuple(changed + removed),
            size,
            manifest.get("built"),
            manifest.get("updated"),
            damaged=f"{missing} is missing",
        )
    return IndexStatus(
        rel_folder,
        True,
        docs,
        n_entries,
        docs - n_entries,
        len(manifest["files"]),
        tuple(changed + removed),
        size,
        manifest.get("built"),
        manifest.get("updated"),
    )
