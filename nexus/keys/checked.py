"""Signatures this machine has already checked: a memo of Ed25519 verification, kept beside the pins.

Every reader checks each entry it shows (``ledger/check.py``), so an agent's brief checked the same few
hundred unread entries again at every turn: an Ed25519 verification costs ~0.1 ms, and loading the
signature library ~10 ms of a ~60 ms interpreter start. A verification is a pure function of the
public key, the signature and the signed bytes, so its "valid" answers can be remembered.

``<NEXUS_HOME>/checked-signatures``: 16-byte digests, one after another, each the first half of
SHA-256 over ``public key NUL signature NUL signed bytes``. Only valid signatures are remembered; a
changed byte anywhere gives another digest, so an edited or forged entry is checked again (and fails).
The file lives outside the vault, beside the pins (``trust.py``), because whoever can write it can
make a reader accept a signature: the same power as editing the pins. The vault itself holds nothing
of it. It is derived: deleting it costs time, never a verdict. ``nexus verify`` (incremental and
``--full``) never consults it: a verification checks every signature it covers itself.

Bounded: the newest ``KEEP`` digests are kept (once the file holds twice as many it is rewritten with
the newest half), so reading it costs well under a millisecond. Appends are small single writes with
O_APPEND; a torn or garbled record only misaligns what follows it into digests that match nothing
(a 2^-128 chance), so nothing is locked.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

FILE = "checked-signatures"
SIZE = 16  # bytes of a digest
KEEP = 8192  # digests kept (128 KB)


def digest(public_key: str, signature: str, data: bytes) -> bytes:
    """What is remembered of one valid signature."""
    h = hashlib.sha256(public_key.encode("ascii", "replace"))
    h.update(b"\0" + signature.encode("ascii", "replace") + b"\0")
    h.update(data)
    return h.digest()[:SIZE]


class Memo:
    """The remembered valid signatures of one machine (``home``: its pins folder), read when first
    asked; :meth:`save` appends what this process verified since. In memory too it holds at most
    ``2 * KEEP`` digests, the newest (a long-running server checks every entry it is asked about)."""

    def __init__(self, home: Path) -> None:
        self.path = home / FILE
        self._known: dict[bytes, None] | None = None  # (insertion order: oldest first)
        self._records = 0
        self._new: list[bytes] = []

    def known(self, key: bytes) -> bool:
        if self._known is None:
            self._known = self._load()
        return key in self._known

    def add(self, key: bytes) -> None:
        if self._known is None:
            self._known = self._load()
        if key not in self._known:
            self._known[key] = None
            self._new.append(key)
            if len(self._known) > 2 * KEEP:
                for old in list(self._known)[:KEEP]:
                    del self._known[old]

    def _load(self) -> dict[bytes, None]:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except OSError:  # (none yet, or unreadable: everything is checked)
            return {}
        self._records = len(data) // SIZE
        return dict.fromkeys(data[i : i + SIZE] for i in range(0, self._records * SIZE, SIZE))

    def save(self) -> None:
        """Append the digests verified since the last save (compacting when the file is too big).
        Never raises: a memo that cannot be written only costs the next reader time."""
        new, self._new = self._new, []
        if not new:
            return
        try:
            if self._records + len(new) > 2 * KEEP:
                self._compact(new)
                return
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, b"".join(new))
            finally:
                os.close(fd)
            self._records += len(new)
        except OSError:
            pass

    def _compact(self, new: list[bytes]) -> None:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except OSError:
            data = b""
        records = len(data) // SIZE
        old = data[max(0, records - KEEP) * SIZE : records * SIZE]
        keep = (old + b"".join(new))[-KEEP * SIZE :]
        tmp = self.path.with_name(f"{FILE}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, keep)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)  # (no fsync: derived; a lost memo costs time only)
        self._records = len(keep) // SIZE
