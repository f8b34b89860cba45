"""Signed heads: each agent's latest sequence number and entry hash, kept beside the log so a
truncated or rolled-back log is caught on any machine, without local state.

``agents/NAME/head.json`` is rewritten after each of NAME's appends, once the entry is durable::

    {"agent": "ella", "hash": "9f2c…", "id": "01KB7Q…", "key": "5f0c9d1a2b3c4d5e", "seq": 12,
     "sig": "base64…", "v": 1}

``sig`` is NAME's Ed25519 signature over ``nexus/head/v1\\n`` + the sorted compact JSON of every other
field. It travels with the vault (git, sync), so ``nexus verify`` in a fresh clone knows that NAME had
written entry ``seq`` with that hash: if the log's chain for NAME stops before it, entries were cut
(truncation, an older copy of a segment restored). A head that lags behind the log is normal (a crash
between the append and the head write; the next append fixes it). A missing head file proves nothing:
git history shows who deleted it.

The write overwrites the file in place without fsync, under the log lock: the entry is already
durable, and a head lost or cut short in a crash (unreadable, so ignored) only lags. It never makes an
append fail.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from ..records import Problem
from ..storage.vault import Vault

if TYPE_CHECKING:
    from .identity import Signer
    from .trust import Keyring

CONTEXT = b"nexus/head/v1\n"
FILE = "head.json"
_ENC = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


def _signed_part(head: dict[str, Any]) -> bytes:
    return CONTEXT + _ENC({k: head[k] for k in ("v", "agent", "seq", "id", "hash", "key")}).encode()


def write(vault: Vault, signer: Signer, agent: str, seq: int, entry_id: str, digest: str) -> None:
    """Record ``agent``'s new head (called after the entry is durable; raises OSError on failure,
    which the caller ignores: a head only ever lags)."""
    head: dict[str, Any] = {
        "v": 1,
        "agent": agent,
        "seq": seq,
        "id": entry_id,
        "hash": digest,
        "key": signer.key_id,
    }
    head["sig"] = signer.sign(_signed_part(head))
    # Overwritten in place under the log lock, like tail.json: no temp file and no rename (a rename
    # over an existing file makes ext4 flush the data, ~1 ms an append). A head cut short by a crash
    # is unreadable, so ignored until the next append rewrites it: a head may only ever lag.
    data = (_ENC(head) + "\n").encode()
    fd = os.open(os.path.join(os.fspath(vault.agent_dir(agent)), FILE), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def read(vault: Vault, agent: str) -> dict[str, Any] | None:
    """The head file's fields, or None when it is missing or unreadable."""
    try:
        head = json.loads((vault.agent_dir(agent) / FILE).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(head, dict):
        return None
    types = {"v": int, "agent": str, "seq": int, "id": str, "hash": str, "key": str, "sig": str}
    if any(not isinstance(head.get(k), t) or isinstance(head.get(k), bool) for k, t in types.items()):
        return None
    return head


def signed_by(head: dict[str, Any], ring: Keyring) -> bool:
    from .signatures import valid as verify_signature

    public = ring.public_key(head["agent"], head["key"])
    return public is not None and verify_signature(public, head["sig"], _signed_part(head))


def check(vault: Vault, ring: Keyring, tops: dict[str, tuple[int, str, str, int, str]]) -> list[Problem]:
    """Problems the signed heads show: entries an agent signed for that the log no longer holds.
    ``tops``: agent -> (seq, hash, file, line, id) of the newest link of its chain. A head at or
    below the chain's top needs nothing more: the chain check names any entry missing or replaced
    below its top."""
    out: list[Problem] = []
    try:
        names = sorted(os.listdir(vault.agents_dir))
    except OSError:
        return out
    for agent in names:
        head = read(vault, agent)
        if head is None:
            continue
        where = f"agents/{agent}/{FILE}"
        if head["agent"] != agent or not signed_by(head, ring):
            out.append(
                Problem(
                    "head-forged",
                    where,
                    1,
                    f"the head of {agent} is not signed by {agent}'s trusted key: it was edited or forged",
                    head["id"],
                    agent,
                )
            )
            continue
        top = tops.get(agent)
        have = top[0] if top else 0
        at = (top[2], top[3]) if top else ("log", 0)
        if have < head["seq"]:
            gap = f"{have + 1}" if have + 1 == head["seq"] else f"{have + 1}–{head['seq']}"
            out.append(
                Problem(
                    "truncated",
                    *at,
                    f"{agent} signed a head at seq {head['seq']} "
                    f"(entry {head['id']}, {where}) but the log holds {agent}'s entries only "
                    f"to seq {have}: seq {gap} are gone (truncated or rolled back)",
                    head["id"],
                    agent,
                )
            )
        elif top is not None and have == head["seq"] and top[4] != head["id"]:
            out.append(
                Problem(
                    "truncated",
                    *at,
                    f"{agent}'s signed head names entry {head['id']} "
                    f"(seq {head['seq']}), which is not in the log: entry {top[4]} took its "
                    "place (an older copy of the log was restored and appended to)",
                    head["id"],
                    agent,
                )
            )
    return out
