"""The entries hits show: parsed and their signatures checked once per process, keyed by the bytes.

A hit's entry is read back from its segment at the byte range the index recorded. What those bytes
parse to (the entry, whether its encoding is canonical, the text its snippet is cut from) and whether
its signature checks against a public key are functions of the bytes and the key alone, so a process
that searches again and again (the MCP server, the watcher, a benchmark) remembers them: an entry
under the SHA-256 of the exact bytes read (with the path and position they were read at), a verdict
under the public key and that same digest. A byte changed anywhere in the entry (its text, its
signature, its key id) changes the digest, so an entry edited in place is parsed and checked again,
never served from memory. Both are bounded (oldest first out) and held in memory only; with a
``nexus.trust.Trust`` that names a keys folder (the CLI's, the MCP server's) a valid signature also goes
to the machine's memo beside the pins (``keys.checked``, outside the vault), which every reader
shares, and a hit whose index document carries a seal that holds for the bytes read and the author's
key (``seals``) is verified without Ed25519.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..keys.seal import holds
from ..records import Located
from ..storage.vault import Vault
from .language import MatchedTerms, lower_words
from .snippets import Flat, cut, flatten, joined

if TYPE_CHECKING:
    from ..keys.checked import Memo
    from ..keys.trust import Keyring
    from ..trust import Trust

KeyStamp = tuple[tuple[str, int], ...]
KeyNotes = tuple[tuple[str, int, int, int], ...]  # each identity note: (agent, mtime, size, inode)
Lookup = Callable[[str, str], str | None]  # (agent, key id) -> the public key to check with, or None
ENTRIES_KEPT = 2_000  # entries remembered per process (~13 KB each with both snippet texts: ≤ ~27 MB)
VERDICTS_KEPT = 20_000  # verdicts remembered per process (~150 bytes each)


class Texts:
    """An entry's summary and body, and the snippet texts made from them on first use (most hits
    need only one of them)."""

    __slots__ = ("_body", "_body_words", "_whole", "body_text", "summary")

    def __init__(self, summary: str, body: str | None) -> None:
        self.summary = summary
        self.body_text = body
        self._body: Flat | None = None
        self._whole: Flat | None = None
        self._body_words: frozenset[str] | None = None

    def text(self) -> str:
        """The summary and the body, a line apart (what a phrase must be found in)."""
        return f"{self.summary}\n{self.body_text or ''}"

    def snippet(self, terms: MatchedTerms) -> str:
        """The hit's snippet: cut from the body when a matched word is in it, else from the whole;
        marked as data, not instructions, when the safety scan flags the entry's words."""
        from ..memory import scan  # (up a layer: the scan's injection rules, as log.py does)

        text = cut(self.body() if self.body_matches(terms) else self.whole(), terms)
        found = scan.entry_flags(self.summary, self.body_text)
        return f"{scan.data_notice(found)} {text}" if found else text

    def body_matches(self, terms: MatchedTerms) -> bool:
        """Whether a word of the body (links and bold included) is one of a query's matched words."""
        if self._body_words is None:
            flat = self.body()  # (without links or bold, its words are the body's)
            self._body_words = flat.vocab if not flat.fenced else frozenset(lower_words(self.body_text or ""))
        return not terms.matched(self._body_words).isdisjoint(self._body_words)

    def body(self) -> Flat:
        if self._body is None:
            self._body = flatten(self.body_text or "")
        return self._body

    def whole(self) -> Flat:
        """The summary, then the body after a dash (when it has one)."""
        if self._whole is None:
            body = self.body_text
            if not body:
                self._whole = flatten(self.summary)
            else:
                parts = joined(flatten(self.summary), self.body())  # (the body's already flattened)
                self._whole = parts or flatten(f"{self.summary} — {body}")
        return self._whole


