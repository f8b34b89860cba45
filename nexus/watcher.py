"""``nexus watch``: a watchdog observer over the vault that keeps the log whole and the derived state fresh.

What it does on every change it notices, and on a periodic full rescan (the source of truth: inotify
drops events when its queue overflows, an atomic save arrives as a move, a file can vanish):

* **new entries** are verified (Ed25519, the author's key) and copied to the shadow
  (``shadow.py``); the derived coordination state (owed acks, races) is refreshed, and an event line is
  printed (``--json``: one JSON object a line);
* **entries gone from a segment** (an editor saved its stale buffer over appends made meanwhile, a
  truncation, a deleted file) are put back verbatim from the shadow, in id order, with a visible notice;
  the watcher waits until the file has been quiet for ``QUIET_SECONDS`` so it never races an editor that
  is still writing;
* **a changed entry** (text differs from its shadow copy) is a history edit: a notice names it once;
  the original stays in the shadow (``nexus log recover ID [--restore]``); ``verify`` reports it too;
* **a person's text** below the last entry of a segment, outside any entry, unchanged for
  ``settle`` seconds, becomes an entry of the vault's human identity, signed by the watcher on the
  person's behalf (``via: "watcher"``, channel ``obsidian``, type ``note``, the raw text as its body);
  the text is then removed from where it was typed (the entry holds it);
* **the search index**, when one exists, is refreshed in a thread of its own shortly after any note or
  segment changes (``IndexRefresher``), so an append is searchable within about a second; a failing
  refresh is an ``error`` event, never fatal.

Only created/modified/moved/deleted events count (opened/closed ones would let a handler that reads its
note wake itself forever), and a file written in the last ``RECENT_SECONDS`` is compared by content,
not by its stamp alone (two writes within one mtime tick can leave the stamp as it was).

Only one watcher runs per vault: it holds ``.nexus/locks/watch.lock`` (non-blocking; a second one
fails with BusyError). SIGINT and SIGTERM stop it cleanly.

Extension point for other notes: ``register(predicate, callback)``. ``predicate(relpath)`` gets a
vault-relative POSIX path of a Markdown note outside ``log/`` and ``.nexus/``; when it returns True,
``callback(vault, relpath)`` runs in the watcher's thread after the note changes (and once for every
matching note on each start, so callbacks must be idempotent). An exception in a callback is reported
as an ``error`` event and never stops the watcher. Modules that register handlers are listed in
``PLUGIN_MODULES``; the watcher imports them at start so their module-level ``register`` calls run.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import coordination, copies, entries, heartbeat, log, segments
from .errors import BusyError, NexusError
from .records import Identity, Located, Notice, ShadowCopy
from .shadow import NOTICE_PREFIX, Shadow, insertions, record_notice, render_notice, sha, shifted_scan, splice
from .vault import Vault

QUIET_SECONDS = 0.5  # a segment must be unchanged this long before entries are put back into it
EMPTY_QUIET_SECONDS = 5.0  # ... and an empty one this long (an in-place save between truncate and write)
PERSON_CHANNEL = "obsidian"
PERSON_TYPE = "note"
RECENT_SECONDS = 2.0  # a file written this recently may be written again without its mtime moving
INDEX_DELAY = 0.1  # after a change, wait this long for more before refreshing the search index
VERIFY_DELAY = 1.0  # after a segment changes, wait this long for more before verifying what is new
# Only these change a file: watchdog's inotify observer also reports opened/closed events, and a note
# handler that reads its note would otherwise trigger itself again, forever.
CHANGE_EVENTS = frozenset({"created", "modified", "moved", "deleted"})

Predicate = Callable[[str], bool]
Callback = Callable[[Vault, str], None]
_HANDLERS: list[tuple[Predicate, Callback]] = []
PLUGIN_MODULES: tuple[str, ...] = ("nexus.review", "nexus.project_state")  # imported for register()


def register(predicate: Predicate, callback: Callback) -> None:
    """Call ``callback(vault, relpath)`` when a note whose path satisfies ``predicate`` changes."""
    _HANDLERS.append((predicate, callback))


@dataclass
class Track:
    """What the watcher knows of one segment: where its last entry ends and a hash of the bytes up to
    there, so appends are read incrementally and any other change is caught."""

    inode: int
    size: int
    mtime_ns: int
    end: int
    end_line: int
    last_line: bytes
    digest: Any  # hashlib sha256 object over data[:end]
    verified: tuple[int, int, int] | None = None  # (inode, size, mtime) when the prefix last matched


class Watcher:
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
        self.ack_types = ack_types
        self.race_window = race_window
        self.settle = settle_seconds
        self.emit = emit
        self.shadow = Shadow.load(vault)
        self.tracks: dict[str, Track] = {}
        self.identities: dict[str, Identity] = {}
        self._identities_loaded = 0.0
        self.person_seen: dict[tuple[str, str], float] = {}
        self.deadlines: dict[str, float] = {}  # file -> monotonic time to check it again
        self.edits_path = vault.state / "watch" / "edits.json"
        self.edits = self._load_edits()
        # note -> (mtime_ns, size, sha256 of its bytes, whether its mtime was old when it was read)
        self.note_stamps: dict[str, tuple[int, int, str | None, bool]] = {}
        self.missing_since: dict[str, float] = {}
        self.races_known: dict[tuple[str, str], str | None] = {}
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

    def _identities(self, force: bool = False) -> dict[str, Identity]:
        if force and time.monotonic() - self._identities_loaded < 1.0:
            force = False
        if force or not self.identities:
            from .identity import all_identities

            self.identities = all_identities(self.vault)
            self._identities_loaded = time.monotonic()
        return self.identities

    def _verified(self, located: Located) -> bool:
        from .identity import verify_signature

        e = located.entry
        if located.verdict is not None and located.verdict.startswith("non-canonical"):
            return False  # only the canonical encoding of an entry is shadowed (and restored)
        author = self._identities().get(e.agent) or self._identities(force=True).get(e.agent)
        if author is None or e.key != author.key_id:
            return False
        return verify_signature(author.public_key, e.sig, entries.signing_bytes(e))

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
                    from .roster import agents

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
        if track is not None and not full and self._boundary_ok(path, track, st):
            if (st.st_size, st.st_mtime_ns) == (track.size, track.mtime_ns):
                return False
            return self._incremental(path, rel, track, st)
        return self._full(path, rel, st)

    def _boundary_ok(self, path: Path, track: Track, st: os.stat_result) -> bool:
        if st.st_ino != track.inode or st.st_size < track.end:
            return False
        if not track.last_line:
            return True
        with open(path, "rb") as f:
            f.seek(track.end - len(track.last_line))
            return bool(f.read(len(track.last_line)) == track.last_line)

    def _incremental(self, path: Path, rel: str, track: Track, st: os.stat_result) -> bool:
        with open(path, "rb") as f:
            f.seek(track.end)
            data = f.read()
        result = segments.scan(data, rel, offset=track.end, line=track.end_line)
        if result.broken:
            return self._full(path, rel, st)
        if result.torn is not None:
            self._torn_tail(path, rel, st)
        start = track.end
        new = self._shadow_new(data, start, result.entries)
        if result.entries:
            last = result.entries[-1]
            consumed = data[: last.end_offset - start]
            track.digest.update(consumed)
            track.end, track.end_line = last.end_offset, last.line_end + 1
            track.last_line = _last_line(consumed)
        track.size, track.mtime_ns = st.st_size, st.st_mtime_ns
        self._person_text(path, rel, data, start, track.end, result, st)
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
        end, end_line, last_line = 0, 1, b""
        if result.entries:
            last = result.entries[-1]
            end, end_line = last.end_offset, last.line_end + 1
            last_line = _last_line(data[:end])
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        self.tracks[rel] = Track(
            st.st_ino,
            st.st_size,
            st.st_mtime_ns,
            end,
            end_line,
            last_line,
            hashlib.sha256(data[:end]),
            stamp if _settled(stamp) else None,
        )
        return end

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
                prefix = f.read(track.end)
        except FileNotFoundError:
            return False
        ok = bool(hashlib.sha256(prefix).digest() == track.digest.digest())
        if ok:  # (a stamp read while the mtime was fresh proves nothing: look again next time)
            track.verified = stamp if _settled(stamp) else None
        return ok

    def _history_edits(self, path: Path, rel: str, data: bytes, result: segments.Scan) -> None:
        from . import renames

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
                        from . import durable

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
        from .locks import exclusive

        note = rel[:-3]
        ts = _now()
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
            with exclusive(self.vault.lock("log")):
                size = path.stat().st_size
                with open(path, "rb") as f:
                    f.seek(max(0, size - 2))
                    tail = f.read()
                lead = b"" if tail.endswith(b"\n\n") else (b"\n" if tail.endswith(b"\n") else b"\n\n")
                from . import durable

                durable.append(path, lead + text.encode() + b"\n")
            record_notice(self.vault, Notice(notice_id, "history-edit", rel, (entry_id,), ts, message))
            self.edits[entry_id] = current
            self.emit({"event": "history-edit", "id": entry_id, "file": rel, "notice": notice_id})
        from . import durable

        durable.replace(self.edits_path, json.dumps(self.edits).encode(), durable=False)

    def _restore(self, path: Path, rel: str) -> bool:
        """Put entries the shadow holds but the segment lost back in place, under the log lock."""
        from . import durable
        from .locks import exclusive

        notice_id = entries.new_id()
        ts = _now()
        with exclusive(self.vault.lock("log")):
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
            durable.replace(path, restored)
            new_scan = shifted_scan(data, result, inserts, rel)  # (not parsed again: seconds on 100k)
            self._relocate(rel, restored, new_scan)
            back = {c.id for c in missing}
            log.carry_tail_state(
                self.vault, rel, data, restored, [loc for loc in new_scan.entries if loc.entry.id in back]
            )
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
            moved = log.repair_tail(self.vault)
        except (OSError, NexusError) as err:
            self.emit({"event": "error", "file": rel, "message": f"could not quarantine a torn tail: {err}"})
            return
        if moved:
            self.tracks.pop(rel, None)
            self.deadlines[rel] = time.monotonic()
            self.emit({"event": "quarantined", "file": rel, "moved": moved})

    def _sign_person(self, path: Path, rel: str, text: str) -> None:
        from .identity import load_signer
        from .text import SUMMARY_MAX, check_body, make_visible
        from .verify import looks_like_framing, printable

        human = self.vault.human()
        warned = (rel, sha(text))
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
        from . import durable
        from .locks import exclusive

        with exclusive(self.vault.lock("log")):
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
                out = bytearray()
                prev = 0
                for start, stop in cut:
                    out += data[prev:start]
                    prev = stop
                out += data[prev:]
                durable.replace(path, bytes(out))
                self._relocate(rel, bytes(out))
                log.carry_tail_state(self.vault, rel, data, bytes(out), [])
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
        done = copies.import_all(self.vault, only_settled=True)
        for item in done:
            self.emit({"event": "imported", **item.to_json()})
            self.check_segment(self.vault.root / item.segment, full=True)
        return bool(done)

    def full_pass(self) -> None:
        """The periodic rescan: every segment whose bytes changed in a way events did not explain."""
        self.import_copies()
        changed = False
        for path in self.segment_paths():
            full = not self.verify_prefix(path)
            changed |= self.check_segment(path, full=full)
        self.refresh()
        self.scan_notes()

    def refresh(self) -> None:
        """Refresh the derived state; report races and resolutions not reported before (a rebuild
        finds every race again)."""
        if self.last_full:
            return  # a segment waits to be restored: refresh once it is whole, not from a stale save
        update = coordination.refresh(self.vault, self.ack_types, self.race_window)
        for a, b, by in update.state["races"]:
            key = (a[0], b[0])
            if key not in self.races_known:
                self.races_known[key] = None
                if not self.quiet_emit:
                    self.emit({"event": "race", "a": a[0], "b": b[0], "agents": [a[1], b[1]]})
            if by is not None and self.races_known.get(key) is None:
                self.races_known[key] = by
                if not self.quiet_emit:
                    self.emit({"event": "resolved", "a": a[0], "b": b[0], "by": by})

    def on_paths(self, paths: set[str]) -> bool:
        """Handle changed paths; True when any was a Markdown note or segment (what search indexes)."""
        changed = False
        notes = False
        for raw in sorted(paths):
            path = Path(raw)
            rel = _rel(self.vault, path)
            if rel is None:
                continue
            notes |= rel.endswith(".md")
            if rel.startswith("log/") and rel.count("/") == 1 and copies.is_copy(rel[4:]):
                changed |= self.import_copies()  # a file-sync tool's conflict copy
            elif rel.startswith("log/") and rel.count("/") == 1 and rel.endswith(".md"):
                changed |= self.check_segment(self.vault.root / rel)
            elif rel.endswith(".md") and _HANDLERS and not git_busy(self.vault):  # (else: the rescan)
                mark = _note_mark(str(path))
                if mark is None:
                    self.note_stamps.pop(rel, None)
                else:
                    self.note_stamps[rel] = mark  # the rescan need not repeat it
                self._dispatch(rel)
        if changed:
            self.refresh()
        return notes

    def due(self) -> None:
        now = time.monotonic()
        for rel, when in list(self.deadlines.items()):
            if when <= now:
                del self.deadlines[rel]
                if copies.is_copy(rel.rsplit("/", 1)[-1]):
                    if self.import_copies():
                        self.refresh()
                elif self.check_segment(self.vault.root / rel, full=True):
                    self.refresh()

    # ------------------------------------------------------------ other notes
    def _dispatch(self, rel: str) -> None:
        for predicate, callback in list(_HANDLERS):
            try:
                if predicate(rel):
                    callback(self.vault, rel)
            except Exception as err:  # a handler's bug must not stop the watcher
                self.emit({"event": "error", "file": rel, "message": f"{type(err).__name__}: {err}"})

    def scan_notes(self) -> None:
        if not _HANDLERS or git_busy(self.vault):  # git is writing notes: look once it is done
            return
        for folder, dirs, files in os.walk(self.vault.root):
            dirs[:] = [
                d
                for d in dirs
                if not d.startswith(".") and not (folder == str(self.vault.root) and d == "log")
            ]
            for name in files:
                if not name.endswith(".md"):
                    continue
                full = os.path.join(folder, name)
                rel = Path(full).relative_to(self.vault.root).as_posix()
                known = self.note_stamps.get(rel)
                if known is not None and known[3]:  # read when its mtime was old: the stamp suffices
                    try:
                        st = os.stat(full)
                    except FileNotFoundError:
                        continue
                    if known[:2] == (st.st_mtime_ns, st.st_size):
                        continue
                # Two writes a few ms apart can share an mtime: a note changed recently is compared
                # by content too, so a same-size edit is not missed.
                mark = _note_mark(full)
                if mark is None:
                    continue
                self.note_stamps[rel] = mark
                if known is None or known[:3] != mark[:3]:
                    self._dispatch(rel)


def _note_mark(path: str) -> tuple[int, int, str | None, bool] | None:
    """(mtime_ns, size, sha256, settled) of a note, or None when it is gone. ``settled``: its mtime
    was already ``RECENT_SECONDS`` old when it was read, so a later write must move the mtime."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            now = time.time()
            data = f.read()
    except (FileNotFoundError, IsADirectoryError):
        return None
    settled = now - st.st_mtime_ns / 1e9 > RECENT_SECONDS
    return (st.st_mtime_ns, st.st_size, hashlib.sha256(data).hexdigest(), settled)


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


