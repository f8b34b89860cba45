"""The live-context log: durable signed appends, reading since a cursor, and the tail.

Write path (``append``): exclusive lock on ``.nexus/locks/log.lock``; check the tail of the newest
segment against the derived tail state (catching up on entries other processes wrote, quarantining a
torn tail left by a killed writer); sign; write; fsync; update the derived state; unlock. The call
returns only once the entry is durable.

Derived state under ``.nexus/`` (rebuilt from the segments whenever it is missing, stale or damaged):

* ``tail.json`` – newest segment, its size and line count, last id, and each agent's chain head;
* ``cursors/AGENT.json`` – per segment, the byte offset (and line) up to which AGENT has read.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import durable, entries, segments
from .errors import IntegrityError
from .locks import exclusive
from .records import AppendResult, Entry, Located
from .text import check_body, check_line, check_name, check_token
from .vault import Vault

if TYPE_CHECKING:
    from .identity import Signer

TAIL_FILE = "tail.json"


# ------------------------------------------------------------------ segment files


def segment_files(vault: Vault) -> list[tuple[str, Path]]:
    """(segment name, path) of every segment, oldest first."""
    try:
        names = os.listdir(vault.log_dir)
    except FileNotFoundError:
        return []
    out = [(n[:-3], vault.log_dir / n) for n in names if n.endswith(".md") and _is_segment(n[:-3])]
    return sorted(out)


def _is_segment(name: str) -> bool:
    return len(name) == 7 and name[4] == "-" and name[:4].isdigit() and name[5:].isdigit()


def scan_file(vault: Vault, path: Path) -> segments.Scan:
    return segments.scan(path.read_bytes(), vault.rel(path))


def iter_entries(vault: Vault) -> Iterator[Located]:
    """Every readable entry of every segment, in log order."""
    for _, path in segment_files(vault):
        yield from scan_file(vault, path).entries


# ------------------------------------------------------------------ tail state


def _empty_state() -> dict[str, Any]:
    return {"segment": None, "size": 0, "lines": 0, "last_id": None, "last_start": 0, "heads": {}}


def _load_state(vault: Vault) -> dict[str, Any] | None:
    try:
        state = json.loads((vault.state / TAIL_FILE).read_bytes())
    except (FileNotFoundError, ValueError):
        return None
    return state if isinstance(state, dict) and "heads" in state else None


def _save_state(vault: Vault, state: dict[str, Any]) -> None:
    # Derived and rebuilt when stale, so no fsync: it never delays an acknowledgement.
    durable.replace(vault.state / TAIL_FILE, json.dumps(state).encode(), durable=False)


def _absorb(state: dict[str, Any], located: Located) -> None:
    e = located.entry
    state["heads"][e.agent] = [e.seq, entries.entry_hash(e)]
    if state["last_id"] is None or e.id > state["last_id"]:
        state["last_id"] = e.id
    state["last_start"] = located.offset


def _rebuild_state(vault: Vault) -> dict[str, Any]:
    state = _empty_state()
    for name, path in segment_files(vault):
        result = scan_file(vault, path)
        for located in result.entries:
            _absorb(state, located)
        state.update(segment=name, size=path.stat().st_size, lines=result.end_line - 1)
    return state


def _quarantine(vault: Vault, path: Path, torn: segments.Torn) -> str:
    """Move a torn tail's bytes to ``.nexus/quarantine/`` and cut it from the segment."""
    with open(path, "rb") as f:
        f.seek(torn.offset)
        data = f.read()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = vault.state / "quarantine" / f"{path.stem}-{stamp}-{torn.offset}.torn"
    durable.replace(target, data)
    durable.truncate(path, torn.offset)
    return vault.rel(target)


def _checked_state(vault: Vault, quarantined: list[str]) -> dict[str, Any]:
    """The tail state, brought up to date with the newest segment. Caller holds the log lock."""
    files = segment_files(vault)
    state = _load_state(vault)
    if not files:
        return state if state and state["segment"] is None else _empty_state()
    name, path = files[-1]
    size = path.stat().st_size
    if state is None or state["segment"] != name or state["size"] > size or not _boundary_ok(
        path, state
    ):
        state = _rebuild_state(vault)
        size = state["size"]
    if size > state["size"]:  # other writers (or a person) added bytes: catch up
        with open(path, "rb") as f:
            f.seek(state["size"])
            data = f.read()
        result = segments.scan(data, vault.rel(path), offset=state["size"], line=state["lines"] + 1)
        for located in result.entries:
            _absorb(state, located)
        if result.torn is not None:
            quarantined.append(_quarantine(vault, path, result.torn))
        state["size"] = result.end_offset if result.torn else size
        state["lines"] = (result.end_line - 1) if result.torn else state["lines"] + data.count(b"\n")
    return state


