"""The one mark every incremental reader keeps, its one validity check, and derived state of an older
shape treated as missing (rebuilt, never trusted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from nexus.ledger import log, tailstate
from nexus.ledger.marks import START, Mark, ends_with_entry
from nexus.settings import DEFAULT_ACK_TYPES
from nexus.storage import segments
from nexus.team import acks, coordination_state, races


def _segment(env: Env, entry_id: str) -> Path:
    return env.vault.root / log.find_entry(env.vault, entry_id).file


def test_a_mark_after_an_entry_holds_until_the_bytes_before_it_change(env: Env) -> None:
    a = log.find_entry(env.vault, env.append("ella", "one").located.entry.id)
    b = log.find_entry(env.vault, env.append("lyra", "two").located.entry.id)
    path = _segment(env, a.entry.id)
    mark = Mark.past(b)
    assert mark == Mark(b.end_offset, b.line_end + 1, b.entry.id, b.end_offset)
    assert mark.holds(path) and Mark.past(a).holds(path)
    assert not Mark(b.end_offset, b.line_end + 1, a.entry.id, 0).holds(path)  # another entry ends there
    assert not Mark(b.end_offset - 1, b.line_end, b.entry.id, 0).holds(path)  # not at a line's end
    assert Mark(b.end_offset + 1, b.line_end + 2, b.entry.id, 0).holds(path)  # after the blank line: same
    assert not Mark(b.end_offset + 2, b.line_end + 2, b.entry.id, 0).holds(path)  # past the file
    assert START.holds(path) and not Mark(5, 2, None, 5).holds(path)

    c = log.find_entry(env.vault, env.append("ella", "three").located.entry.id)
    data, found = mark.read(path, b.file)
    assert [loc.entry.id for loc in found.entries] == [c.entry.id] and data.endswith(b"\n")
    assert mark.after(found, len(data) + mark.offset) == Mark.past(c, c.end_offset + 1)  # (its blank line)
    assert not mark.unchanged(path.stat().st_size)

    text = path.read_bytes()
    path.write_bytes(text.replace(b"one", b"uno!"))  # an edit before the mark: it no longer holds
    assert not mark.holds(path)
    # With a size recorded past the mark, only line breaks may stand between them.
    path.write_bytes(text + b"\n\n")
    assert Mark.past(c).holds(path, upto=len(text) + 2)
    path.write_bytes(text + b"note\n")
    assert not Mark.past(c).holds(path, upto=len(text) + 5)


def test_the_end_line_search_and_the_json_shape() -> None:
    end = b'%% nexus:end {"ack":[],"id":"01JDQ8Z6V3M2K4T5N7P9R1S3W5","seq":1} %%\n'
    assert ends_with_entry(b"text\n" + end, "01JDQ8Z6V3M2K4T5N7P9R1S3W5")
    assert ends_with_entry(b"text\n" + end + b"\r\n\n", "01JDQ8Z6V3M2K4T5N7P9R1S3W5")  # blank lines after
    assert not ends_with_entry(b"text\n" + end, "01JDQ8Z6V3M2K4T5N7P9R1S3W6")
    assert not ends_with_entry(b"text\n" + end[:-1], "01JDQ8Z6V3M2K4T5N7P9R1S3W5")  # no newline yet
    assert not ends_with_entry(
        b'a stray line "id":"01JDQ8Z6V3M2K4T5N7P9R1S3W5"\n', "01JDQ8Z6V3M2K4T5N7P9R1S3W5"
    )
    mark = Mark(120, 9, "01JDQ8Z6V3M2K4T5N7P9R1S3W5", 140)
    assert Mark.from_json(json.loads(json.dumps(mark.to_json()))) == mark
    for old in ([120, "01JDQ8Z6V3M2K4T5N7P9R1S3W5"], [120, 9, "x"], [120, 9, "x", 100], {"offset": 1}, None):
        assert Mark.from_json(old) is None, old  # an older layout, or damage: start over


def test_old_shape_derived_files_are_treated_as_missing_and_rebuilt(env: Env) -> None:
    """A vault carrying the positional derived files of the previous layout: tail.json whose
    seg_last is [offset, id], coordination state and views as positional lists, a cursor mark of
    another shape. Each is rebuilt from the log; nothing read is read twice, nothing owed is lost."""
    d = env.append("ella", "use sqlite", type="decision").located
    q = env.append("lyra", "which port?", type="question").located
    assert [x.entry.id for x in log.unread(env.vault, "lyra")] == [d.entry.id]
    ack_types, window = DEFAULT_ACK_TYPES, 60.0
    acks.owed(env.vault, "lyra", ack_types)  # the state and views exist now
    raced = [r.key for r in races.find_races(env.vault, ack_types=ack_types)]
    assert raced == [(d.entry.id, q.entry.id)]  # (lyra had not read d when she asked)
    state_file = coordination_state.state_path(env.vault, ack_types, window)
    view_file = coordination_state.view_path(env.vault, "lyra", ack_types, window)
    rel = d.file
    ref = [d.entry.id, "ella", rel, d.offset, d.end_offset, d.line_start]
    old_state: dict[str, Any] = {
        "v": coordination_state.VERSION,  # (the old layout under the current version: shape decides)
        "ack_types": sorted(ack_types),
        "window_ms": 60000,
        "marks": {Path(rel).stem: [q.end_offset, q.line_end + 1, q.entry.id, q.end_offset, 2]},
        "pending": {d.entry.id: ["ella", "decision", rel, d.offset, d.end_offset, d.line_start, []]},
        "recent": [[d.entry.id, "ella", 0, False, ref]],
        "races": [[ref, ref, None]],
    }
    state_file.write_text(json.dumps(old_state))
    view_file.write_text(json.dumps({"v": 3, "agent": "lyra", "marks": old_state["marks"], "owed": [ref]}))
    tail = json.loads((env.vault.state / "tail.json").read_text())
    tail["seg_last"] = [q.offset, q.entry.id]  # the old [start of the last entry, its id]
    (env.vault.state / "tail.json").write_text(json.dumps(tail))
    cursor_file = env.vault.state / "cursors" / "lyra.json"
    cursor = json.loads(cursor_file.read_text())
    cursor["segments"] = {name: mark[:2] for name, mark in cursor["segments"].items()}
    cursor_file.write_text(json.dumps(cursor))
    log._WRITERS.clear()  # (as a fresh process: only the files)

    assert [x.entry.id for x in acks.owed(env.vault, "lyra", ack_types)] == [d.entry.id]
    assert [x.entry.id for x in acks.owed(env.vault, "ella", ack_types)] == [q.entry.id]
    assert [r.key for r in races.find_races(env.vault, ack_types=ack_types)] == raced
    assert coordination_state.State.from_json(json.loads(state_file.read_text())) is not None  # rewritten
    assert log.unread(env.vault, "lyra") == []  # the cursor's seen still skips what was read
    e = env.append("ella", "after the old files").located
    assert e.entry.seq == 2  # ella's chain goes on from d
    end = log.find_entry(env.vault, e.entry.id)
    seg_last = Mark.from_json(json.loads((env.vault.state / "tail.json").read_text())["seg_last"])
    assert seg_last is not None and seg_last.last == e.entry.id and seg_last.offset == end.end_offset + 1
    assert [x.entry.id for x in log.unread(env.vault, "lyra")] == [e.entry.id]
    assert env.run("verify", "--json", check=False).json()["ok"]


def test_a_recovery_moves_the_tail_state_with_the_bytes(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """``nexus log recover --restore`` writes the segment through log.py: the tail state moves with
    its notice, so the next append (a fresh writer) need not rebuild it from the whole log."""
    a = env.append("ella", "the API listens on port 8080").located.entry.id
    b = env.append("lyra", "noted").located.entry.id
    env.run("watch", "--once")  # both are shadowed
    path = _segment(env, a)
    path.write_bytes(path.read_bytes().replace(b"port 8080", b"port 9090"))  # same size: tail.json holds
    rebuilds = []
    real = tailstate.rebuild

    def spy(*args: Any) -> Any:
        rebuilds.append(1)
        return real(*args)

    monkeypatch.setattr(tailstate, "rebuild", spy)
    log.restore_entry(env.vault, a)  # the original back, and a notice after it: b moves
    log._WRITERS.clear()
    c = env.append("ella", "after the recovery").located.entry.id
    assert rebuilds == []
    assert [loc.entry.id for loc in log.iter_entries(env.vault)] == [a, b, c]
    report = env.run("verify", "--json", check=False).json()
    assert report["ok"] and {p["kind"] for p in report["problems"]} == {"notice"}, report


@pytest.mark.parametrize("chunk", [1, 200, 700, 1 << 20])
def test_reading_on_a_piece_at_a_time_finds_what_one_read_finds(env: Env, chunk: int) -> None:
    ids = [
        env.append("ella" if i % 2 else "lyra", f"e{i}", body="b\n" * i).located.entry.id for i in range(6)
    ]
    path = _segment(env, ids[0])
    data = path.read_bytes()
    # a person's note between entries, an entry cut short in the middle, and a torn tail at the end
    cut = segments.entry_starts(data, ids[3])[0]
    broken_at = segments.entry_starts(data, ids[4])[0]
    path.write_bytes(
        data[:cut]
        + b"a person's note\n\n"
        + data[cut:broken_at]
        + data[broken_at : data.index(b"\n", data.index(b"\n", broken_at) + 1) + 1]  # header, blank
        + data[broken_at:]
        + b"%% nexus:begin 01TORN"
    )
    first = log.find_entry(env.vault, ids[0])
    for mark in (START, Mark.past(first)):
        _data, whole = mark.read(path, first.file)
        pieces = list(mark.read_chunks(path, first.file, chunk=chunk))
        assert [loc for scan in pieces for loc in scan.entries] == whole.entries
        assert pieces[-1].torn is not None and pieces[-1].torn.offset == whole.torn.offset  # type: ignore[union-attr]
        assert len(whole.entries) == (6 if mark is START else 5) and whole.broken and whole.stray
