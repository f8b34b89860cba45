"""An agent or a person, as its identity note declares it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Identity:
    """An agent or a person, as its identity note declares it."""

    name: str
    kind: str  # "agent" or "human"
    public_key: str  # "ed25519:<base64>"
    key_id: str  # first 16 hex digits of sha256(raw public key)
    created: str
    path: str  # vault-relative path of the identity note

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
