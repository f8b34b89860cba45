"""The shadow: a durable copy of every verified log entry, and the notices the watcher writes.

``.nexus/shadow/SEGMENT.jsonl`` holds one JSON line per entry the watcher has seen with a valid
signature: ``{"id", "agent", "file", "sha", "text"}`` where ``text`` is the entry's bytes from its
begin line to its end line, exactly as first seen. Lines are only ever appended (fsynced), so the
original of an entry survives any later edit of the segment. From it the watcher restores entries an
editor's whole-file save dropped (re-inserted verbatim, in id order, so chains and signatures stay
valid) and ``nexus log recover ID`` prints or puts back an entry's original.

A *notice* is a visible block the watcher writes into a segment, outside any entry::

    %% nexus:notice 01KB7Q… %%
    > [!warning] nexus watch restored 2 entries an editor's save had dropped
    > … [[log/2026-11#^01KB…]] …
    %% nexus:notice-end %%

Obsidian hides the two ``%%`` lines and shows the callout. ``verify`` reports each notice as a
warning (kind ``notice``). Every notice is also recorded in ``.nexus/notices.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

# records.Notice and records.ShadowCopy are named through the package: their family loads when a copy
# or a notice is first read or written, not with every reader of the log
from .. import records
from ..errors import NotFoundError
from ..storage import durable, entries, segments
from ..storage.vault import Vault

NOTICE_PREFIX = "%% nexus:notice "
NOTICE_END = "%% nexus:notice-end %%"
NOTICES_FILE = "notices.jsonl"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Shadow:
    """The shadow, loaded in memory (id -> copy), with a durable append of new copies."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.folder = vault.state / "shadow"
        self.copies: dict[str, records.ShadowCopy] = {}
        self.by_segment: dict[str, list[str]] = {}

    @classmethod
    def load(cls, vault: Vault) -> Shadow:
        shadow = cls(vault)
        try:
            names = sorted(os.listdir(shadow.folder))
        except FileNotFoundError:
            names = []
        for name in names:
            if not name.endswith(".jsonl"):
                continue
            with open(shadow.folder / name, "rb") as f:
                for raw in f:
                    try:
                        rec = json.loads(raw)
                        copy = records.ShadowCopy(
                            rec["id"], rec["agent"], rec["file"], rec["sha"], rec["text"]
                        )
                    except (ValueError, KeyError, TypeError):
                        continue  # a torn last line (killed mid-write): that entry is shadowed again
                    shadow._index(copy)
        return shadow

    def _index(self, copy: records.ShadowCopy) -> None:
        if copy.id in self.copies:
            return
        self.copies[copy.id] = copy
        self.by_segment.setdefault(copy.file, []).append(copy.id)

    def add(self, copies: list[records.ShadowCopy]) -> None:
        """Append new copies durably (one fsync per segment file), then index them."""
        fresh = [c for c in copies if c.id not in self.copies]
        by_file: dict[str, list[records.ShadowCopy]] = {}
        for copy in fresh:
            by_file.setdefault(copy.file, []).append(copy)
        for file, group in by_file.items():
            self.folder.mkdir(parents=True, exist_ok=True)
            data = b"".join(json.dumps(c.to_json(), ensure_ascii=False).encode() + b"\n" for c in group)
            path = self.folder / (Path(file).stem + ".jsonl")
            _append_whole_lines(path, data)
        for copy in fresh:
            self._index(copy)

    def ids(self, file: str) -> list[str]:
        return sorted(self.by_segment.get(file, []))


def _append_whole_lines(path: Path, data: bytes) -> None:
    """Append, first finishing a line a killed writer left without its newline."""
    try:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                data = b"\n" + data
    except (FileNotFoundError, OSError):
        pass
    durable.append(path, data)


# ------------------------------------------------------------------ splicing entries back


def text_of(data: bytes, start: int, end: int) -> str:
    return data[start:end].decode("utf-8", errors="replace")


def insert_entries(
    data: bytes, scan: segments.Scan, missing: list[records.ShadowCopy], notice: str | None
) -> bytes:
    """``data`` with each missing entry put back where its id belongs (before the first entry with a
    greater id, else after the last entry, before any trailing text), then ``notice`` after the last
    one restored."""
    return splice(data, insertions(data, scan, missing, notice))


Insertions = list[tuple[int, bytes]]  # (offset in the old bytes, bytes put there), by offset


def splice(data: bytes, inserts: Insertions) -> bytes:
    out = bytearray()
    prev = 0
    for pos, blob in inserts:
        out += data[prev:pos]
        out += blob
        prev = pos
    out += data[prev:]
    return bytes(out)


def insertions(
    data: bytes, scan: segments.Scan, missing: list[records.ShadowCopy], notice: str | None
) -> Insertions:
    """Where :func:`insert_entries` puts each missing entry (and the notice), without doing it."""
    anchors: list[tuple[str, int, int]] = [(loc.entry.id, loc.offset, loc.end_offset) for loc in scan.entries]
    anchors += [(b.entry_id, b.offset, b.end_offset) for b in scan.broken if b.entry_id]
    anchors.sort(key=lambda a: a[1])
    inserts: dict[int, list[bytes]] = {}
    last_pos = None
    for copy in sorted(missing, key=lambda c: c.id):
        pos = next((start for ident, start, _ in anchors if ident > copy.id), None)
        blob = copy.text.encode("utf-8") + b"\n"
        if pos is None:
            pos = anchors[-1][2] if anchors else _after_preamble(data, scan)
            blob = b"\n" + copy.text.encode("utf-8")
            if data[pos : pos + 1] != b"\n":
                blob += b"\n"
        inserts.setdefault(pos, []).append(blob)
        last_pos = pos
    if notice is not None and last_pos is not None:
        inserts[last_pos].append(
            (b"" if inserts[last_pos][-1].endswith(b"\n\n") else b"\n") + notice.encode() + b"\n"
        )
    return [(pos, b"".join(inserts[pos])) for pos in sorted(inserts)]


