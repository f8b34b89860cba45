"""What the watcher does to log segments: read what is new, shadow it, put back what an editor dropped.

For each segment the keeper holds a :class:`Track` (a :class:`~nexus.ledger.marks.Mark` after its last
entry, and a hash of the bytes up to it): appends are read from the mark on; anything else that
changed the bytes (a mark that no longer holds, a prefix whose hash differs) makes it read the
segment whole. What it finds:

* **new entries** are verified (Ed25519, the author's key) and copied to the shadow (``shadow.py``);
* **entries gone from a segment** (an editor saved its stale buffer over appends made meanwhile, a
  truncation, a deleted file) are put back verbatim from the shadow, in id order, with a visible
  notice, once the file has been quiet for ``QUIET_SECONDS`` (so it never races an editor that is
  still writing);
* **a changed entry** (text differs from its shadow copy) is a history edit: a notice names it once;
* **a person's text** below the last entry of the newest segment, unchanged for ``settle`` seconds,
  becomes an entry of the vault's human identity, signed on the person's behalf (``via: "watcher"``,
  channel ``obsidian``, type ``note``), and is then cut from where it was typed;
* **a torn tail** that stays quiet is quarantined, as the next append would.

Every write to a segment goes through ``log.py`` (its lock, its durable write, its tail state); the
derived coordination state is moved with a rewrite (``coordination.relocate``) instead of rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import NexusError
from ..keys.trust import Keyring
from ..ledger import log
from ..ledger.marks import START, Mark
from ..ledger.shadow import (
    NOTICE_PREFIX,
    Shadow,
    insertions,
    record_notice,
    render_notice,
    sha,
    shifted_scan,
    splice,
)
from ..records import Located, Notice, ShadowCopy
from ..storage import entries, markers, segments
from ..storage.vault import Vault
from ..sync import copies
from ..team import coordination
from ..trust import Trust

QUIET_SECONDS = 0.5  # a segment must be unchanged this long before entries are put back into it
EMPTY_QUIET_SECONDS = 5.0  # ... and an empty one this long (an in-place save between truncate and write)
PERSON_CHANNEL = "obsidian"
PERSON_TYPE = "note"
RECENT_SECONDS = 2.0  # a file written this recently may be written again without its mtime moving


@dataclass
class Track:
    """What the watcher knows of one segment: its mark (where its last entry ends, and the size read)
    and a hash of the bytes up to the mark, so appends are read incrementally and any other change is
    caught."""

    inode: int
    mtime_ns: int
    mark: Mark
    digest: Any  # hashlib sha256 object over data[: mark.offset]
    verified: tuple[int, int, int] | None = None  # (inode, size, mtime) when the prefix last matched


class SegmentKeeper:
    """The watcher's state for log segments, and what it does to them (see the module docstring)."""

    def __init__(
        self,
        vault: Vault,
        keys_home: Path,
        *,
        ack_types: tuple[str, ...],
        race_window: float,
        settle_seconds: float,
        emit: Callable[[dict[str, Any]], None],
    ) -> None:
        self.vault = vault
        self.keys_home = keys_home
        self.trust = Trust(keys_home)  # (the pins live beside the keys)
        self.ack_types = ack_types
        self.race_window = race_window
        self.settle = settle_seconds
        self.emit = emit
        self.shadow = Shadow.load(vault)
        self.tracks: dict[str, Track] = {}
        self.ring: Keyring | None = None  # the keys this machine trusts (trust.py), old ones included
        self._ring_loaded = 0.0
        self.person_seen: dict[tuple[str, str], float] = {}
        self.deadlines: dict[str, float] = {}  # file -> monotonic time to check it again
        self.edits_path = vault.state / "watch" / "edits.json"
        self.edits = self._load_edits()
        self.missing_since: dict[str, float] = {}
        self.warned: set[tuple[str, str]] = set()
        self.last_full: dict[str, tuple[tuple[int, int, int], bytes, segments.Scan]] = {}
        self.quiet_emit = False  # the first pass reports a summary instead of one line per entry
        self.new_count = 0

    # ------------------------------------------------------------ helpers
    def _load_edits(self) -> dict[str, str]:
        try:
            data = json.loads(self.edits_path.read_bytes())
            return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
        except (FileNotFoundError, ValueError):
            return {}

    def _ring(self, force: bool = False) -> Keyring:
        if force and time.monotonic() - self._ring_loaded < 1.0:
            force = False
        if force or self.ring is None:
            from ..keys import trust

            self.ring = trust.load(self.vault, self.keys_home)
            self._ring_loaded = time.monotonic()
        return self.ring

    def _verified(self, located: Located) -> bool:
        """Signed by its author with a key this machine trusts for it (an entry signed before a key
        rotation too: the old key stays pinned), in its canonical encoding: only such an entry is
        shadowed (and restored)."""
        from ..ledger.check import check_entry

        if located.verdict is not None and located.verdict.startswith("non-canonical"):
            return False
        status, problem = check_entry(located, self._ring())
        if status != "ok":  # (an identity added since the keyring was read: read it again, once)
            status, problem = check_entry(located, self._ring(force=True))
        return status == "ok" and problem is None

    def _shadow_new(self, data: bytes, base: int, found: list[Located]) -> list[Located]:
        """Verify and shadow entries the shadow does not hold yet; return them."""
        fresh = [loc for loc in found if loc.entry.id not in self.shadow.copies]
        copies = []
        verified = []
        for loc in fresh:
            if self._verified(loc):
                text = data[loc.offset - base : loc.end_offset - base].decode("utf-8", errors="replace")
                copies.append(ShadowCopy(loc.entry.id, loc.entry.agent, loc.file, sha(text), text))
                verified.append(loc)
        self.shadow.add(copies)
        for loc in verified:
            self.new_count += 1
            if not self.quiet_emit:
                e = loc.entry
                self.emit(
                    {
                        "event": "entry",
                        "id": e.id,
                        "agent": e.agent,
                        "type": e.type,
                        "summary": e.summary,
                        "file": loc.file,
                        "line": loc.line_start,
                    }
                )
                if e.type in self.ack_types:
                    from ..keys.roster import agents

                    owers = [a for a in agents(self.vault) if a != e.agent]
                    if owers:
                        self.emit({"event": "owed", "id": e.id, "by": owers})
        return verified

    # ------------------------------------------------------------ segments
    def check_segment(self, path: Path, *, full: bool = False) -> bool:
        """Bring one segment up to date; True when it changed anything the derived state depends on."""
        rel = f"log/{path.name}"
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self.tracks.pop(rel, None)
            return self._restore(path, rel) if self.shadow.ids(rel) else False
        track = self.tracks.get(rel)
        if track is not None and not full and st.st_ino == track.inode and track.mark.holds(path):
            if track.mark.unchanged(st.st_size) and st.st_mtime_ns == track.mtime_ns:
                return False
            return self._incremental(path, rel, track, st)
        return self._full(path, rel, st)

    def _incremental(self, path: Path, rel: str, track: Track, st: os.stat_result) -> bool:
        data, result = track.mark.read(path, rel)
        if result.broken:
            return self._full(path, rel, st)
        if result.torn is not None:
            self._torn_tail(path, rel, st)
        start = track.mark.offset
        new = self._shadow_new(data, start, result.entries)
        if result.entries:
            track.digest.update(data[: result.entries[-1].end_offset - start])
        track.mark = track.mark.after(result, st.st_size)
        track.mtime_ns = st.st_mtime_ns
        self._person_text(path, rel, data, start, track.mark.offset, result, st)
        return bool(new)

    def _read_scan(self, path: Path, rel: str) -> tuple[bytes, segments.Scan, tuple[int, int, int] | None]:
        """The segment's bytes and scan; the last one is reused while the file's stamp is unchanged
        (a big segment is parsed once per change, not once per look)."""
        before = _stamp(path)
        cached = self.last_full.get(rel)
        if cached is not None and before is not None and cached[0] == before:
            return cached[1], cached[2], before
        data = path.read_bytes()
        result = segments.scan(data, rel)
        if before is not None and _stamp(path) == before:
            self.last_full[rel] = (before, data, result)  # kept only while a restore waits
            return data, result, before
        self.last_full.pop(rel, None)
        return data, result, None

    def _full(self, path: Path, rel: str, st: os.stat_result) -> bool:
        data, result, _stamp_read = self._read_scan(path, rel)
        new = self._shadow_new(data, 0, result.entries)
        present = {loc.entry.id for loc in result.entries}
        broken = {b.entry_id for b in result.broken if b.entry_id}
        missing = [i for i in self.shadow.ids(rel) if i not in present and i not in broken]
        if missing and result.torn is None:
            self.tracks.pop(rel, None)
            return self._restore(path, rel) or bool(new)
        self.last_full.pop(rel, None)
        if result.torn is not None:
            self._torn_tail(path, rel, st)
        self._history_edits(path, rel, data, result)
        self._leftover_text(path, rel, result)
        end = self._adopt(rel, st, data, result)
        self._person_text(path, rel, data, 0, end, result, st)
        return bool(new)

    def _adopt(self, rel: str, st: os.stat_result, data: bytes, result: segments.Scan) -> int:
        """Remember a segment just read in full (its bytes ``data``); return where its last entry ends."""
        mark = START.after(result, st.st_size)
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        self.tracks[rel] = Track(
            st.st_ino,
            st.st_mtime_ns,
            mark,
            hashlib.sha256(data[: mark.offset]),
            stamp if _settled(stamp) else None,
        )
        return mark.offset

    def verify_prefix(self, path: Path) -> bool:
        """The periodic check: the bytes up to the last known entry are still what was read."""
        rel = f"log/{path.name}"
        track = self.tracks.get(rel)
        if track is None:
            return False
        stamp = _stamp(path)
        if stamp is None:
            return False
        if stamp == track.verified:  # not touched since the bytes were last checked
            return True
        try:
            with open(path, "rb") as f:
                prefix = f.read(track.mark.offset)
        except FileNotFoundError:
            return False
        ok = bool(hashlib.sha256(prefix).digest() == track.digest.digest())
        if ok:  # (a stamp read while the mtime was fresh proves nothing: look again next time)
            track.verified = stamp if _settled(stamp) else None
        return ok

    def _history_edits(self, path: Path, rel: str, data: bytes, result: segments.Scan) -> None:
        from ..ledger import renames

        edited: list[tuple[str, str]] = []
        for loc in result.entries:
            copy = self.shadow.copies.get(loc.entry.id)
            if copy is not None:
                text = data[loc.offset : loc.end_offset].decode("utf-8", errors="replace")
                current = sha(text)
                if current != copy.sha and self.edits.get(copy.id) != current:
                    moved = renames.renamed_only(self.vault, copy.text, text)
                    if moved is not None:  # Obsidian updated links to a renamed note: not an edit
                        self.edits[copy.id] = current
                        self.emit(
                            {
                                "event": "renamed-link",
                                "id": copy.id,
                                "file": rel,
                                "links": [list(m) for m in moved],
                            }
                        )
                        from ..storage import durable

                        durable.replace(self.edits_path, json.dumps(self.edits).encode(), durable=False)
                        continue
                    edited.append((copy.id, current))
        for b in result.broken:
            if b.entry_id and b.entry_id in self.shadow.copies:
                current = sha(b.text)
                if current != self.shadow.copies[b.entry_id].sha and self.edits.get(b.entry_id) != current:
                    edited.append((b.entry_id, current))
        if not edited:
            return
        note = rel[:-3]
        ts = now()
        for entry_id, current in edited:
            notice_id = entries.new_id()
            copy = self.shadow.copies[entry_id]
            message = (
                f"the text of entry {entry_id} by {copy.agent} was changed after it was signed "
                f"(a history edit)"
            )
            text = render_notice(
                notice_id,
                f"nexus watch: history edit of {entry_id}",
                [
                    f"{message}: [[{note}#^{entry_id}]] ({ts}).",
                    f"The original is kept in `.nexus/shadow/`: `nexus log recover {entry_id}` prints it,"
                    f" `nexus log recover {entry_id} --restore` puts it back.",
                ],
            )
            log.append_notice(self.vault, path, text)
            record_notice(self.vault, Notice(notice_id, "history-edit", rel, (entry_id,), ts, message))
            self.edits[entry_id] = current
            self.emit({"event": "history-edit", "id": entry_id, "file": rel, "notice": notice_id})
        from ..storage import durable

        durable.replace(self.edits_path, json.dumps(self.edits).encode(), durable=False)

    def _restore(self, path: Path, rel: str) -> bool:
        """Put entries the shadow holds but the segment lost back in place, under the log lock."""
        notice_id = entries.new_id()
        ts = now()
        with log.locked(self.vault):
            # Never race a writer that does not take the lock (an editor saving in place): act only
            # on a file that stayed the same while it was read and has been quiet for a while.
            before = _stamp(path)
            exists = before is not None
            if exists:
                data, result, after = self._read_scan(path, rel)
            else:
                data = segments.preamble(path.stem).encode()
                result, after = segments.scan(data, rel), None
            if before is None:
                first = self.missing_since.setdefault(rel, time.monotonic())
                quiet_for = time.monotonic() - first
            else:
                self.missing_since.pop(rel, None)
                quiet_for = time.time() - before[2] / 1e9 if before == after else 0.0
            # An empty file is what an editor's in-place save looks like between its truncate and its
            # write: give it much longer before calling it a truncation.
            needed = EMPTY_QUIET_SECONDS if before is not None and before[1] == 0 else QUIET_SECONDS
            if before is not None and before == after and needed == QUIET_SECONDS and quiet_for < needed:
                # Agents cannot write while we hold the lock, so a file that stays the same for the
                # rest of the quiet time is not being saved by anyone: wait here (agents appending
                # all the time would otherwise keep the file from ever looking quiet).
                time.sleep(needed - quiet_for)
                quiet_for = needed if _stamp(path) == before else 0.0
            if git_busy(self.vault):  # git is writing the work tree (a merge, a pull): wait it out
                quiet_for = 0.0
            if after != before or quiet_for < needed:
                self.deadlines[rel] = time.monotonic() + max(0.0, needed - quiet_for) + 0.05
                return False
            self.missing_since.pop(rel, None)
            present = {loc.entry.id for loc in result.entries}
            present |= {b.entry_id for b in result.broken if b.entry_id}
            missing = [self.shadow.copies[i] for i in self.shadow.ids(rel) if i not in present]
            if result.torn is not None or not missing:
                self.last_full.pop(rel, None)
                return False
            note = rel[:-3]
            links = ", ".join(f"[[{note}#^{c.id}]]" for c in missing[:20])
            more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
            kind = "restored" if exists else "recreated"
            why = "an editor saved an older copy, or it was cut" if exists else "the file was deleted"
            message = (
                f"{len(missing)} entr{'y' if len(missing) == 1 else 'ies'} missing from {rel} "
                f"({why}) put back verbatim from the shadow"
            )
            notice = render_notice(
                notice_id,
                f"nexus watch {kind} {len(missing)} entr{'y' if len(missing) == 1 else 'ies'}",
                [
                    f"{message} ({ts}): {links}{more}.",
                    "Nothing you wrote was removed; entries are append-only.",
                ],
            )
            inserts = insertions(data, result, missing, notice)
            restored = splice(data, inserts)
            if _stamp(path) != before:  # changed under us after all: look again later
                self.deadlines[rel] = time.monotonic() + QUIET_SECONDS
                return False
            new_scan = shifted_scan(data, result, inserts, rel)  # (not parsed again: seconds on 100k)
            back = {c.id for c in missing}
            added = [loc for loc in new_scan.entries if loc.entry.id in back]
            log.replace_segment(self.vault, path, data, restored, added)
            self._relocate(rel, restored, new_scan)
            new_st = os.stat(path)  # still under the lock: these bytes are the file's
        self.last_full.pop(rel, None)
        ids = tuple(c.id for c in missing)
        record_notice(self.vault, Notice(notice_id, kind, rel, ids, ts, message))
        self.emit({"event": kind, "file": rel, "entries": list(ids), "notice": notice_id})
        # What was just written is known: no need to read and parse the segment again.
        end = self._adopt(rel, new_st, restored, new_scan)
        self._person_text(path, rel, restored, 0, end, new_scan, new_st)
        return True

    # ------------------------------------------------------------ a person's text
    def _person_text(
        self,
        path: Path,
        rel: str,
        data: bytes,
        base: int,
        last_end: int,
        result: segments.Scan,
        st: os.stat_result,
    ) -> None:
        """``data`` holds the segment's bytes from offset ``base``; text after the last entry
        (``last_end``) that is not a notice is a person's."""
        runs = [s for s in result.stray if s.offset >= last_end and not s.text.startswith(NOTICE_PREFIX)]
        if not runs or any(loc.offset > runs[0].offset for loc in result.entries):
            return
        files = log.segment_files(self.vault)
        if not files or files[-1][1].name != path.name:
            return  # text at the end of an older month stays put (verify shows it as stray text)
        if any(
            s.text.startswith(NOTICE_PREFIX)
            for s in result.stray
            if runs[0].offset < s.offset < runs[-1].offset
        ):
            text = "\n\n".join(s.text for s in runs)
        else:
            text = data[runs[0].offset - base : runs[-1].end_offset - base].decode("utf-8", errors="replace")
        text = text.strip("\n")
        if not text.strip():
            return
        key = (rel, sha(text))
        now = time.monotonic()
        first = self.person_seen.setdefault(key, now)
        settled = now - first >= self.settle or time.time() - st.st_mtime >= self.settle
        if not settled:
            self.deadlines[rel] = first + self.settle + 0.05
            return
        self._sign_person(path, rel, text)
        self.person_seen.pop(key, None)

    def _torn_tail(self, path: Path, rel: str, st: os.stat_result) -> None:
        """A torn tail (a writer killed mid-write, zeros or garbage a crash left) that stays quiet is
        moved to quarantine, as the next append would; never signed as a person's text."""
        files = log.segment_files(self.vault)
        quiet = time.time() - st.st_mtime >= QUIET_SECONDS
        if not quiet or not files or files[-1][1].name != path.name:
            self.deadlines[rel] = time.monotonic() + QUIET_SECONDS
            return
        try:
            moved = log.repair_tail(self.vault, self.trust)
        except (OSError, NexusError) as err:
            self.emit({"event": "error", "file": rel, "message": f"could not quarantine a torn tail: {err}"})
            return
        if moved:
            self.tracks.pop(rel, None)
            self.deadlines[rel] = time.monotonic()
            self.emit({"event": "quarantined", "file": rel, "moved": moved})

    def _sign_person(self, path: Path, rel: str, text: str) -> None:
        from ..keys.identity import load_signer
        from ..ledger.check import looks_like_framing, printable
        from ..storage.text import SUMMARY_MAX, check_body, make_visible

        human = self.vault.human()
        warned = (rel, sha(text))
        if markers.has_edge_line(text.encode("utf-8", "replace")) or markers.regions(path.read_bytes()):
            # a plain `git merge` left conflict markers: nothing near them is a person's text
            if warned not in self.warned:
                self.warned.add(warned)
                message = "git conflict markers in the segment: nothing signed (`nexus git resolve`)"
                self.emit({"event": "error", "file": rel, "message": message})
            return
        if looks_like_framing(text) or not printable(text):
            # a damaged or partial copy of an entry, or bytes nobody types: never a person's words
            if warned not in self.warned:
                self.warned.add(warned)
                self.emit(
                    {
                        "event": "error",
                        "file": rel,
                        "message": "text below the last entry is a "
                        "damaged copy of an entry or not printable: not signed (`nexus verify` names "
                        "it; delete it once checked)",
                    }
                )
            return
        if human is None:
            if warned not in self.warned:
                self.warned.add(warned)
                self.emit(
                    {
                        "event": "error",
                        "file": rel,
                        "message": "a person's text is waiting, but the vault has no human identity "
                        "(run `nexus agent add NAME --human`)",
                    }
                )
            return
        first = next((line.strip() for line in text.split("\n") if line.strip()), "note")
        summary = make_visible(first.lstrip("#>-* ").strip() or first)
        if len(summary) > SUMMARY_MAX:
            summary = summary[: SUMMARY_MAX - 1] + "…"
        try:
            body = check_body(text)
            signer = load_signer(self.vault, self.keys_home, human)
            result = log.append(
                self.vault,
                signer,
                channel=PERSON_CHANNEL,
                type=PERSON_TYPE,
                summary=summary,
                body=body,
                via="watcher",
                agent=human,
                trust=self.trust,
            )
        except NexusError as err:
            if warned not in self.warned:
                self.warned.add(warned)
                self.emit(
                    {"event": "error", "file": rel, "message": f"could not sign a person's text: {err}"}
                )
            return
        entry = result.located.entry
        self._cut_signed_text(path, rel, entry.id, text)
        self.emit({"event": "person", "id": entry.id, "agent": human, "file": rel, "summary": entry.summary})

    def _cut_signed_text(self, path: Path, rel: str, entry_id: str, text: str) -> None:
        """The entry ``entry_id`` holds a person's ``text`` now: take the text out of where it was
        typed (only runs of text right before that entry, and only if they are part of it)."""
        with log.locked(self.vault):
            data = path.read_bytes()
            scan = segments.scan(data, rel)
            cut: list[tuple[int, int]] = []
            for s in scan.stray:
                if s.text.startswith(NOTICE_PREFIX):
                    continue
                later = [loc for loc in scan.entries if loc.offset > s.offset]
                if later and later[0].entry.id == entry_id and s.text.strip("\n") in text:
                    stop = s.end_offset
                    while data[stop : stop + 1] == b"\n" and stop < later[0].offset:
                        stop += 1
                    cut.append((s.offset, stop))
            if cut:
                self._relocate(rel, log.cut_text(self.vault, path, data, cut))
        self.tracks.pop(rel, None)
        self.deadlines[rel] = time.monotonic()

    def _relocate(self, rel: str, data: bytes, result: segments.Scan | None = None) -> segments.Scan:
        """Tell the derived state where the entries of a segment the watcher rewrote are now (so it
        need not rebuild from the whole log). Called under the log lock, right after the rewrite.
        ``result``: the scan of ``data`` when the caller knows it."""
        result = result if result is not None else segments.scan(data, rel)
        coordination.relocate(self.vault, self.ack_types, self.race_window, rel, result.entries, len(data))
        return result

    def _leftover_text(self, path: Path, rel: str, result: segments.Scan) -> None:
        """A person's text still in front of the entry that signed it (the watcher died between
        signing and removing it): remove it now."""
        for s in result.stray:
            if s.text.startswith(NOTICE_PREFIX):
                continue
            later = [loc for loc in result.entries if loc.offset > s.offset]
            if (
                later
                and later[0].entry.via == "watcher"
                and later[0].entry.body
                and (s.text.strip("\n").strip() and s.text.strip("\n") in later[0].entry.body)
            ):
                self._cut_signed_text(path, rel, later[0].entry.id, later[0].entry.body)
                return

    # ------------------------------------------------------------ passes
    def segment_paths(self) -> list[Path]:
        paths = {path for _, path in log.segment_files(self.vault)}
        for rel in self.shadow.by_segment:  # segments that were deleted
            paths.add(self.vault.root / rel)
        return sorted(paths)

    def import_copies(self) -> bool:
        """Import the entries of conflict copies file-sync tools left in ``log/``, then archive them
        (``copies.py``); a copy written in the last second is looked at again shortly after."""
        found = copies.find(self.vault)
        if not found:
            return False
        if not all(copies.settled(p) for p in found):
            self.deadlines["log/" + found[0].name] = time.monotonic() + copies.SETTLE_SECONDS
        done = copies.import_all(self.vault, self.trust, only_settled=True)
        for item in done:
            self.emit({"event": "imported", **item.to_json()})
            self.check_segment(self.vault.root / item.segment, full=True)
        return bool(done)


def git_busy(vault: Vault) -> bool:
    """A git command holds the index of the vault's repository (it may be rewriting segments)."""
    for folder in (vault.root, *vault.root.parents):
        git = folder / ".git"
        if git.is_dir():
            return (git / "index.lock").exists()
        if git.exists():  # a worktree's .git file: its index lock lives elsewhere; assume idle
            return False
    return False


def _settled(stamp: tuple[int, int, int]) -> bool:
    """A segment stamp (inode, size, mtime_ns) old enough that any later write changes it."""
    return time.time() - stamp[2] / 1e9 > RECENT_SECONDS


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
