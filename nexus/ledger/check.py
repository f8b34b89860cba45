"""The per-entry check every reader and every verification uses: is this entry its author's words?

:func:`check_entry` is a pure function of an entry and a ``Keyring`` (plain data: the keys this
machine pinned, ``keys/trust.py``): canonical form, a known author, a trusted key, a valid signature
(``keys/signatures.py``: one verdict everywhere). It runs in a full verify's worker processes, in the
whole-vault audit (``audit/``) and in every reader (:class:`Checker`), which shows an entry that fails
it apart, marked UNVERIFIED. An entry whose links Obsidian moved to a renamed note still counts as
signed (:class:`Renamed`); the decision notes' own renames come in as data (``decision_renames``, a
function of the vault given by a caller above ``project/``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ..errors import NexusError
from ..keys import trust
from ..keys.checked import Memo
from ..keys.signatures import valid as verify_signature
from ..keys.trust import Keyring
from ..records import Entry, Located, Problem
from ..storage import entries, segments
from ..storage.vault import Vault
from ..trust import Trust
from . import renames, shadow

DecisionRenames = Callable[[Vault], Mapping[str, str]]  # vault -> {new path: path when written}

WARNING_KINDS = frozenset({"stray-text", "notice", "copy-left", "sync-conflict", "renamed", "fork-resolved"})
# Findings on one entry that mean it is not its author's words as signed: readers show it apart.
ENTRY_KINDS = frozenset({"edited", "non-canonical", "forged", "unknown-agent", "key-changed", "framing"})
# A line outside any entry that imitates framing: part of a damaged entry, never a person's note.
_FRAMING_HINTS = ("nexus:begin", "nexus:end", "nexus:segment", '"sig":')
_END_V2_LIKE = re.compile(r"%%[ ws][0-9]+ [A-Za-z0-9_-]{20,}")


class Renamed:
    """The text an entry was signed with, when Obsidian only moved its links to a renamed note."""

    def __init__(self, vault: Vault, decision_renames: DecisionRenames | None = None) -> None:
        self.vault = vault
        self.decision_renames = decision_renames
        self.renames: dict[str, str] | None = None
        self.signed: dict[str, Any] = {}

    def original(self, e: Any, public_key: str) -> list[tuple[str, str]] | None:
        """The link changes if ``e`` verifies with its links put back, else None."""
        if self.renames is None:
            found = self.decision_renames(self.vault) if self.decision_renames is not None else {}
            self.renames = renames.known(self.vault, found)
        for summary in [e.summary, *renames.originals(e.summary, self.renames)]:
            for body in [e.body] if e.body is None else [e.body, *renames.originals(e.body, self.renames)]:
                if summary == e.summary and body == e.body:
                    continue
                before = replace(e, summary=summary, body=body)
                if verify_signature(public_key, e.sig, entries.signing_bytes(before)):
                    self.signed[e.id] = before
                    return renames.link_changes(f"{summary}\n{body}", f"{e.summary}\n{e.body}") or []
        return self._from_shadow(e, public_key)

    def _from_shadow(self, e: Any, public_key: str) -> list[tuple[str, str]] | None:
        try:
            copy = shadow.original(self.vault, e.id)
        except NexusError:
            return None
        scan = segments.scan(copy.text.encode(), copy.file)
        if len(scan.entries) != 1:
            return None
        before = scan.entries[0].entry
        if before.sig != e.sig or not verify_signature(public_key, e.sig, entries.signing_bytes(before)):
            return None
        changes = renames.renamed_only(
            self.vault, f"{before.summary}\n{before.body}", f"{e.summary}\n{e.body}"
        )
        if changes is None:
            return None
        if replace(before, summary=e.summary, body=e.body) != e:
            return None
        self.signed[e.id] = before
        return changes


def signed_before_a_rename(
    vault: Vault, entry: Any, public_key: str, decision_renames: DecisionRenames | None = None
) -> bool:
    """Whether ``entry``, whose signature fails, was signed by ``public_key`` before Obsidian moved its
    links to a renamed note (what ``verify`` reports as ``renamed``, a warning; search uses it)."""
    return Renamed(vault, decision_renames).original(entry, public_key) is not None


def looks_like_framing(text: str) -> bool:
    """Whether text found outside any entry imitates an entry's framing (a damaged or partial copy
    of an entry), so it can be neither a person's note nor harmless stray text."""
    for line in text.split("\n"):
        stripped = line.lstrip("\\ \t>")
        if (
            entries.HEADER_RE.match(stripped) or (stripped.startswith("%%") and "nexus:" in stripped)
        ) and not stripped.startswith("%% nexus:notice"):
            return True
        if any(hint in line for hint in _FRAMING_HINTS) or _END_V2_LIKE.match(stripped):
            return True
    return False


