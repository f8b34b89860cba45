"""A hit as the user sees it: its text read back from the vault, a snippet, its provenance.

The index stores no text: a candidate's bytes are read back from its file by the byte range the
index recorded, its phrases checked against them (a hit must contain each phrase's words in order),
an entry parsed again and its signature checked against its author's key (the keys this machine
pinned when ``trust`` is configured), a section's heading turned into a wikilink. Snippets show
about 200 characters around the first matched word, matched words in bold (never inside a wikilink
or text already bold).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import BinaryIO

from ..records import Hit, Located
from ..storage.vault import Vault
from .engine import Stored
from .language import WORD_RE, MatchedTerms

Patterns = list[re.Pattern[str]]
_LINK_OR_STRONG_RE = re.compile(r"\[\[[^\]]*\]\]|\*\*[^*]+\*\*")
KeyStamp = tuple[tuple[str, int], ...]


class Signatures:
    """The authors' public keys (read again when an identity note changes) and the signatures
    already checked, for one vault."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.stamp: KeyStamp | None = None
        self.keys: dict[str, tuple[str, str]] = {}
        self.checked: dict[tuple[str, str, str], bool] = {}  # (public key, sig, sha256 of bytes) -> valid

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

    def verified(self, located: Located, keys: dict[str, tuple[str, str]]) -> bool:
        """The entry's signature checks against its author's key (only its canonical encoding does)."""
        from ..keys import identity, trust
        from ..storage import entries

        e = located.entry
        if located.verdict is not None and located.verdict.startswith("non-canonical"):
            return False
        key = keys.get(e.agent)
        if trust.configured() is not None:  # the keys this machine pinned, not what a note says now
            public = trust.load(self.vault).public_key(e.agent, e.key)
            key = None if public is None else (e.key, public)
        if key is None or key[0] != e.key:
            return False
        data = entries.signing_bytes(e)
        memo = (key[1], e.sig, hashlib.sha256(data).hexdigest())
        valid = self.checked.get(memo)
        if valid is None:
            valid = identity.verify_signature(key[1], e.sig, data)
            if len(self.checked) > 100_000:
                self.checked.clear()
            self.checked[memo] = valid
        return valid


class HitReader:
    """Reads candidates' bytes back from the vault (one open file per path) and makes them hits."""

    def __init__(self, vault: Vault, signatures: Signatures, terms: MatchedTerms, phrases: Patterns) -> None:
        self.vault = vault
        self.signatures = signatures
        self.terms = terms
        self.phrases = phrases
        self.files: dict[str, BinaryIO] = {}
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

    def close(self) -> None:
        for f in self.files.values():
            f.close()

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

    def _entry(self, stored: Stored, data: bytes, score: float, by: str | None) -> Hit | None:
        from ..storage import segments

        start, _, line_start, line_end = stored.loc
        scan = segments.scan(data, stored.path, offset=start, line=line_start)
        if not scan.entries:
            return None
        located = scan.entries[0]
        e = located.entry
        if not self._has_phrases(f"{e.summary}\n{e.body or ''}"):
            return None
        if self.keys is None:
            self.keys = self.signatures.public_keys()
        return Hit(
            kind="entry",
            path=stored.path,
            line_start=line_start,
            line_end=line_end,
            link=located.link,
            title=e.summary,
            snippet=entry_snippet(e.summary, e.body, self.terms),
            score=round(score, 4),
            entry_id=e.id,
            agent=e.agent,
            time=e.ts,
            type=e.type,
            channel=e.channel,
            verified=self.signatures.verified(located, self.keys),
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
            snippet=snippet(section_text(text), self.terms),
            score=round(score, 4),
            heading=heading,
            agent=stored.agent or None,
            time=stored.ts or None,
            type=stored.type or None,
            status=status,
            superseded=status == "superseded" or by is not None,
            superseded_by=by or None,
        )


def entry_snippet(summary: str, body: str | None, terms: MatchedTerms) -> str:
    if body and any(m.group(0).lower() in terms for m in WORD_RE.finditer(body)):
        return snippet(body, terms)
    return snippet(summary if not body else f"{summary} — {body}", terms)


def section_text(text: str) -> str:
    """A section without its heading line (the hit shows the heading apart)."""
    first, _, rest = text.partition("\n")
    return rest if first.lstrip().startswith("#") and rest.strip() else text


def snippet(text: str, terms: MatchedTerms, width: int = 200) -> str:
    flat = " ".join(text.split())
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
