"""Reading the log: cursors, peek, hand edits before the cursor, month rollover, tail; and a
long-lived writer that notices changes made by others."""

from __future__ import annotations

import calendar
import os
import time
from pathlib import Path

import pytest
from conftest import Env

from nexus.audit.verify_state import verify
from nexus.errors import IdentityError
from nexus.ledger import log
from nexus.records import Located
from nexus.storage import entries


def _ids(items: list[Located]) -> list[str]:
    return [loc.entry.id for loc in items]


def test_read_returns_others_entries_oldest_first_and_advances(env: Env) -> None:
    a = env.append("ella", "one").located.entry.id
    env.append("lyra", "mine")
    b = env.append("ella", "two").located.entry.id
    assert _ids(log.unread(env.vault, "lyra", advance=False)) == [a, b]  # peek
    assert _ids(log.unread(env.vault, "lyra", advance=False)) == [a, b]  # peek leaves the cursor
    assert _ids(log.unread(env.vault, "lyra")) == [a, b]
    assert log.unread(env.vault, "lyra") == []
    c = env.append("sam", "three").located.entry.id
    assert _ids(log.unread(env.vault, "lyra")) == [c]
    # the CLI, as a real process
    d = env.run(
        "log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", "four"
    ).stdout.strip()
    assert [e["id"] for e in env.run("log", "read", "--agent", "lyra", "--peek", "--json").json()] == [d]
    assert [e["id"] for e in env.run("log", "read", "--agent", "lyra", "--json").json()] == [d]
    assert env.run("log", "read", "--agent", "lyra").stdout.strip() == "nothing new"
    # an agent's own entries set what it has seen: `seen` of its next entry
    e = env.append("lyra", "seen it").located.entry
    assert e.seen == d


def test_read_json_names_file_lines_and_link(env: Env) -> None:
    env.append("ella", "linked", body="two\nlines")
    [item] = env.run("log", "read", "--agent", "lyra", "--json").json()
    path = env.vault.root / item["file"]
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[item["line_start"] - 1].endswith(f" — linked ^{item['id']}")  # (its header opens it)
    assert entries.END_V2_RE.fullmatch(lines[item["line_end"] - 1])
    assert item["link"] == f"[[{item['file'][:-3]}#^{item['id']}]]"


def test_read_by_unknown_agent_is_refused(env: Env) -> None:
    with pytest.raises(IdentityError):
        log.unread(env.vault, "mallory")
    run = env.run("log", "read", "--agent", "mallory", check=False)
    assert run.returncode != 0 and "unknown agent" in run.stderr
    assert not (env.vault.state / "cursors" / "mallory.json").exists()


def test_cursor_survives_a_hand_edit_before_it(env: Env) -> None:
    first = env.append("ella", "first", body="short body").located
    env.append("ella", "second")
    assert len(log.unread(env.vault, "lyra")) == 2
    path = env.vault.root / first.file
    data = path.read_bytes()
    # a person lengthens the first entry's body in an editor: every offset after it moves
    path.write_bytes(data.replace(b"short body", b"a much, much longer body than before"))
    assert log.unread(env.vault, "lyra") == []  # falls back to a rescan, nothing read twice
    third = env.append("ella", "third").located.entry.id
    assert _ids(log.unread(env.vault, "lyra")) == [third]
    # and the edit itself is not hidden
    assert [p.kind for p in verify(env.vault).errors] == ["edited"]


def test_cursor_after_a_shortening_edit_and_a_garbled_cursor(env: Env) -> None:
    env.append("ella", "first", body="a long body " * 20)
    env.append("ella", "second")
    assert len(log.unread(env.vault, "lyra")) == 2
    path = log.segment_files(env.vault)[0][1]
    path.write_bytes(path.read_bytes().replace(b"a long body " * 20, b"short"))
    assert log.unread(env.vault, "lyra") == []
    cursor = env.vault.state / "cursors" / "lyra.json"
    for garbage in (b"", b"{", b"[]", b'{"seen": 5, "segments": {"2026-11": "x"}}', b"\x00" * 20):
        cursor.write_bytes(garbage)
        assert len(log.unread(env.vault, "lyra", advance=False)) == 2  # unreadable cursor: from the start


