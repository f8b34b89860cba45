"""Agent and person identities: Ed25519 key pairs and identity notes.

The private key lives outside the vault (``<keys home>/<vault id>/<name>.pem``, mode 0600); the public
key and a note a person fills in live in the vault at ``agents/NAME/identity.md`` (the key in the
note's ``nexus:meta`` comment, see ``meta.py``; older notes hold it in their properties).
"""

from __future__ import annotations

import base64
import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import IdentityError, InputError
from ..records import Identity
from ..storage import durable, meta
from ..storage.text import check_name
from ..storage.vault import Vault

if TYPE_CHECKING:  # (the signature library is imported where a key is used: a reader whose
    # signatures are all remembered (checked.py) never loads it)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey


KINDS = ("agent", "human")


def key_id(raw_public: bytes) -> str:
    return hashlib.sha256(raw_public).hexdigest()[:16]


def private_key_path(vault: Vault, keys_home: Path, name: str) -> Path:
    return keys_home / "keys" / vault.vault_id / f"{check_name(name)}.pem"


@dataclass(frozen=True)
class Signer:
    """A loaded private key, ready to sign on behalf of ``name``."""

    name: str
    key_id: str
    _key: Ed25519PrivateKey

    def sign(self, data: bytes) -> str:
        return base64.b64encode(self._key.sign(data)).decode("ascii")


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes_raw()


# An unencrypted PKCS#8 Ed25519 key is this fixed DER prefix and the 32-byte seed. Reading it by hand
# keeps `cryptography...serialization` (~18 ms of imports) off the append hot path.
_PKCS8_ED25519_PREFIX = bytes.fromhex("302e020100300506032b657004220420")


def _load_private(pem: bytes, path: Path) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    lines = pem.strip().splitlines()
    if lines and lines[0] == b"-----BEGIN PRIVATE KEY-----" and lines[-1] == b"-----END PRIVATE KEY-----":
        der = base64.b64decode(b"".join(lines[1:-1]))
        if len(der) == 48 and der.startswith(_PKCS8_ED25519_PREFIX):
            return Ed25519PrivateKey.from_private_bytes(der[16:])
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise IdentityError(f"{path} is not an Ed25519 private key")
    return key


def load_signer(vault: Vault, keys_home: Path, name: str) -> Signer:
    """The signer for ``name``; IdentityError if the agent is unknown or its private key is missing."""
    check_name(name)
    if not vault.identity_path(name).is_file():
        raise vault.unknown_agent(name)
    path = private_key_path(vault, keys_home, name)
    try:
        pem = path.read_bytes()
    except FileNotFoundError:
        raise IdentityError(
            f"no private key for {name!r} at {path} (set NEXUS_HOME to the folder that holds it)"
        ) from None
    try:
        key = _load_private(pem, path)
    except ValueError as err:
        raise IdentityError(f"{path} is not a readable private key ({err})") from None
    signer = Signer(name, key_id(_raw_public(key.public_key())), key)
    # The identity note's key_id, read without YAML (hot path): a key from another vault or an old
    # key would sign entries that verify reports as forged, so refuse it before writing anything.
    declared = vault.key_id_of(name)
    if declared is None:
        raise IdentityError(
            f"agents/{name}/identity.md declares no key: its last line, the %% nexus:meta %% comment "
            "holding the public key, was removed or damaged; put it back (git, or Obsidian's file "
            "recovery)"
        )
    if declared != signer.key_id:
        raise IdentityError(
            f"the private key at {path} does not match {name}'s public key in "
            f"agents/{name}/identity.md (key {signer.key_id})"
        )
    return signer


_IDENTITY_BODY = """\
# {name}

> [!note] Identity of {article} {kind}
> nexus signs every entry {name} writes with {name}'s key (kept in the comment at the end of this
> note). Fill in the sections below: every agent reads them in its brief.

## Role
_What {name} is responsible for._

## Priorities
- _What matters most, in order._

## Never without asking
- _What {name} must not do before a person agrees._

## Relations to the other agents
- _Who {name} hands work to, who reviews its work._
"""

_HUMAN_BODY = """\
# {name}

> [!note] Identity of a person
> {name} is a person. What {name} writes in Obsidian below the last entry of the log is signed in this
> name by `nexus watch`, and facts {name} approves carry this name. Every agent reads this note in its
> brief: say who {name} is to them.

## Role
_What {name} does on the project, and what {name} decides._

## How to work with {name}
- _How {name} likes to be told things (short answers, a summary first…)._

## Ask {name} before
- _What the agents must not do before {name} agrees._
"""