class Known(Texts):
    """An entry as its bytes parse: the entry where it stands, and its snippet texts."""

    __slots__ = ("digest", "located")

    def __init__(self, digest: bytes, located: Located) -> None:
        super().__init__(located.entry.summary, located.entry.body)
        self.digest = digest
        self.located = located


def sealed_texts(text: str, entry_id: str, header_start: str) -> Texts | None:
    """The summary and body of an entry's text (its exact bytes, decoded) that a seal proved to be
    a whole entry in nexus's canonical form, cut from the text where that form puts them: the header
    line after ``header_start`` (its time, author, channel and type, from the index) up to the block
    id, the body between the blank line under the header and the end line. None when the text is
    not laid out so (a CR, an escaped body line: the caller parses it as any other)."""
    v1 = text.startswith("%% nexus:begin ")  # (format 1: a begin line above the header)
    first = text.find("\n") if v1 else -1  # (the header's start, less one)
    second = text.find("\n", first + 1)
    last = text.rfind("\n", 0, len(text) - 1)  # (the end line's start, less one)
    if (v1 and first < 0) or second < 0 or last < second or "\r" in text:
        return None
    tail = f" ^{entry_id}"
    if not text.startswith(header_start, first + 1) or not text.endswith(tail, first + 1, second):
        return None
    summary = text[first + 1 + len(header_start) : second - len(tail)]
    if not v1:  # format 2: the acknowledgements' line (``↩ ``) before the end line is no body
        before = text.rfind("\n", 0, last)
        if before > second and text.startswith("↩ ", before + 1):
            last = before
    if last <= second + 1:  # (the end line under the header, or one blank line between)
        return Texts(summary, None)
    if text[second + 1] != "\n" or "\\" in text[second:last]:
        return None
    return Texts(summary, text[second + 2 : last])


class Entries:
    """Entries parsed from exact bytes, remembered by (path, byte offset, line, SHA-256 of the bytes)."""

    def __init__(self, kept: int = ENTRIES_KEPT) -> None:
        self.kept = kept
        self.known: dict[tuple[str, int, int, bytes], Known | None] = {}

    def parse(self, data: bytes, rel: str, offset: int, line: int) -> Known | None:
        """The one entry ``data`` (read from ``rel`` at ``offset``, line ``line``) holds, exactly:
        None when the bytes are not one whole entry (the index's offsets moved, or damage)."""
        digest = hashlib.sha256(data).digest()
        key = (rel, offset, line, digest)
        if key in self.known:
            return self.known[key]
        located = _one_entry(data, rel, offset, line)
        found = Known(digest, located) if located is not None else None
        if len(self.known) >= self.kept:
            del self.known[next(iter(self.known))]
        self.known[key] = found
        return found


