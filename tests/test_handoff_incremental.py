"""A handoff costs what happened since the last one (issue 15): it reads the log from where the last
handoff's scan stopped and verifies only the new entries; without its derived state it reads everything
and says the same."""

from __future__ import annotations

import time
from typing import Any

import pytest
from conftest import Env

from nexus.ledger import log, verify_state
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

    def spy(data: bytes, file: str, *, offset: int = 0, line: int = 1) -> segments.Scan:
        scanned.append((offset, len(data)))
        return real_scan(data, file, offset=offset, line=line)

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