def _last_line(data: bytes) -> bytes:
    """The last complete line of ``data`` (an entry's end line), with its newline."""
    body = data[:-1] if data.endswith(b"\n") else data
    return data[body.rfind(b"\n") + 1 :]


def _rel(vault: Vault, path: Path) -> str | None:
    try:
        rel = path.relative_to(vault.root).as_posix()
    except ValueError:
        return None
    if rel.startswith(".") or "/." in rel:
        return None
    return rel


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ------------------------------------------------------------------ the search index


class _Debounced:
    """A worker thread for the watcher: ``poke`` after a change; a burst of pokes within ``delay``
    seconds makes one call of ``work``. ``close`` stops it (and ``_stop_work`` ends a call in flight)."""

    delay = 0.0
    name = "nexus-worker"
    emit: Callable[[dict[str, Any]], None]  # set by the subclass before ``__init__`` runs here

    def __init__(self) -> None:
        self.wanted = threading.Event()
        self.stopping = threading.Event()
        self.last_error: str | None = None
        self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def poke(self) -> None:
        self.wanted.set()

    def close(self) -> None:
        self.stopping.set()
        self.wanted.set()
        self._stop_work()
        self.thread.join(timeout=60)

    def _stop_work(self) -> None:
        pass

    def work(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self.stopping.is_set():
            if not self.wanted.wait(0.5):  # (a timeout: ``close`` is seen even if a poke was cleared)
                continue
            time.sleep(self.delay)  # let a burst of appends land: one call for all of them
            self.wanted.clear()
            if not self.stopping.is_set():
                self.work()

    def _error_once(self, file: str, message: str) -> None:
        """An ``error`` event, once per distinct message."""
        if message != self.last_error:
            self.last_error = message
            self.emit({"event": "error", "file": file, "message": message})


class IndexRefresher(_Debounced):
    """Keeps the search index current while the watcher runs, in a thread of its own (a slow refresh
    never delays a restore). ``poke`` after a change; a burst of changes within ``INDEX_DELAY`` makes
    one refresh. Only an index that exists is refreshed: building one (tens of seconds on a large
    vault) is left to the first search. Errors (Whoosh failing, a damaged index) are reported as
    ``error`` events, once per distinct message, and never stop the watcher."""

    delay = INDEX_DELAY
    name = "nexus-index"

    def __init__(self, vault: Vault, emit: Callable[[dict[str, Any]], None]) -> None:
        self.vault = vault
        self.emit = emit
        super().__init__()

    def work(self) -> None:
        self.refresh_once()

    def refresh_once(self) -> None:
        try:
            from . import search

            if not (search.index_dir(self.vault) / search.MANIFEST).exists():
                return  # never searched: the first search builds the index
            stats = search.refresh(self.vault)
        except Exception as err:  # Whoosh missing or failing must not stop the watcher
            self._error_once(".nexus/index", f"search index refresh failed: {type(err).__name__}: {err}")
            return
        self.last_error = None
        if stats.files_indexed or stats.files_removed or stats.rebuilt:
            self.emit(
                {
                    "event": "indexed",
                    "files": stats.files_indexed,
                    "removed": stats.files_removed,
                    "documents": stats.documents_added,
                    "rebuilt": stats.rebuilt,
                    "seconds": round(stats.seconds, 4),
                }
            )


class LogVerifier(_Debounced):
    """Keeps ``nexus verify``'s remembered state current while the watcher runs, in a thread
    of its own: ``poke`` after a segment changes; a burst within ``VERIFY_DELAY`` makes one incremental
    verify, which checks only the new entries, so a morning ``nexus verify`` has almost nothing left.
    The verify runs as a ``nexus verify --json`` process: it may use every core (a pool is never forked
    from this threaded process) and never holds this process's GIL while the watcher restores entries.
    When the number of integrity problems changes it prints an ``integrity`` event; a failure is an
    ``error`` event."""

    delay = VERIFY_DELAY
    name = "nexus-verify"

    def __init__(self, vault: Vault, keys_home: Path, emit: Callable[[dict[str, Any]], None]) -> None:
        self.vault = vault
        self.keys_home = keys_home
        self.emit = emit
        self.problems: int | None = None
        self.proc: Any = None
        super().__init__()

    def _stop_work(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()  # (the state it would have saved is derived: the next verify redoes it)

    def work(self) -> None:
        self.verify_once()

    def verify_once(self) -> None:
        import subprocess

        from .verify import WARNING_KINDS

        cmd = [sys.executable, "-m", "nexus", "--vault", os.fspath(self.vault.root), "verify", "--json"]
        env = dict(os.environ, NEXUS_HOME=os.fspath(self.keys_home))
        err = b""
        try:
            self.proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, stdin=subprocess.DEVNULL
            )
            out, err = self.proc.communicate()
            report = json.loads(out)
            errors = [p for p in report["problems"] if p["kind"] not in WARNING_KINDS]
        except (OSError, ValueError, KeyError, TypeError) as error:
            if self.stopping.is_set():
                return
            lines = err.decode(errors="replace").strip().splitlines()
            self._error_once("log", f"verify failed: {lines[-1] if lines else error}")
            return
        finally:
            self.proc = None
        self.last_error = None
        if len(errors) != self.problems:
            if errors or self.problems:
                self.emit(
                    {
                        "event": "integrity",
                        "problems": len(errors),
                        "entries": report["entries"],
                        "kinds": sorted({p["kind"] for p in errors}),
                    }
                )
            self.problems = len(errors)


# ------------------------------------------------------------------ running


def _printer(as_json: bool) -> Callable[[dict[str, Any]], None]:
    lock = threading.Lock()

    def emit(event: dict[str, Any]) -> None:
        event.setdefault("at", round(time.time(), 6))  # when the watcher noticed it (epoch seconds)
        if as_json:
            line = json.dumps(event, ensure_ascii=False)
        else:
            kind = event.get("event")
            rest = " ".join(f"{k}={v}" for k, v in event.items() if k not in ("event", "at"))
            line = f"{_now()} {kind} {rest}"
        with lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    return emit


def run(
    vault: Vault,
    keys_home: Path,
    *,
    rescan_seconds: float = 5.0,
    settle_seconds: float = 3.0,
    ack_types: tuple[str, ...] = ("correction", "decision", "handoff", "question"),
    race_window: float = 60.0,
    once: bool = False,
    as_json: bool = False,
) -> None:
    """Watch ``vault`` until SIGINT/SIGTERM (or one pass with ``once``). BusyError if another watcher
    holds the vault."""
    import importlib

    from . import trust
    from .locks import exclusive

    trust.configure(keys_home)  # what the watcher verifies (and shadows) uses this machine's pins
    lock = vault.lock("watch")
    pid_file = vault.state / "watch" / "pid"
    try:
        with exclusive(lock, wait=False):
            pid_file.parent.mkdir(parents=True, exist_ok=True)
            pid_file.write_text(str(os.getpid()))
            for module in PLUGIN_MODULES:
                importlib.import_module(module)
            _run_locked(
                vault,
                keys_home,
                rescan_seconds,
                settle_seconds,
                ack_types,
                race_window,
                once,
                _printer(as_json),
            )
    except BusyError:
        try:
            other = pid_file.read_text().strip()
        except OSError:
            other = "?"
        raise BusyError(f"another `nexus watch` is already running on {vault.root} (pid {other})") from None


def _run_locked(
    vault: Vault,
    keys_home: Path,
    rescan_seconds: float,
    settle_seconds: float,
    ack_types: tuple[str, ...],
    race_window: float,
    once: bool,
    emit: Callable[[dict[str, Any]], None],
) -> None:
    stop = threading.Event()
    wake = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()
        wake.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        _watch(
            vault, keys_home, rescan_seconds, settle_seconds, ack_types, race_window, once, emit, stop, wake
        )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _watch(  # noqa: C901
    vault: Vault,
    keys_home: Path,
    rescan_seconds: float,
    settle_seconds: float,
    ack_types: tuple[str, ...],
    race_window: float,
    once: bool,
    emit: Callable[[dict[str, Any]], None],
    stop: threading.Event,
    wake: threading.Event,
) -> None:
    watcher = Watcher(
        vault,
        keys_home,
        ack_types=ack_types,
        race_window=race_window,
        settle_seconds=settle_seconds,
        emit=emit,
    )
    watcher.quiet_emit = True
    watcher.full_pass()
    watcher.quiet_emit = False
    if once:
        emit(
            {
                "event": "ready",
                "shadowed": len(watcher.shadow.copies),
                "new": watcher.new_count,
                "pid": os.getpid(),
            }
        )
        for _ in range(10):  # a restore waiting for the file to be quiet, a person's text settling
            if not watcher.deadlines or stop.is_set():
                break
            time.sleep(max(0.0, max(watcher.deadlines.values()) - time.monotonic()))
            watcher.due()
        return

    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    changed: queue.SimpleQueue[str] = queue.SimpleQueue()
    state_dir = str(vault.state)
    log_dir = os.fspath(vault.log_dir) + os.sep

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.event_type not in CHANGE_EVENTS:
                return  # opened/closed: nothing changed (a handler reading its note would loop)
            if event.event_type == "moved":  # a note renamed in Obsidian: links to it will move
                old = _rel(vault, Path(os.fsdecode(event.src_path)))
                new = _rel(vault, Path(os.fsdecode(getattr(event, "dest_path", ""))))
                from . import renames

                if old and new and renames.is_note_rename(old, new):
                    renames.record(vault, old, new)
            for p in (event.src_path, getattr(event, "dest_path", "")):
                p = os.fsdecode(p)
                if p and not p.startswith(state_dir):
                    changed.put(p)
                    wake.set()

    indexer = IndexRefresher(vault, emit)
    indexer.start()
    verifier = LogVerifier(vault, keys_home, emit)
    verifier.start()
    verifier.poke()  # what was appended while no watcher ran
    observer = Observer()
    observer.schedule(Handler(), str(vault.root), recursive=True)
    observer.start()
    try:
        watcher.full_pass()  # changes made between the first pass and the observer starting
        indexer.poke()  # and what changed while no watcher ran
        started = time.time()
        heartbeat.beat(vault, started=started, every=rescan_seconds)  # (brief and verify notice a death)
        emit(
            {
                "event": "ready",
                "shadowed": len(watcher.shadow.copies),
                "new": watcher.new_count,
                "pid": os.getpid(),
            }
        )
        next_rescan = time.monotonic() + rescan_seconds
        while not stop.is_set():
            soonest = min([next_rescan, *watcher.deadlines.values()])
            wake.wait(max(0.0, soonest - time.monotonic()))
            wake.clear()
            if stop.is_set():
                break
            paths: set[str] = set()
            while True:
                try:
                    paths.add(changed.get_nowait())
                except queue.Empty:
                    break
            if paths and watcher.on_paths(paths):
                indexer.poke()
            if any(p.startswith(log_dir) for p in paths):
                verifier.poke()
            watcher.due()
            if time.monotonic() >= next_rescan:
                watcher.full_pass()
                indexer.poke()  # (cheap when nothing changed: a stat per file)
                heartbeat.beat(vault, started=started, every=rescan_seconds)
                next_rescan = time.monotonic() + rescan_seconds
    finally:
        observer.stop()
        observer.join(timeout=10)
        indexer.close()
        verifier.close()
        heartbeat.stopped(vault)
        emit({"event": "stopped", "pid": os.getpid()})
