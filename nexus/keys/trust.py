"""Which public key each name may sign with, pinned on this machine (trust on first use).

An identity note (``agents/NAME/identity.md``) is an editable file in the vault, so it cannot be the
trust root: anyone who can edit the vault could put their own key in it. Like ssh's known hosts, the
first key a machine sees for a name is remembered outside the vault, in
``<NEXUS_HOME>/trust/<vault_id>.json``::

    {"v": 1, "agents": {"ella": {"current": "5f0c9d1a2b3c4d5e",
                                 "keys": {"5f0c9d1a2b3c4d5e": {"public_key": "ed25519:…",
                                                               "since": "2026-11-30T04:40:00Z",
                                                               "how": "first-use"}}}}}

From then on an entry verifies only with a key pinned for its author. A note that declares another
key is reported (``key-changed``) and that key is not trusted until a person runs
``nexus agent trust NAME``, which pins it beside the old ones (old entries keep verifying).

Where the pins are travels as a value, ``nexus.trust.Trust``, from the entry point that found ``NEXUS_HOME``
(the CLI, the hooks, the MCP server, the watcher, Hermes' provider: ``Workspace.trust``,
``Call.trust``) down to every reader that decides a signature. The same folder holds the memo of
signatures already found valid (``checked.py``) and the seal secret (``seal.py``). A library caller
that passes ``nexus.trust.NO_PINS`` takes the identity notes as they are and pins nothing; no process-wide
state decides it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..storage import durable
from ..storage.vault import Vault
from . import roster
from .signatures import raw_key


def key_id_of(public_key: str) -> str | None:
    """The key id of ``ed25519:<base64>``, computed (never read from a note), or None if malformed."""
    raw = raw_key(public_key)
    return None if raw is None else hashlib.sha256(raw).hexdigest()[:16]


@dataclass(frozen=True)
class Keyring:
    """The keys an entry may be signed with, by author. Plain data (picklable for worker processes).

    ``keys``: name -> {key id: public key} trusted for that name; ``changed``: name -> the key id its
    identity note declares now but this machine does not trust; ``pinned``: whether pins were used.
    """

    keys: dict[str, dict[str, str]] = field(default_factory=dict)
    changed: dict[str, str] = field(default_factory=dict)
    pinned: bool = False

    def owner(self, key_id: str) -> str | None:
        for name, keys in self.keys.items():
            if key_id in keys:
                return name
        return None

    def public_key(self, name: str, key_id: str) -> str | None:
        return self.keys.get(name, {}).get(key_id)


def pins_path(home: Path, vault: Vault) -> Path:
    return home / "trust" / f"{vault.vault_id}.json"


def _read_pins(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (FileNotFoundError, ValueError):
        return {}
    agents = data.get("agents") if isinstance(data, dict) else None
    if not isinstance(agents, dict):
        return {}
    out: dict[str, Any] = {}
    for name, pin in agents.items():
        if isinstance(pin, dict) and isinstance(pin.get("keys"), dict):
            keys = {
                k: v
                for k, v in pin["keys"].items()
                if isinstance(v, dict) and isinstance(v.get("public_key"), str)
            }
            out[name] = {**pin, "keys": keys}
    return out


def _write_pins(path: Path, pins: dict[str, Any]) -> None:
    durable.replace(path, json.dumps({"v": 1, "agents": pins}, indent=1, sort_keys=True).encode(), mode=0o600)


def _declared(vault: Vault) -> dict[str, tuple[str, str]]:
    """name -> (key id computed from its public key, public key) as the identity notes declare."""
    out: dict[str, tuple[str, str]] = {}
    for name, info in roster.roster(vault).items():
        public = info.get("public_key")
        kid = key_id_of(public) if isinstance(public, str) else None
        if kid is not None and isinstance(public, str):
            out[name] = (kid, public)
    return out


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def load(vault: Vault, home: Path | None) -> Keyring:
    """The keyring for ``vault`` on this machine (pins in ``home``); a name seen for the first time is
    pinned now. ``home`` None: the identity notes' keys as they are, nothing pinned."""
    declared = _declared(vault)
    if home is None:
        return Keyring({name: {kid: public} for name, (kid, public) in declared.items()})
    path = pins_path(home, vault)
    pins = _read_pins(path)
    if any(name not in pins for name in declared):
        from ..storage.locks import exclusive

        with exclusive(home / "trust" / f"{vault.vault_id}.lock"):
            pins = _read_pins(path)
            fresh = {n: d for n, d in declared.items() if n not in pins}
            for name, (kid, public) in fresh.items():
                pins[name] = {
                    "current": kid,
                    "keys": {kid: {"public_key": public, "since": _now(), "how": "first-use"}},
                }
            if fresh:
                with contextlib.suppress(OSError):  # pinned in memory for this run; the next pins again
                    _write_pins(path, pins)
    keys: dict[str, dict[str, str]] = {}
    changed: dict[str, str] = {}
    for name, pin in pins.items():
        keys[name] = {k: v["public_key"] for k, v in pin["keys"].items()}
        note = declared.get(name)
        if note is not None and note[0] not in keys[name]:
            changed[name] = note[0]
    return Keyring(keys, changed, pinned=True)


def accept(vault: Vault, home: Path, name: str, *, how: str = "trust") -> tuple[str, str | None]:
    """Pin the key ``name``'s identity note declares now (a rotation a person accepts); old keys stay
    trusted for old entries. Returns (new key id, previous current key id)."""
    from ..errors import IdentityError
    from ..storage.locks import exclusive
    from ..storage.text import check_name

    check_name(name)
    note = _declared(vault).get(name)
    if note is None:
        raise IdentityError(f"no readable public key for {name!r} in agents/{name}/identity.md")
    kid, public = note
    path = pins_path(home, vault)
    with exclusive(home / "trust" / f"{vault.vault_id}.lock"):
        pins = _read_pins(path)
        pin = pins.setdefault(name, {"current": None, "keys": {}})
        previous = pin.get("current")
        if kid not in pin["keys"]:
            pin["keys"][kid] = {"public_key": public, "since": _now(), "how": how}
        pin["current"] = kid
        _write_pins(path, pins)
    return kid, previous if isinstance(previous, str) else None


def listing(vault: Vault, home: Path) -> list[dict[str, Any]]:
    """Every pinned key of this vault on this machine, and whether the identity note agrees."""
    ring = load(vault, home)
    pins = _read_pins(pins_path(home, vault))
    declared = _declared(vault)
    out = []
    for name in sorted(pins):
        pin = pins[name]
        for kid, info in sorted(pin["keys"].items(), key=lambda kv: str(kv[1].get("since", ""))):
            out.append(
                {
                    "name": name,
                    "key_id": kid,
                    "current": kid == pin.get("current"),
                    "since": info.get("since"),
                    "how": info.get("how"),
                    "note_key_id": declared.get(name, (None,))[0],
                    "changed": name in ring.changed,
                }
            )
    return out