def shifted_scan(data: bytes, scan: segments.Scan, inserts: Insertions, file: str) -> segments.Scan:
    """The scan of ``splice(data, inserts)`` from ``scan`` (of ``data``) without parsing the whole file
    again: what lies at or after an insertion moves by its bytes and lines; only the inserted bytes are
    scanned. (A restore on a large segment otherwise parses it twice.)"""
    import bisect
    import dataclasses

    positions = [pos for pos, _ in inserts]
    moved_bytes, moved_lines = [0], [0]
    for _, blob in inserts:
        moved_bytes.append(moved_bytes[-1] + len(blob))
        moved_lines.append(moved_lines[-1] + blob.count(b"\n"))

    def start(offset: int) -> tuple[int, int]:  # insertions at or before a start come before it
        i = bisect.bisect_right(positions, offset)
        return moved_bytes[i], moved_lines[i]

    def end(offset: int) -> tuple[int, int]:  # ... an insertion at an end offset comes after it
        i = bisect.bisect_left(positions, offset)
        return moved_bytes[i], moved_lines[i]

    out = segments.Scan(torn=scan.torn)
    for loc in scan.entries:
        (b0, l0), (b1, l1) = start(loc.offset), end(loc.end_offset)
        out.entries.append(
            dataclasses.replace(
                loc,
                offset=loc.offset + b0,
                line_start=loc.line_start + l0,
                end_offset=loc.end_offset + b1,
                line_end=loc.line_end + l1,
            )
        )
    for stray in scan.stray:
        (b0, l0), (b1, l1) = start(stray.offset), end(stray.end_offset)
        out.stray.append(
            dataclasses.replace(
                stray,
                offset=stray.offset + b0,
                line_start=stray.line_start + l0,
                end_offset=stray.end_offset + b1,
                line_end=stray.line_end + l1,
            )
        )
    for broken in scan.broken:
        (b0, l0), (b1, _l1) = start(broken.offset), end(broken.end_offset)
        out.broken.append(
            dataclasses.replace(
                broken, offset=broken.offset + b0, line=broken.line + l0, end_offset=broken.end_offset + b1
            )
        )
    line, counted = 1, 0
    for i, (pos, blob) in enumerate(inserts):
        line += data.count(b"\n", counted, pos)
        counted = pos
        part = segments.scan(blob, file, offset=pos + moved_bytes[i], line=line + moved_lines[i])
        out.entries += part.entries
        out.stray += part.stray
        out.broken += part.broken
    out.entries.sort(key=lambda loc: loc.offset)
    out.stray.sort(key=lambda s: s.offset)
    out.broken.sort(key=lambda b: b.offset)
    b_end, l_end = end(scan.end_offset + 1)
    out.end_offset, out.end_line = scan.end_offset + b_end, scan.end_line + l_end
    return out


def _after_preamble(data: bytes, scan: segments.Scan) -> int:
    """Where entries start in a segment with none left: after the marker line (or at the end)."""
    marker = segments.SEGMENT_MARKER_PREFIX.encode()
    idx = data.find(marker)
    if idx < 0:
        return len(data)
    nl = data.find(b"\n", idx)
    return len(data) if nl < 0 else nl + 1


def render_notice(notice_id: str, title: str, lines: list[str]) -> str:
    body = "\n".join(f"> {line}" for line in lines)
    return f"{NOTICE_PREFIX}{notice_id} %%\n> [!warning] {title}\n{body}\n{NOTICE_END}\n"


def record_notice(vault: Vault, notice: records.Notice) -> None:
    _append_whole_lines(
        vault.state / NOTICES_FILE, json.dumps(notice.to_json(), ensure_ascii=False).encode() + b"\n"
    )


def notices(vault: Vault) -> list[records.Notice]:
    out = []
    try:
        with open(vault.state / NOTICES_FILE, "rb") as f:
            for raw in f:
                try:
                    r = json.loads(raw)
                    out.append(
                        records.Notice(
                            r["id"], r["kind"], r["file"], tuple(r["entries"]), r["ts"], r["message"]
                        )
                    )
                except (ValueError, KeyError, TypeError):
                    continue
    except FileNotFoundError:
        pass
    return out


def new_notice_id() -> str:
    return entries.new_id()


# ------------------------------------------------------------------ recovery


def original(vault: Vault, entry_id: str) -> records.ShadowCopy:
    """The shadowed original of an entry; NotFoundError when the watcher never saw it verified."""
    if not entries.ID_RE.fullmatch(entry_id):
        from ..errors import InputError

        raise InputError(f"{entry_id!r} is not an entry id (26 characters)")
    copy = Shadow.load(vault).copies.get(entry_id)
    if copy is None:
        raise NotFoundError(
            f"no shadow copy of {entry_id}: `nexus watch` never saw it with a valid signature"
        )
    return copy