def _one_entry(data: bytes, rel: str, offset: int, line: int) -> Located | None:
    """The entry ``data`` holds when it is exactly one whole entry (its begin line first, its end
    line last, none between), read as ``segments.scan`` reads it (invalid UTF-8 replaced, a CR before
    each line end dropped); None otherwise (the caller scans the segment)."""
    from ..storage import entries

    if not data.endswith(b"\n"):
        return None
    text = data[:-1].decode("utf-8", errors="replace")
    lines = text.split("\n")
    if "\r" in text:
        lines = [x[:-1] if x.endswith("\r") else x for x in lines]
    if len(lines) < 3 or not entries.starts_entry(lines[0]) or not entries.ends_entry(lines[0], lines[-1]):
        return None
    if any(x.startswith((entries.BEGIN_PREFIX, entries.END_PREFIX)) for x in lines[1:-1]):
        return None
    if not lines[0].startswith(entries.BEGIN_PREFIX) and any(
        x.startswith(entries.END_V2_PREFIX) or entries.starts_entry(x) for x in lines[1:-1]
    ):
        return None
    try:
        entry, flaw = entries.parse_checked(lines)
    except entries.FrameError:
        return None
    verdict = None if flaw is None else f"non-canonical: {flaw}"
    return Located(entry, rel, line, line + len(lines) - 1, offset, offset + len(data), verdict)


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class Signatures:
    """The authors' public keys (read again when an identity note changes) and the verdicts already
        reached, for one vault; with a keys folder to trust, also the signatures this machine found valid
    before (``keys.checked``, beside the pins), so a new process need not check them again."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.stamp: KeyStamp | None = None
        self.keys: dict[str, tuple[str, str]] = {}
        self.checked: dict[tuple[str, bytes], bool] = {}  # (public key, sha256 of the entry's bytes)
        self.entries = Entries()
        self.memo: Memo | None = None  # the machine's memo (keys.checked), with a keys folder
        self.secret: bytes | None = None  # the machine's secret (keys.seal), with a keys folder
        self.secret_read: tuple[tuple[object, ...], bytes | None] | None = None  # (its file's stat, it)
        self.ring: tuple[tuple[object, ...], Keyring] | None = None  # (what it was read from, the keys)
        self.sealing: dict[str, dict[str, str]] = {}  # this search's pinned keys, when seals may prove
        self.agent_keys: dict[str, tuple[str, ...]] = {}  # each author's keys (format 2 names none)
        self.pins: tuple[tuple[object, ...], Path] | None = None  # ((home, nexus.md's stamp), pins file)
        # (the vault's listing they were read with, home, the identity notes' stamp, the pins file)
        self.notes: tuple[object, Path | None, KeyNotes, Path] = (None, None, (), Path())

    def public_keys(self) -> dict[str, tuple[str, str]]:
        """agent -> (key id, public key) from the identity notes."""
        from ..keys import identity

        stamp: list[tuple[str, int]] = []
        try:
            for child in sorted(os.scandir(self.vault.agents_dir), key=lambda d: d.name):
                try:
                    stamp.append((child.name, os.stat(os.path.join(child.path, "identity.md")).st_mtime_ns))
                except (FileNotFoundError, NotADirectoryError):
                    continue
        except FileNotFoundError:
            pass
        if self.stamp != tuple(stamp):
            self.keys = {n: (i.key_id, i.public_key) for n, i in identity.all_identities(self.vault).items()}
            self.stamp = tuple(stamp)
        return self.keys

    def lookup(self, trust: Trust) -> Lookup:
        """Which public key checks an entry, read once for a search: the keys this machine pinned in
        the folder ``trust`` names (not what a note says now), else (``NO_PINS``) the identity notes'
        keys. With a folder, also this machine's secret (``keys.seal``): a hit's seal proves its
        signature."""
        home = trust.home
        if home is not None:
            if self.memo is None or self.memo.path.parent != home:
                from ..keys.checked import Memo

                self.memo = Memo(home)
            self.secret = self._secret(home)
            ring = self._pinned(home)
            self.sealing = ring.keys if self.secret is not None else {}
            self.agent_keys = {n: tuple(ks.values()) for n, ks in ring.keys.items()}
            return ring.public_key
        self.memo = None
        self.secret = None
        self.sealing = {}
        keys = self.public_keys()
        self.agent_keys = {n: (k[1],) for n, k in keys.items()}

        def declared(agent: str, key_id: str) -> str | None:
            found = keys.get(agent)
            return found[1] if found is not None and found[0] == key_id else None

        return declared

    def _secret(self, home: Path) -> bytes | None:
        """The machine's secret (``keys.seal``), read again only when its file's stat changes."""
        from ..keys import seal

        try:
            st = os.stat(os.path.join(home, seal.FILE), follow_symlinks=False)
        except OSError:
            self.secret_read = None
            return None
        stamp = (str(home), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size, st.st_mode, st.st_uid)
        if self.secret_read is None or self.secret_read[0] != stamp:
            self.secret_read = (stamp, seal.secret(home))
        return self.secret_read[1]

    def _pinned(self, home: Path) -> Keyring:
        """The pinned keys, read again only when the pins or an identity note changed (what
        ``trust.load`` reads: reading it costs ~0.5-1 ms a search)."""
        from ..keys import trust
        from .documents import unchanged_listing

        listing = unchanged_listing(self.vault)  # (the vault unchanged since that listing: the same
        if listing is None or listing is not self.notes[0] or home != self.notes[1]:  # notes, nexus.md)
            self.notes = (listing, home, self._notes_stamp(), self._pins_path(home))
        _, _, notes, pins = self.notes
        stamp = (str(home), _stat(pins), notes)  # (taken before reading:
        if self.ring is None or self.ring[0] != stamp:  # a change made meanwhile is read next time)
            self.ring = (stamp, trust.load(self.vault, home))
        return self.ring[1]

    def sealed(self, agent: str, digest: bytes, sealed: bytes) -> bool:
        """Whether ``sealed`` (the seal the index stored) proves bytes hashing to ``digest`` signed by
        one of the keys this machine pinned for ``agent`` (after ``lookup``, with a keys folder):
        the index sealed them only when they were a whole entry, canonical, its signature valid."""
        secret = self.secret
        if not sealed or secret is None:
            return False
        return any(holds(secret, public, digest, sealed) for public in self.sealing.get(agent, {}).values())

    def _pins_path(self, home: Path) -> Path:
        """Where the pins are (named by the vault's id, worked out again when ``nexus.md`` changes)."""
        from ..keys import trust

        marker = _stat(self.vault.root / "nexus.md")
        if self.pins is None or self.pins[0] != (str(home), marker):
            self.pins = ((str(home), marker), trust.pins_path(home, self.vault))
        return self.pins[1]

    def _notes_stamp(self) -> KeyNotes:
        stamp: list[tuple[str, int, int, int]] = []
        try:
            for child in sorted(os.scandir(self.vault.agents_dir), key=lambda d: d.name):
                try:
                    st = os.stat(os.path.join(child.path, "identity.md"))
                except (FileNotFoundError, NotADirectoryError):
                    continue
                stamp.append((child.name, st.st_mtime_ns, st.st_size, st.st_ino))
        except FileNotFoundError:
            pass
        return tuple(stamp)

    def verified(self, known: Known, lookup: Lookup, sealed: bytes = b"") -> bool:
        """The entry's signature checks against its author's key (only its canonical encoding does):
        proven by ``sealed``, the seal the index stored for it (``seals``), when it holds for these
        exact bytes and that key; else checked."""
        from ..storage import entries

        located = known.located
        if located.verdict is not None and located.verdict.startswith("non-canonical"):
            return False
        e = located.entry
        if e.v != entries.FORMAT_VERSION:  # format 2 names no key: any the author may sign with
            return any(self._verified_by(p, known, sealed) for p in self.agent_keys.get(e.agent, ()))
        public = lookup(e.agent, e.key)
        if public is None:
            return False
        return self._verified_by(public, known, sealed)

    def _verified_by(self, public: str, known: Known, sealed: bytes) -> bool:
        from ..keys import signatures
        from ..storage import entries

        e = known.located.entry
        if sealed and self.secret is not None and holds(self.secret, public, known.digest, sealed):
            return True
        memo = (public, known.digest)
        valid = self.checked.get(memo)
        if valid is None:
            valid = signatures.valid(public, e.sig, entries.signing_bytes(e), self.memo)
            if not valid:  # links Obsidian moved to a renamed note: still its author's words
                from ..ledger.check import signed_before_a_rename
                from ..project.decisions import renamed_notes

                valid = signed_before_a_rename(self.vault, e, public, renamed_notes)
            if valid:  # (a refusal is checked again next time: a rename recorded since may explain it)
                if len(self.checked) >= VERDICTS_KEPT:
                    del self.checked[next(iter(self.checked))]
                self.checked[memo] = valid
        return valid

    def save(self) -> None:
        """Add the signatures found valid in this search to the machine's memo (never raises)."""
        if self.memo is not None:
            self.memo.save()
