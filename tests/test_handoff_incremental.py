"""A handoff costs what happened since the last one (issue 15): it reads the log from where the last
handoff's scan stopped and verifies only the new entries; without its derived state it reads everything
and says the same."""

from __future__ import annotations

import time
from typing import Any

import pytest
from conftest import Env, spy_reads

from nexus.audit import verify_state
from nexus.ledger import log
from nexus.storage import segments
from nexus.team import handoff


def _items(h: handoff.Handoff) -> dict[str, Any]:
    items = dict(h.items)
    items.pop("checkpoints", None)
    return items


def test_a_handoff_reads_only_what_came_after_the_last_one(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(30):
        env.append("ella" if i % 2 else "lyra", f"night {i}", body="x" * 300)
    env.append("lyra", "a question", type="question")
    first = handoff.build(env.vault)
    handoff.write(env.vault, first)
    assert (env.vault.state / "handoff.json").exists()
    size_before = log.segment_files(env.vault)[-1][1].stat().st_size
    new = []
    for agent in ("ella", "lyra"):
        log.unread(env.vault, agent)  # (read first: no race with the night's entries)
        new.append(env.append(agent, f"morning {agent}").located.entry.id)

    scanned: list[tuple[int, int]] = []
    real_scan = segments.scan

    def spy(data: bytes, file: str, *, offset: int = 0, line: int = 1, tail: bool = True) -> segments.Scan:
        scanned.append((offset, len(data)))
        return real_scan(data, file, offset=offset, line=line, tail=tail)

    monkeypatch.setattr(segments, "scan", spy)
    now = time.time()
    second = handoff.build(env.vault, now=now)
    assert second.items["work"] == {"ella": {"general": [new[0]]}, "lyra": {"general": [new[1]]}}
    # nothing read the log whole: it was read from where the last handoff (and verify) stopped
    assert scanned and max(n for _, n in scanned) < size_before // 4, scanned
    report = verify_state.run(env.vault)
    assert report.checked == 0  # (the handoff's verify already checked the two new entries)
    monkeypatch.undo()

    # deleting the derived state changes nothing but the cost
    (env.vault.state / "handoff.json").unlink()
    verify_state.state_path(env.vault).unlink()
    again = handoff.build(env.vault, now=now)
    assert _items(again) == _items(second)
    assert again.markdown.split("\n", 1)[1] == second.markdown.split("\n", 1)[1]


def test_a_rewritten_segment_is_read_again_from_its_start(env: Env) -> None:
    located = [env.append("ella", f"e{i}").located for i in range(5)]
    handoff.write(env.vault, handoff.build(env.vault))
    path = log.segment_files(env.vault)[-1][1]
    data = path.read_bytes()
    path.write_bytes(data[: located[1].offset] + data[located[2].offset :])  # a deletion before the stop
    log.unread(env.vault, "lyra")
    fresh = env.append("lyra", "after the edit").located.entry.id
    h = handoff.build(env.vault)
    assert h.items["work"] == {"lyra": {"general": [fresh]}}
    assert [p["kind"] for p in h.items["integrity"]] == ["missing"]


def _from_scratch(env: Env, now: float) -> handoff.Handoff:
    """The handoff with every piece of derived state it reads deleted first (the coordination state,
    the verify state, where the last handoff's scan stopped)."""
    import shutil

    shutil.rmtree(env.vault.state / "coord", ignore_errors=True)
    shutil.rmtree(env.vault.state / "verify", ignore_errors=True)
    (env.vault.state / "handoff.json").unlink(missing_ok=True)
    return handoff.build(env.vault, now=now)


def test_a_handoff_after_new_entries_equals_one_built_from_scratch(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nexus.team import acks, races

    env.append("ella", "we use postgres", type="decision")
    for i in range(8):  # written without reading each other: races, more than the page shows
        env.append("ella" if i % 2 else "lyra", f"night {i}")
    handoff.write(env.vault, handoff.build(env.vault))

    q = env.append("lyra", "which port?", type="question").located.entry.id
    c = env.append("ella", "port is 5433, not 5432", type="correction").located.entry.id
    for i in range(6):
        env.append("ella" if i % 2 else "lyra", f"morning {i}")
    first_race = races.find_races(env.vault, unresolved=True)[0].key
    log.unread(env.vault, "lyra")
    env.append("lyra", "ella deploys", type="reconcile", ack=first_race)
    log.unread(env.vault, "ella")
    env.append("ella", "seen", ack=(q,))
    assert len(races.find_races(env.vault, unresolved=True)) > handoff.SHOWN_RACES

    read_back = spy_reads(monkeypatch)
    now = time.time()
    h = handoff.build(env.vault, now=now)
    assert 0 < len(read_back) <= 2 * handoff.SHOWN_RACES  # only the races the page shows are read back
    monkeypatch.undo()

    # what the sections say is what the whole-log answers say
    assert h.items["races"] == [list(r.key) for r in races.find_races(env.vault, unresolved=True)]
    assert h.items["races_reconciled"] == [list(first_race)]
    owed = acks.unacknowledged(env.vault)
    assert h.items["corrections"][0]["id"] == c and h.items["corrections"][0]["not_acked_by"] == owed[c]
    assert h.items["open_questions"] == [] and q not in owed  # ella acked it
    assert h.items["decisions_made"] == []  # (the decision came before the window)

    scratch = _from_scratch(env, now)
    assert _items(scratch) == _items(h)
    assert scratch.markdown == h.markdown


def test_the_coordination_state_rebuilt_a_piece_at_a_time_is_the_same(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nexus.ledger import marks
    from nexus.settings import DEFAULTS
    from nexus.team import coordination

    for i in range(12):
        env.append(
            "ella" if i % 3 else "lyra",
            f"entry {i}",
            body="line\n" * (i % 4),
            type="decision" if i % 5 == 0 else "note",
        )
    whole = coordination.refresh(env.vault, DEFAULTS.ack_types, DEFAULTS.race_window_seconds)
    import shutil

    shutil.rmtree(env.vault.state / "coord")
    monkeypatch.setattr(marks, "CHUNK", 300)  # a piece is about one entry
    pieces = coordination.refresh(env.vault, DEFAULTS.ack_types, DEFAULTS.race_window_seconds)
    assert pieces.rebuilt and pieces.new_entries == 12
    assert pieces.state == whole.state
