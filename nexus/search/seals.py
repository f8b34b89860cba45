"""Entries sealed when indexed, so a search proves "verified" with two hashes instead of Ed25519.

When the index is built or updated, each entry whose signature checks against the key this machine
pinned for its author (``keys.trust``) gets a seal of its exact bytes (``keys.seal``: an HMAC keyed
with a secret kept outside the vault) stored beside it in the index. An entry that ``nexus verify``'s
proof covers (``proof``: bytes this machine already verified, hashed outside the vault) is sealed
without checking its signature again; any other is checked here, once, in the build's processes.
A search reads the entry's bytes back, hashes them and checks the seal against the key it would
verify with (``verdicts``); a seal that does not hold, or none, means the signature is checked as
before. Nothing is sealed without a keys folder to trust (``nexus.trust.NO_PINS``, a library caller's:
no pins, no secret).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..records import Located
from ..storage.vault import Vault
from ..trust import Trust

if TYPE_CHECKING:
    from ..keys.checked import Memo
    from .proof import Proof


@dataclass(frozen=True)
class Sealer:
    """What sealing needs (plain data, inherited by a build's forked processes): the secret, the
    public keys this machine trusts (name -> key id -> public key) and the verify proof, if any."""

    secret: bytes
    keys: dict[str, dict[str, str]]
    proof: Proof | None = None

    def seals(
        self, found: Sequence[Located], data: bytes, base: int, covered: range, memo: Memo | None = None
    ) -> list[bytes]:
        """The seal of each entry of ``found`` (parsed from ``data``, which starts at byte ``base`` of
        its file; b"" when it does not verify). Entries inside ``covered`` (byte offsets the verify
        proof vouches for) are not checked again."""
        from ..keys.seal import seal
        from ..keys.signatures import valid
        from ..storage import entries

        out: list[bytes] = []
        proof = self.proof
        for located in found:
            e = located.entry
            mine = self.keys.get(e.agent, {})
            # (format 2 names no key: each of the author's, the first that verifies)
            publics = list(mine.values()) if e.v != entries.FORMAT_VERSION else [mine.get(e.key)]
            flaw = located.verdict
            if not e.sig or (flaw is not None and flaw.startswith("non-canonical")):
                out.append(b"")
                continue
            vouched = (
                proof is not None
                and located.offset in covered
                and located.end_offset - 1 in covered
                and proof.vouches(located.file, e.id, located.line_start)
            )
            # (a build: many at once, as a full verify; an update: the machine's memo first)
            signed = entries.signing_bytes(e)
            public = next(
                (
                    p
                    for p in publics
                    if p is not None
                    and ((vouched and len(publics) == 1) or valid(p, e.sig, signed, memo, bulk=memo is None))
                ),
                None,
            )
            if public is None:
                out.append(b"")
                continue
            raw = data[located.offset - base : located.end_offset - base]
            out.append(seal(self.secret, public, hashlib.sha256(raw).digest()))
        return out


def sealer(vault: Vault, trust: Trust, *, with_proof: bool = False) -> Sealer | None:
    """The sealer for ``vault`` on this machine (its secret, in the folder ``trust`` names, made on
    first use), or None without one (``NO_PINS``: a library caller) or when no secret can be kept."""
    from ..keys import seal
    from ..keys.trust import load as load_keyring

    home = trust.home
    if home is None:
        return None
    key = seal.secret(home, create=True)
    if key is None:
        return None
    ring = load_keyring(vault, home)
    proof = None
    if with_proof:
        from .proof import load

        proof = load(vault, ring, home)
    return Sealer(key, ring.keys, proof)


def memo(trust: Trust) -> Memo | None:
    """The machine's memo of signatures found valid (``keys.checked``), for an update of the index:
    entries a reader already checked are not checked again (None with ``NO_PINS``)."""
    from ..keys.checked import Memo

    home = trust.home
    return Memo(home) if home is not None else None