def add(vault: Vault, keys_home: Path, name: str, *, human: bool = False) -> Identity:
    """Create ``name``: private key outside the vault, identity note inside. Nothing is left behind
    on failure."""
    check_name(name)
    note = vault.identity_path(name)
    if note.exists():
        raise InputError(f"identity {name!r} already exists ({vault.rel(note)})")
    key_path = private_key_path(vault, keys_home, name)
    if key_path.exists():
        raise IdentityError(f"a private key for {name!r} already exists at {key_path}; remove it first")
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    raw = _raw_public(key.public_key())
    from cryptography.hazmat.primitives import serialization

    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    key_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(key_path.parent, 0o700)
    durable.create_exclusive(key_path, pem, mode=0o600)
    kind = "human" if human else "agent"
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    identity = Identity(
        name=name,
        kind=kind,
        public_key="ed25519:" + base64.b64encode(raw).decode("ascii"),
        key_id=key_id(raw),
        created=created,
        path=f"agents/{name}/identity.md",
    )
    props = {
        "name": name,
        "kind": kind,
        "public_key": identity.public_key,
        "key_id": identity.key_id,
        "created": created,
        "tags": [f"nexus/{kind}"],
    }
    body = (_HUMAN_BODY if human else _IDENTITY_BODY).format(name=name, kind=kind, article="an")
    try:
        note.parent.mkdir(parents=True, exist_ok=True)
        durable.create_exclusive(note, note_text(props, body).encode("utf-8"))
    except BaseException:
        key_path.unlink(missing_ok=True)
        raise
    if human and vault.human() is None:
        _set_vault_human(vault, name)
    return identity


def _set_vault_human(vault: Vault, name: str) -> None:
    from ..storage import notes
    from ..storage.vault import MARKER

    props, body = notes.read(vault.root / MARKER, vault.root)
    props["human"] = name
    notes.write(vault.root / MARKER, props, body)


def note_text(props: dict[str, Any], body: str) -> str:
    """An identity note: what a person reads as properties (name, kind, created, tags), the key in
    the ``nexus:meta`` comment at its end."""
    from ..storage import notes

    shown, hidden = meta.apart(props, meta.IDENTITY)
    return notes.render(shown, meta.attach(body, hidden))


def read_note(vault: Vault, name: str) -> tuple[dict[str, Any], str]:
    """(properties, body) of ``name``'s identity note, in either form (key in the meta comment, or
    in the properties as older notes have it); the body without the comment."""
    from ..storage import notes

    props, body = notes.read(vault.identity_path(check_name(name)), vault.root)
    return meta.merged(props, body, meta.IDENTITY)


def set_key(vault: Vault, name: str, public_key: str, kid: str) -> None:
    """Declare a new key in ``name``'s identity note (a rotation); the note is written in the current
    form whatever form it had."""
    props, body = read_note(vault, name)
    props["public_key"], props["key_id"] = public_key, kid
    durable.replace(vault.identity_path(name), note_text(props, body).encode("utf-8"))


def load(vault: Vault, name: str) -> Identity:
    path = vault.identity_path(check_name(name))
    if not path.is_file():
        raise IdentityError(f"unknown agent {name!r}")
    props, _ = read_note(vault, name)
    try:
        return Identity(
            name=str(props["name"]),
            kind=str(props.get("kind", "agent")),
            public_key=str(props["public_key"]),
            key_id=str(props["key_id"]),
            created=str(props.get("created", "")),
            path=vault.rel(path),
        )
    except KeyError as err:
        raise IdentityError(f"{vault.rel(path)} lacks the field {err}") from None


def all_identities(vault: Vault) -> dict[str, Identity]:
    """Every identity in the vault, by name (folders whose name is not a valid name are skipped)."""
    out: dict[str, Identity] = {}
    if not vault.agents_dir.is_dir():
        return out
    for child in sorted(vault.agents_dir.iterdir()):
        if (child / "identity.md").is_file():
            try:
                out[child.name] = load(vault, child.name)
            except (InputError, IdentityError):
                continue
    return out


def identity_text(vault: Vault, name: str) -> str:
    """The identity note's body (what a person wrote about the agent)."""
    return read_note(vault, name)[1]