def printable(text: str) -> bool:
    """Text a person could have typed: no NUL or other control characters (tab and newline aside),
    no undecodable bytes (read as U+FFFD)."""
    return not any((ord(c) < 32 and c not in "\t\n\r") or c == "\x7f" or c == "\ufffd" for c in text)


def check_entry(
    located: Located,
    ring: Keyring,
    renamed: Renamed | None = None,
    canonical: bytes | None = None,
    memo: Memo | None = None,
    *,
    bulk: bool = False,
) -> tuple[str, Problem | None]:
    """The per-entry check, independent of every other entry (so it runs in any process): canonical
    form, a known author, a key this machine trusts for that author (``ring``, trust.py), a valid
    signature. Returns (status, problem): status "ok" (signed by its author; it may still carry a
    ``non-canonical`` or ``renamed`` finding), "edited" (the author's key, text changed after signing)
    or "foreign" (not the author's: forged, unknown agent, untrusted key; not part of its chain).
    With ``renamed``, an entry whose links Obsidian moved to a renamed note is "ok" with a ``renamed``
    warning (``renamed.signed`` keeps the text as signed). ``canonical``: ``entries.canonical(entry)``
    when the caller has it already. ``memo``: signatures this machine already found valid (readers
    pass it, ``checked.py``; a verification never does). ``bulk``: a verification of many entries
    (``keys/signatures.py``: the same verdict, libsodium asked first). Never raises."""
    e = located.entry
    where = (located.file, located.line_start)
    keys = ring.keys.get(e.agent)
    try:
        data = entries.sign_context(e) + (entries.canonical(e) if canonical is None else canonical)
    except (UnicodeError, ValueError):  # (defensive: canonical() is total on parsed entries)
        return "foreign", Problem("framing", *where, "fields cannot be encoded", e.id, e.agent)
    if keys is None:
        return "foreign", Problem("unknown-agent", *where, f"no identity note for {e.agent!r}", e.id, e.agent)
    if not e.sig:
        return "foreign", Problem(
            "forged", *where, f"entry claims {e.agent} but carries no signature", e.id, e.agent
        )
    if e.v != entries.FORMAT_VERSION:  # format 2 names no key: the author's trusted keys are tried
        public = next((k for k in keys.values() if verify_signature(k, e.sig, data, memo, bulk=bulk)), None)
        if public is None:
            return _unmatched_v2(located, ring, keys, renamed, data)
        return "ok", _non_canonical(located)
    public = keys.get(e.key)
    if public is not None:
        if not verify_signature(public, e.sig, data, memo, bulk=bulk):
            changes = renamed.original(e, public) if renamed is not None else None
            if changes is not None:
                return "ok", _renamed(e, where, changes)
            return "edited", Problem(
                "edited",
                *where,
                f"signature by {e.agent} does not match the text: changed after signing",
                e.id,
                e.agent,
            )
        return "ok", _non_canonical(located)
    if ring.changed.get(e.agent) == e.key:
        return "foreign", Problem(
            "key-changed",
            *where,
            f"signed with {e.agent}'s new key {e.key}, which "
            f"this machine does not trust yet (`nexus agent trust {e.agent}`)",
            e.id,
            e.agent,
        )
    owner = ring.owner(e.key)
    signer_key = ring.public_key(owner, e.key) if owner else None
    if owner is not None and signer_key is not None and verify_signature(signer_key, e.sig, data):
        msg = f"claims {e.agent} but is signed with {owner}'s key"
    elif any(verify_signature(k, e.sig, data) for k in keys.values()):
        msg = f"signature is {e.agent}'s but names the key {e.key}"
    else:
        msg = f"signed with a key that belongs to no identity ({e.key})"
    return "foreign", Problem("forged", *where, msg, e.id, e.agent)