def _at(monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    """Set the clock nexus reads (ids.time.time) to a UTC time."""
    stamp = calendar.timegm(time.strptime(when, "%Y-%m-%dT%H:%M:%S"))
    monkeypatch.setattr("nexus.storage.ids.time.time", lambda: stamp + 0.5)


def test_month_rollover_two_segments(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    _at(monkeypatch, "2026-10-31T23:59:58")
    a = env.append("ella", "october").located
    assert lyra_reads(env) == [a.entry.id]
    b = env.append("ella", "still october").located
    _at(monkeypatch, "2026-11-01T00:00:01")
    c = env.append("ella", "november").located
    d = env.append("lyra", "november too").located
    assert (a.file, b.file, c.file) == ("log/2026-10.md", "log/2026-10.md", "log/2026-11.md")
    assert [name for name, _ in log.segment_files(env.vault)] == ["2026-10", "2026-11"]
    assert lyra_reads(env) == [b.entry.id, c.entry.id]  # across the rollover, oldest first
    assert _ids(log.unread(env.vault, "sam")) == [a.entry.id, b.entry.id, c.entry.id, d.entry.id]
    assert _ids(log.tail(env.vault, 3)) == [b.entry.id, c.entry.id, d.entry.id]
    # the clock goes back a month: the entry stays in the newest segment, ids keep increasing
    _at(monkeypatch, "2026-10-15T12:00:00")
    e = env.append("ella", "clock went back").located
    assert e.file == "log/2026-11.md" and e.entry.id > d.entry.id
    assert verify(env.vault).ok
    assert log.find_entry(env.vault, a.entry.id).entry.summary == "october"
    # each segment is complete in itself and the rollover is seen by a fresh process too
    assert env.run("verify").returncode == 0


def lyra_reads(env: Env) -> list[str]:
    return [e["id"] for e in env.run("log", "read", "--agent", "lyra", "--json").json()]


def test_tail(env: Env) -> None:
    assert log.tail(env.vault, 5) == []
    made = [env.append("ella", f"n{i}", body="b" * (i * 50)).located for i in range(30)]
    got = log.tail(env.vault, 7)
    assert _ids(got) == _ids(made[-7:])
    assert [(g.line_start, g.line_end, g.offset) for g in got] == [
        (m.line_start, m.line_end, m.offset) for m in made[-7:]
    ]
    assert _ids(log.tail(env.vault, 100)) == _ids(made)
    assert log.tail(env.vault, 0) == []
    # without tail.json the line numbers come out the same
    (env.vault.state / "tail.json").unlink()
    assert [g.line_start for g in log.tail(env.vault, 7)] == [m.line_start for m in made[-7:]]
    out = env.run("log", "tail", "-n", "2", "--json").json()
    assert [e["id"] for e in out] == _ids(made[-2:])


def test_long_lived_writer_notices_others(env: Env) -> None:
    """A LogWriter keeps state between appends; every change by someone else is noticed."""
    writer = log.LogWriter(env.vault)
    ella = env.signer("ella")
    writer.append(ella, channel="c", type="note", summary="one")
    # another process appends
    env.run("log", "append", "--agent", "lyra", "--channel", "c", "--type", "note", "--summary", "two")
    writer.append(ella, channel="c", type="note", summary="three")
    # an editor saves the segment through a temp file and a rename (a new inode, same bytes)
    ((_, path),) = log.segment_files(env.vault)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(path.read_bytes())
    os.replace(tmp, path)
    writer.append(ella, channel="c", type="note", summary="four")
    # a person writes a line at the end (no final newline)
    with path.open("ab") as f:
        f.write(b"a note from a person")
    writer.append(ella, channel="c", type="note", summary="five")
    items = list(log.iter_entries(env.vault))
    assert [i.entry.summary for i in items] == ["one", "two", "three", "four", "five"]
    assert [i.entry.seq for i in items if i.entry.agent == "ella"] == [1, 2, 3, 4]
    report = verify(env.vault)
    assert report.ok and [p.kind for p in report.problems] == ["stray-text"]
    writer.close()


def test_tail_state_loss_is_rebuilt(env: Env) -> None:
    env.append("ella", "one")
    env.append("lyra", "two")
    state = env.vault.state / "tail.json"
    for damage in (None, b"", b"{", b'{"heads": 3}', b"\x00" * 100):
        if damage is None:
            state.unlink()
        else:
            state.write_bytes(damage)
        env.run("log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", "x")
    assert verify(env.vault).ok
    assert [i.entry.seq for i in log.iter_entries(env.vault) if i.entry.agent == "ella"] == [1, 2, 3, 4, 5, 6]


def test_reading_a_large_segment_from_the_cursor_reads_only_the_new_part(env: Env, tmp_path: Path) -> None:
    for i in range(200):
        env.append("ella", f"e{i}")
    log.unread(env.vault, "lyra")
    ((_, path),) = log.segment_files(env.vault)
    size = path.stat().st_size
    new = env.append("ella", "new").located
    opened: list[int] = []
    real_open = open

    def spy(file: object, mode: str = "r", *a: object, **k: object) -> object:
        f = real_open(file, mode, *a, **k)  # type: ignore[call-overload]
        if str(file) == str(path):
            orig_read = f.read

            def read(n: int = -1) -> bytes:
                data: bytes = orig_read(n)
                opened.append(len(data))
                return data

            f.read = read
        return f

    import builtins

    builtins.open = spy  # type: ignore[assignment]
    try:
        got = log.unread(env.vault, "lyra")
    finally:
        builtins.open = real_open
    assert _ids(got) == [new.entry.id]
    assert sum(opened) <= 8192 + (path.stat().st_size - size) + 1  # a window to check, the new part