def _boundary_ok(path: Path, state: dict[str, Any]) -> bool:
    """The recorded size still ends the recorded last entry (nobody rewrote the file under us)."""
    size, start, last = state["size"], state["last_start"], state["last_id"]
    if last is None:
        return True
    if start >= size:
        return False
    with open(path, "rb") as f:
        f.seek(start)
        chunk = f.read(size - start)
    return chunk.startswith(f"{entries.BEGIN_PREFIX}{last} %%".encode()) and f'"id":"{last}"'.encode() in chunk


# ------------------------------------------------------------------ append


def append(
    vault: Vault,
    signer: Signer,
    *,
    channel: str,
    type: str,
    summary: str,
    body: str | None = None,
    ack: tuple[str, ...] = (),
    via: str | None = None,
    agent: str | None = None,
) -> AppendResult:
    """Append one signed entry and return once it is durable.

    ``agent`` defaults to the signer; it differs only when the watcher signs a person's text
    (``via="watcher"``) with that person's key.
    """
    agent = check_name(agent or signer.name)
    channel = check_token(channel, "channel")
    type = check_token(type, "type")
    summary = check_line(summary, "summary")
    body = check_body(body)
    for ack_id in ack:
        if not entries.ID_RE.fullmatch(ack_id):
            raise _input(f"--ack {ack_id!r} is not an entry id (26 characters, as printed by append)")
    seen = read_cursor(vault, agent).get("seen")
    quarantined: list[str] = []
    vault.log_dir.mkdir(exist_ok=True)
    with exclusive(vault.lock("log")):
        state = _checked_state(vault, quarantined)
        entry_id = entries.new_id(after=state["last_id"])
        ts = entries.utc_ts(entries.decode_id_ms(entry_id))
        name = entries.segment_name(ts)
        path = vault.log_dir / f"{name}.md"
        if state["segment"] is None or name > state["segment"]:
            if not path.exists():
                durable.create_exclusive(path, segments.preamble(name).encode())
            text = path.read_bytes()
            state.update(segment=name, size=len(text), lines=text.count(b"\n"), last_start=0)
            if state["last_id"] is not None:
                state["last_start"] = len(text) + 1  # no last entry in this segment yet
        elif name < state["segment"]:  # the clock went back across a month: stay in the newest
            name = state["segment"]
            path = vault.log_dir / f"{name}.md"
        head = state["heads"].get(agent)
        entry = Entry(
            id=entry_id,
            ts=ts,
            agent=agent,
            channel=channel,
            type=type,
            summary=summary,
            body=body,
            ack=tuple(dict.fromkeys(ack)),
            seen=seen,
            seq=(head[0] + 1) if head else 1,
            prev=head[1] if head else None,
            key=signer.key_id,
            via=via,
        )
        entry = replace(entry, sig=signer.sign(entries.signing_bytes(entry)))
        text_bytes = entries.render(entry).encode("utf-8")
        lead = _separator_needed(path, state["size"])
        durable.append(path, lead + text_bytes)
        start = state["size"] + len(lead)
        first_line = state["lines"] + lead.count(b"\n") + 1
        n_lines = text_bytes.count(b"\n")
        located = Located(entry, vault.rel(path), first_line, first_line + n_lines - 2, start,
                          start + len(text_bytes))
        state["size"] = start + len(text_bytes)
        state["lines"] = first_line - 1 + n_lines
        _absorb(state, located)
        _save_state(vault, state)
    return AppendResult(located, tuple(quarantined))


def _separator_needed(path: Path, size: int) -> bytes:
    """Bytes to write first so the entry starts after a blank line."""
    if size == 0:
        return b""
    with open(path, "rb") as f:
        f.seek(max(0, size - 2))
        last = f.read(2)
    if last.endswith(b"\n\n") or (size == 1 and last == b"\n"):
        return b""
    return b"\n" if last.endswith(b"\n") else b"\n\n"


def _input(message: str) -> Exception:
    from .errors import InputError

    return InputError(message)


def repair_tail(vault: Vault) -> list[str]:
    """Quarantine a torn tail, if any (what the next append would do); return what was moved."""
    quarantined: list[str] = []
    with exclusive(vault.lock("log")):
        state = _checked_state(vault, quarantined)
        _save_state(vault, state)
    return quarantined


# ------------------------------------------------------------------ cursors and reading