def _non_canonical(located: Located) -> Problem | None:
    flaw = located.verdict
    if flaw is None or not flaw.startswith("non-canonical"):
        return None
    e = located.entry
    return Problem(
        "non-canonical",
        located.file,
        located.line_start,
        f"{flaw.split(': ', 1)[-1]}: the signed fields are intact but their encoding was changed",
        e.id,
        e.agent,
    )


def _unmatched_v2(
    located: Located, ring: Keyring, keys: Mapping[str, str], renamed: Renamed | None, data: bytes
) -> tuple[str, Problem]:
    """A format 2 entry no trusted key of its author verifies: only links moved (``renamed``), its
    author's new untrusted key (``key-changed``), another identity's key (``forged``), or its text
    changed after signing (``edited``: with no key id stored, a signature by a key nobody here
    trusts reads the same)."""
    e = located.entry
    where = (located.file, located.line_start)
    if renamed is not None:
        for public in keys.values():
            changes = renamed.original(e, public)
            if changes is not None:
                return "ok", _renamed(e, where, changes)
    changed = ring.changed.get(e.agent)
    if changed is not None:
        return "foreign", Problem(
            "key-changed",
            *where,
            f"{e.agent}'s identity declares the new key {changed}, which this machine does not trust "
            f"yet, and no key it trusts signed this entry (`nexus agent trust {e.agent}`)",
            e.id,
            e.agent,
        )
    for owner, others in ring.keys.items():
        if owner != e.agent and any(verify_signature(k, e.sig, data) for k in others.values()):
            return "foreign", Problem(
                "forged", *where, f"claims {e.agent} but is signed with {owner}'s key", e.id, e.agent
            )
    return "edited", Problem(
        "edited",
        *where,
        f"signature by {e.agent} does not match the text: changed after signing "
        "(or signed with a key no identity here holds)",
        e.id,
        e.agent,
    )


def _renamed(e: Entry, where: tuple[str, int], changes: list[tuple[str, str]]) -> Problem:
    """The finding for an entry whose signature holds for its text before Obsidian renamed a note."""
    moved = ", ".join(f"{old} → {new}" for old, new in changes) or "links"
    return Problem(
        "renamed",
        *where,
        f"Obsidian updated links to a renamed note ({moved}); the signature by {e.agent} "
        "holds for the text before the rename",
        e.id,
        e.agent,
    )


def verdict(located: Located, ring: Keyring, renamed: Renamed | None = None, memo: Memo | None = None) -> str:
    """``located.verdict`` after the per-entry check: "ok" (a warning such as ``renamed`` included),
    or "KIND: message"."""
    _status, problem = check_entry(located, ring, renamed, memo=memo)
    return "ok" if problem is None or problem.kind in WARNING_KINDS else f"{problem.kind}: {problem.message}"


class Checker:
    """A reader's verdicts for a whole operation: the keyring, the renames and the machine's memo are
    loaded once, on the first entry (a brief reads back dozens of entries one at a time). ``trust``:
    the pins and the memo of the machine (``nexus.trust.NO_PINS``: the identity notes, no memo)."""

    def __init__(
        self,
        vault: Vault,
        ring: Keyring | None = None,
        decision_renames: DecisionRenames | None = None,
        *,
        trust: Trust,
    ) -> None:
        self.vault = vault
        self.trust = trust
        self._ring = ring
        self._decision_renames = decision_renames
        self._renamed: Renamed | None = None
        self._memo: Memo | None = None

    def mark(self, items: list[Located]) -> list[Located]:
        """``items`` with their verdicts; what was newly found valid is saved to the memo at once."""
        if not items:
            return items
        if self._renamed is None:
            home = self.trust.home
            self._ring = self._ring if self._ring is not None else trust.load(self.vault, home)
            self._renamed = Renamed(self.vault, self._decision_renames)
            self._memo = Memo(home) if home is not None else None
        ring, renamed, memo = self._ring, self._renamed, self._memo
        assert ring is not None
        out = [replace(loc, verdict=verdict(loc, ring, renamed, memo)) for loc in items]
        if memo is not None:
            memo.save()
        return out
