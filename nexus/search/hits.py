"""A hit as the user sees it: its text read back from the vault, a snippet, its provenance.

The index stores no text: a candidate's bytes are read back from its file at the byte range the index
recorded, its phrases checked against them (a hit must contain each phrase's words in order). An
entry whose seal (``seals``) holds for the bytes read is exactly the entry the index found there,
whole, canonical and signed: it is cut, not parsed (its time, author, channel, type and lines from
the index, its summary and body where the canonical form puts them). Any other entry's bytes must be
that one whole entry (its begin line the indexed id, its end line the range's end): the entry is
parsed and its signature checked against its author's key (the keys this machine pinned when
a trust is given), both remembered by the bytes' digest (``verdicts``). When the range no
longer holds the entry (the file changed after the index looked), the segment is scanned for it. A
section's heading becomes a wikilink. Snippets: ``snippets``.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from ..records import Hit, block_link
from ..storage.vault import Vault
from ..trust import Trust
from .engine import Stored
from .language import MatchedTerms
from .snippets import section_text, snippet
from .verdicts import Known, Lookup, Signatures, sealed_texts

Patterns = list[re.Pattern[str]]


class HitReader:
    """Reads candidates' bytes back from the vault (one open file per path, for one search) and makes
    them hits."""

    def __init__(
        self, vault: Vault, signatures: Signatures, terms: MatchedTerms, phrases: Patterns, trust: Trust
    ) -> None:
        self.vault = vault
        self.trust = trust  # the machine's pins and seal secret: what a hit is checked with
        self.root = str(vault.root)
        self.signatures = signatures
        self.terms = terms
        self.phrases = phrases
        self.fds: dict[str, int] = {}
        self.keys: Lookup | None = None  # the authors' public keys, read once a search

    def _fd(self, rel: str) -> int | None:
        fd = self.fds.get(rel)
        if fd is None:
            try:
                fd = os.open(os.path.join(self.root, rel), os.O_RDONLY)
            except (FileNotFoundError, NotADirectoryError):
                return None
            self.fds[rel] = fd
        return fd

    def read(self, rel: str, start: int, end: int) -> bytes | None:
        fd = self._fd(rel)
        return None if fd is None else os.pread(fd, end - start, start)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()
        if self.keys is not None:
            self.signatures.save()

    def _has_phrases(self, text: str) -> bool:
        return all(p.search(text) for p in self.phrases)

    def hit(self, stored: Stored, score: float, superseded_by: str | None) -> Hit | None:
        """The hit for a candidate (``superseded_by``: the decision replacing the one it is about,
        '' when unknown, None when it is not about a superseded one), or None when its text is gone
        or lacks a phrase."""
        start, end, _, _ = stored.loc
        data = self.read(stored.path, start, end)
        if data is None:
            return None
        if self.phrases and not self._has_phrases(data.decode("utf-8", errors="replace")):
            return None  # rejected on the raw text before parsing (most candidates of a phrase are)
        if stored.kind == "entry":
            return self._entry(stored, data, score, superseded_by)
        return self._section(stored, data, score, superseded_by)

    def _known(self, stored: Stored, data: bytes) -> Known | None:
        """The entry the index recorded at ``stored.loc``, read back; scanned for in its segment
        when the range no longer holds exactly that entry."""
        start, _, line_start, _ = stored.loc
        entry_id = stored.key[2:]
        known = self.signatures.entries.parse(data, stored.path, start, line_start)
        if known is not None and known.located.entry.id == entry_id:
            return known
        return self._rescan(stored.path, entry_id)

    def _rescan(self, rel: str, entry_id: str) -> Known | None:
        from ..storage import segments

        fd = self._fd(rel)
        if fd is None:
            return None
        whole = os.pread(fd, os.fstat(fd).st_size, 0)
        for located in segments.scan(whole, rel).entries:
            if located.entry.id == entry_id:
                a, b = located.offset, located.end_offset
                return self.signatures.entries.parse(whole[a:b], rel, a, located.line_start)
        return None

    def _entry(self, stored: Stored, data: bytes, score: float, by: str | None) -> Hit | None:
        if self.keys is None:
            self.keys = self.signatures.lookup(self.trust)
        if stored.seal:  # (the index's seal proves these bytes: cut, not parsed)
            hit = self._sealed(stored, data, score, by)
            if hit is not None:
                return hit
        known = self._known(stored, data)
        if known is None:
            return None
        located = known.located
        e = located.entry
        if self.phrases and not self._has_phrases(known.text()):
            return None
        assert self.keys is not None
        return Hit(
            kind="entry",
            path=located.file,
            line_start=located.line_start,
            line_end=located.line_end,
            link=located.link,
            title=e.summary,
            snippet=known.snippet(self.terms),
            score=round(score, 4),
            entry_id=e.id,
            agent=e.agent,
            time=e.ts,
            type=e.type,
            channel=e.channel,
            verified=self.signatures.verified(known, self.keys, stored.seal),
            superseded=by is not None,
            superseded_by=by or None,
        )

    def _sealed(self, stored: Stored, data: bytes, score: float, by: str | None) -> Hit | None:
        """The hit for an entry whose seal holds for the bytes read: exactly the bytes the index
        found to be this entry, whole, canonical and signed by a key this machine pinned for its
        author. Its time, author, channel, type and lines are the index's; its summary and body are
        cut from the text (``sealed_texts``). None when the seal does not hold (the caller parses)."""
        digest = hashlib.sha256(data).digest()
        if not self.signatures.sealed(stored.agent, digest, stored.seal):
            return None
        entry_id, ts = stored.key[2:], stored.ts
        start = f"**{ts[:10]} {ts[11:19]}Z** · {stored.agent} · {stored.channel} · {stored.type} — "
        texts = sealed_texts(data.decode("utf-8", errors="replace"), entry_id, start)
        if texts is None:
            return None
        if self.phrases and not self._has_phrases(texts.text()):
            return None
        _, _, line_start, line_end = stored.loc
        return Hit(
            kind="entry",
            path=stored.path,
            line_start=line_start,
            line_end=line_end,
            link=block_link(stored.path, entry_id),
            title=texts.summary,
            snippet=texts.snippet(self.terms),
            score=round(score, 4),
            entry_id=entry_id,
            agent=stored.agent,
            time=ts,
            type=stored.type,
            channel=stored.channel,
            verified=True,
            superseded=by is not None,
            superseded_by=by or None,
        )

    def _section(self, stored: Stored, data: bytes, score: float, by: str | None) -> Hit | None:
        text = data.decode("utf-8", errors="replace")
        if not self._has_phrases(text):
            return None
        rel = stored.path
        note = rel[:-3] if rel.endswith(".md") else rel
        heading = stored.heading or None
        anchor = re.sub(r"[#|^\[\]]", " ", heading).strip() if heading else ""
        status = stored.status or None
        return Hit(
            kind="section",
            path=rel,
            line_start=stored.loc[2],
            line_end=stored.loc[3],
            link=f"[[{note}#{anchor}]]" if anchor else f"[[{note}]]",
            title=heading or Path(rel).stem,
            snippet=_marked(text, snippet(section_text(text), self.terms)),
            score=round(score, 4),
            heading=heading,
            agent=stored.agent or None,
            time=stored.ts or None,
            type=stored.type or None,
            status=status,
            superseded=status == "superseded" or by is not None,
            superseded_by=by or None,
        )


def _marked(text: str, cut: str) -> str:
    """A section's snippet, marked as data when the safety scan flags the section's text."""
    from ..memory import scan  # (up a layer: the scan's injection rules, as log.py does)

    found = scan.flags(text)
    return f"{scan.data_notice(found)} {cut}" if found else cut