def _cursor_path(vault: Vault, agent: str) -> Path:
    return vault.state / "cursors" / f"{check_name(agent)}.json"


def read_cursor(vault: Vault, agent: str) -> dict[str, Any]:
    try:
        data = json.loads(_cursor_path(vault, agent).read_bytes())
    except (FileNotFoundError, ValueError):
        return {"seen": None, "segments": {}}
    if not isinstance(data, dict) or not isinstance(data.get("segments"), dict):
        return {"seen": None, "segments": {}}
    return data


def _cursor_start(path: Path, size: int, mark: Any) -> tuple[int, int, str | None]:
    """Where to resume in a segment: (offset, line, last id there), or (0, 1, None) if the saved
    position no longer ends the entry it ended when saved."""
    if not isinstance(mark, list) or len(mark) != 3:
        return 0, 1, None
    offset, line, last = mark
    if not isinstance(offset, int) or offset > size or offset <= 0:
        return 0, 1, None
    if last is None:
        return offset, line, None
    with open(path, "rb") as f:
        f.seek(max(0, offset - 8192))
        window = f.read(min(offset, 8192))
    tail_line = window.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    if window.endswith(b"\n") and tail_line.startswith(entries.END_PREFIX.encode()) and (
        f'"id":"{last}"'.encode() in tail_line
    ):
        return offset, line, last
    return 0, 1, None


def unread(vault: Vault, agent: str, *, advance: bool = True) -> list[Located]:
    """Entries by others that ``agent`` has not read, oldest first; advances the cursor unless told not."""
    check_name(agent)
    cursor = read_cursor(vault, agent)
    seen: str | None = cursor.get("seen")
    marks: dict[str, Any] = dict(cursor["segments"])
    out: list[Located] = []
    newest_seen = seen
    for name, path in segment_files(vault):
        size = path.stat().st_size
        offset, line, last = _cursor_start(path, size, marks.get(name))
        if offset == size and offset > 0:
            continue
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
        result = segments.scan(data, vault.rel(path), offset=offset, line=line)
        for located in result.entries:
            e = located.entry
            last = e.id if last is None or e.id > last else last
            if seen is not None and e.id <= seen:
                continue
            if newest_seen is None or e.id > newest_seen:
                newest_seen = e.id
            if e.agent != agent:
                out.append(located)
        marks[name] = [result.end_offset, result.end_line, last]
    if advance:
        _write_cursor(vault, agent, {"seen": newest_seen, "segments": marks})
    return out


def _write_cursor(vault: Vault, agent: str, cursor: dict[str, Any]) -> None:
    durable.replace(_cursor_path(vault, agent), json.dumps(cursor).encode())


def tail(vault: Vault, n: int = 10) -> list[Located]:
    """The last ``n`` entries, oldest first, reading backwards from the end of the newest segments."""
    if n <= 0:
        return []
    out: list[Located] = []
    for _name, path in reversed(segment_files(vault)):
        found = _tail_of(vault, path, n - len(out))
        out[:0] = found
        if len(out) >= n:
            break
    return out[-n:]


def _tail_of(vault: Vault, path: Path, n: int) -> list[Located]:
    size = path.stat().st_size
    chunk = 64 * 1024
    start = size
    marker = b"\n" + entries.BEGIN_PREFIX.encode()
    with open(path, "rb") as f:
        while True:
            start = max(0, start - chunk)
            f.seek(start)
            data = f.read(size - start)
            if start == 0:
                aligned = 0
            else:
                idx = data.find(marker)
                aligned = -1 if idx < 0 else idx + 1
            if aligned >= 0:
                count = data.count(entries.BEGIN_PREFIX.encode(), aligned)
                if count > n or start == 0:
                    break
            chunk *= 2
        f.seek(0)
        line = f.read(start + aligned).count(b"\n") + 1
    result = segments.scan(data[aligned:], vault.rel(path), offset=start + aligned, line=line)
    return result.entries[-n:]


def find_entry(vault: Vault, entry_id: str) -> Located:
    """The entry with this id (a full scan, newest segment first)."""
    from .errors import NotFoundError

    ms = entries.decode_id_ms(entry_id) if entries.ID_RE.fullmatch(entry_id) else None
    files = segment_files(vault)
    if ms is not None:
        month = entries.segment_name(entries.utc_ts(ms))
        files.sort(key=lambda item: item[0] != month)
    for _name, path in files:
        for located in scan_file(vault, path).entries:
            if located.entry.id == entry_id:
                return located
    raise NotFoundError(f"no entry {entry_id} in the log")


def raise_integrity(message: str) -> None:
    raise IntegrityError(message)
