"""Key rotation: a new signing key announced by an entry signed with the old one.

``nexus agent rotate NAME`` (on the machine that holds NAME's private key):

1. a new key pair is made; its private key waits beside the old one as ``NAME.pem.next``;
2. a ``rotation`` entry signed with the OLD key announces the new public key (its body holds it);
3. the identity note declares the new key, the new private key replaces the old one, and this
   machine pins it (``how: "rotation"``);
4. a second ``rotation`` entry, signed with the NEW key, acknowledges the first (proof that the new
   key's holder made the announcement, and the agent's chain goes on under the new key).

Every other machine still trusts only the old key and reports ``key-changed`` until a person runs
``nexus agent trust NAME``; :func:`announcement` then finds the entry signed with a key that machine
already trusts for NAME naming the key the note declares, and the new key is pinned as a rotation
rather than on the person's word alone. A crash at any step converges when ``rotate`` runs again: a
waiting ``NAME.pem.next`` is reused; once the note declares the new key, the announcement is found in
the log and only the remaining steps run (a crash before the note changed announces once more,
harmlessly; one after the confirmation leaves nothing to finish, so ``rotate`` rotates again).
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import IdentityError
from ..keys import identity, roster, signatures, trust
from ..ledger import log
from ..storage import durable
from ..storage.vault import Vault
from ..trust import Trust

TYPE = "rotation"
CHANNEL = "identity"
_BODY_PREFIX = "new public key: "


@dataclass(frozen=True)
class Rotation:
    """A key rotation: the agent, its old and new key ids, and the entries that announced and confirmed it."""

    name: str
    old_key_id: str
    new_key_id: str
    announced: str  # id of the entry signed with the old key
    confirmed: str  # id of the entry signed with the new key


def _next_key(path: Path) -> tuple[bytes, str]:
    """(PEM, public key) of the key waiting at ``path`` (made now when none waits)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        pem = path.read_bytes()
        key = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(key, Ed25519PrivateKey):
            raise IdentityError(f"{path} is not an Ed25519 private key; remove it and rotate again")
    except FileNotFoundError:
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        durable.create_exclusive(path, pem, mode=0o600)
    public = "ed25519:" + base64.b64encode(key.public_key().public_bytes_raw()).decode("ascii")
    return pem, public


def rotate(vault: Vault, keys_home: Path, name: str) -> Rotation:
    """Rotate ``name``'s signing key (see the module docstring); returns what was written."""
    key_path = identity.private_key_path(vault, keys_home, name)
    waiting = key_path.with_name(key_path.name + ".next")
    ring = trust.load(vault, keys_home)  # the current key pinned first (trust on first use)
    declared = vault.key_id_of(name)
    waiting_public = _next_key(waiting)[1] if waiting.exists() else None
    if waiting_public is not None and declared is not None and declared == trust.key_id_of(waiting_public):
        # stopped after the note changed: the announcement is in the log; the new key takes over now
        announced = _announced_or_refuse(vault, ring, name, waiting_public)
        _take_over(waiting, key_path)
        return _finish(vault, keys_home, name, announced, declared)
    if name in ring.changed:
        # stopped after the new key took over but before this machine pinned it
        public = roster.roster(vault).get(name, {}).get("public_key")
        announced = _announced_or_refuse(vault, ring, name, public if isinstance(public, str) else "")
        identity.load_signer(vault, keys_home, name)  # the private key here is the one announced
        return _finish(vault, keys_home, name, announced, ring.changed[name])
    old = identity.load_signer(vault, keys_home, name)  # refuses an unknown name or a mismatched key
    _, public = _next_key(waiting)
    new_kid = trust.key_id_of(public)
    assert new_kid is not None
    entry = log.append(
        vault,
        old,
        channel=CHANNEL,
        type=TYPE,
        summary=f"{name} rotates its signing key {old.key_id} → {new_kid}",
        body=_BODY_PREFIX + public,
        trust=Trust(keys_home),  # (pins live beside the keys)
    ).located.entry
    identity.set_key(vault, name, public, new_kid)
    _take_over(waiting, key_path)
    return _finish(vault, keys_home, name, (entry.id, old.key_id), new_kid)


def _take_over(waiting: Path, key_path: Path) -> None:
    """The waiting private key replaces the old one, durably."""
    os.replace(waiting, key_path)
    durable.fsync_dir(key_path.parent)


def _announced_or_refuse(vault: Vault, ring: trust.Keyring, name: str, public: str) -> tuple[str, str]:
    found = announcement(vault, ring, name, public)
    if found is None:
        raise IdentityError(
            f"agents/{name}/identity.md declares a key that no rotation entry signed with a key this "
            f"machine trusts announces; if the change is genuine, `nexus agent trust {name}`"
        )
    return found


def _finish(vault: Vault, keys_home: Path, name: str, announced: tuple[str, str], new_kid: str) -> Rotation:
    """Pin the new key on this machine and confirm the rotation with an entry signed by it."""
    trust.accept(vault, keys_home, name, how="rotation")  # pins live beside the keys (NEXUS_HOME)
    new = identity.load_signer(vault, keys_home, name)
    confirmed = log.append(
        vault,
        new,
        channel=CHANNEL,
        type=TYPE,
        ack=(announced[0],),
        summary=f"{name} signs with its new key {new_kid} from now on",
        trust=Trust(keys_home),
    ).located.entry.id
    return Rotation(name, announced[1], new_kid, announced[0], confirmed)


def announcement(vault: Vault, ring: trust.Keyring, name: str, public: str) -> tuple[str, str] | None:
    """(id, signing key id) of a ``rotation`` entry by ``name`` announcing ``public`` and signed with
    a key ``ring`` already trusts for ``name``, or None."""
    from ..storage import entries

    wanted = _BODY_PREFIX + public
    for located in log.iter_entries(vault):
        entry = located.entry
        if entry.agent != name or entry.type != TYPE or (entry.body or "").strip() != wanted:
            continue
        # (format 2 names no key: each key ``ring`` trusts for ``name``)
        kids = [entry.key] if entry.v == entries.FORMAT_VERSION else list(ring.keys.get(name, {}))
        for kid in kids:
            key = ring.public_key(name, kid)
            if key is not None and signatures.valid(key, entry.sig, entries.signing_bytes(entry)):
                return entry.id, kid
    return None
