"""The coordination state costs what is new (issue 15): its pending entries are kept a month a file, a
refresh reads and rewrites only the months it touches, and whatever happens to those files (deleted,
damaged, of another generation, an old layout, a crash between two writes) the answers are the ones
a rebuild from the log gives."""

from __future__ import annotations

import calendar
import json
import shutil
import time
import types
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from nexus.keys import identity, roster
from nexus.ledger import log
from nexus.settings import DEFAULTS
from nexus.storage import durable, entries, ids
from nexus.team import acks, coordination, coordination_state, handoff, pending, races

ACK, WINDOW = DEFAULTS.ack_types, DEFAULTS.race_window_seconds
DAY = 86_400


def _history(env: Env, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Four months of a little work (agents ella, lyra and mira): a decision and a question each
    month, acked in part, and two agents writing without reading each other (races). Returns month ->
    that month's decision id."""
    identity.add(env.vault, env.keys_home, "mira")
    start = calendar.timegm((2026, 3, 10, 12, 0, 0))
    decided: dict[str, str] = {}
    with monkeypatch.context() as m:
        for i in range(4):
            when = start + i * 31 * DAY  # (entries appended now get ids and segments of that time)
            m.setattr(
                ids,
                "time",
                types.SimpleNamespace(time=lambda w=when: w, gmtime=time.gmtime, strftime=time.strftime),
            )
            d = env.append("ella", f"decision {i}", type="decision").located.entry
            decided[pending.month_of(d.id)] = d.id
            env.append("lyra", f"question {i}", type="question")
            env.append("lyra", f"work {i}")
            if i % 2:
                log.unread(env.vault, "lyra")
                env.append("lyra", f"ok {i}", ack=(d.id,))
    return decided


def _answers(env: Env) -> dict[str, Any]:
    """Every answer the state gives: owed acks, races, each agent's view (owed ids, races)."""
    out: dict[str, Any] = {
        "unacked": acks.unacknowledged(env.vault),
        "races": [(r.key, r.resolved_by) for r in races.find_races(env.vault)],
    }
    for agent in roster.agents(env.vault):
        v = coordination.view(env.vault, agent, ACK, WINDOW)
        out[agent] = ([r.id for r in v.owed], [(r.a.id, r.b.id) for r in v.races])
    return out


def _scratch(env: Env) -> dict[str, Any]:
    shutil.rmtree(env.vault.state / "coord", ignore_errors=True)
    return _answers(env)


def _month_file(env: Env, month: str) -> Path:
    return coordination_state.months_at(env.vault, ACK, WINDOW)(month)


def test_a_refresh_reads_and_rewrites_only_the_months_it_touches(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    decided = _history(env, monkeypatch)
    months = sorted(decided)
    assert coordination.refresh(env.vault, ACK, WINDOW).rebuilt
    assert all(_month_file(env, m).exists() for m in months)

    read: list[str] = []
    written: list[str] = []
    real_read, real_replace = pending.reader, durable.replace

    def spy_reader(path_of: Any, version: int) -> Any:
        inner = real_read(path_of, version)

        def read_month(month: str) -> Any:
            read.append(month)
            return inner(month)

        return read_month

    def spy_replace(path: Path, data: bytes, **kw: Any) -> None:
        written.append(path.name)
        real_replace(path, data, **kw)

    spies = monkeypatch.context()
    m = spies.__enter__()
    m.setattr("nexus.team.coordination.reader", spy_reader)
    m.setattr(durable, "replace", spy_replace)

    log.unread(env.vault, "ella")
    env.append("ella", "a note now")  # (this month: no month file of the history is needed)
    update = coordination.refresh(env.vault, ACK, WINDOW)
    assert not update.rebuilt and update.new_entries == 1
    assert read == [] and not any(name.startswith("pending-") for name in written)
    assert any(name.startswith("state-") for name in written)  # the head (marks moved)

    read.clear()
    written.clear()
    log.unread(env.vault, "mira")
    env.append("mira", "seen the first decision", ack=(decided[months[0]],))  # an ack of an old month
    update = coordination.refresh(env.vault, ACK, WINDOW)
    assert not update.rebuilt
    assert read == [months[0]]
    assert [n for n in written if n.startswith("pending-")] == [_month_file(env, months[0]).name]
    spies.__exit__(None, None, None)

    kept = _answers(env)
    assert kept == _scratch(env)  # the same answers as a rebuild from the log
    # (and the views moved on from the ones before are the views computed from every month)
    state = coordination.load(env.vault, ACK, WINDOW)
    assert state is not None
    for agent in roster.agents(env.vault):
        saved = coordination_state.View.from_json(
            json.loads(coordination_state.view_path(env.vault, agent, ACK, WINDOW).read_bytes())
        )
        assert saved == coordination.make_view(state, agent)


def test_a_handoff_over_months_after_new_entries_equals_one_built_from_scratch(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    decided = _history(env, monkeypatch)
    handoff.write(env.vault, handoff.build(env.vault))
    log.unread(env.vault, "mira")
    env.append("mira", "acks two old decisions", ack=tuple(sorted(decided.values())[:2]))
    env.append("ella", "a correction", type="correction")
    now = time.time()
    h = handoff.build(env.vault, now=now)
    shutil.rmtree(env.vault.state / "coord")
    shutil.rmtree(env.vault.state / "verify", ignore_errors=True)
    (env.vault.state / "handoff.json").unlink()
    scratch = handoff.build(env.vault, now=now)
    h.items.pop("checkpoints"), scratch.items.pop("checkpoints")
    assert h.items == scratch.items and h.markdown == scratch.markdown


@pytest.mark.parametrize(
    "damage", ["deleted", "garbage", "older generation", "newer generation", "old shape"]
)
def test_a_damaged_month_file_means_a_rebuild_with_the_same_answers(
    env: Env, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    decided = _history(env, monkeypatch)
    expected = _answers(env)
    first = sorted(decided)[0]
    path = _month_file(env, first)
    body = json.loads(path.read_bytes())
    if damage == "deleted":
        path.unlink()
    elif damage == "garbage":
        path.write_bytes(b'{"v": 5, "gen": \x00\x00')
    elif damage == "older generation":  # (a lost write: the head names a later one)
        body["gen"] -= 1
        path.write_text(json.dumps(body))
    elif damage == "newer generation":  # (a crash after the month files, before the head)
        body["gen"] += 1
        path.write_text(json.dumps(body))
    else:
        body.pop("month")
        path.write_text(json.dumps(body))
    log.unread(env.vault, "mira")
    env.append("mira", "acks the first decision", ack=(decided[first],))  # (its month must be read)
    assert coordination.refresh(env.vault, ACK, WINDOW).rebuilt
    again = _answers(env)
    assert again == _scratch(env)
    assert again != expected  # (mira's ack counts: the rebuild read the log, not the damage)


def test_an_old_layout_head_is_rebuilt(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    _history(env, monkeypatch)
    expected = _answers(env)
    head = coordination_state.state_path(env.vault, ACK, WINDOW)
    old = json.loads(head.read_bytes())
    old["pending"] = {}  # the single-file layout of version 4, under this version's name
    del old["months"], old["gen"]
    head.write_text(json.dumps(old))
    assert coordination.refresh(env.vault, ACK, WINDOW).rebuilt
    assert _answers(env) == expected


def test_a_crash_at_any_write_of_a_save_leaves_a_state_that_gives_the_right_answers(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh that touches two months writes two month files, the head and three views; a crash
    after any of those writes (the process dies: nothing after it happens) is followed by a refresh
    that either rebuilds or goes on from a consistent state, and answers as a rebuild does."""
    decided = _history(env, monkeypatch)
    months = sorted(decided)
    coordination.refresh(env.vault, ACK, WINDOW)
    saved = env.vault.state / "coord-saved"
    shutil.copytree(env.vault.state / "coord", saved)
    log.unread(env.vault, "mira")
    env.append("mira", "acks an old decision", ack=(decided[months[1]],))
    env.append("ella", "a new question", type="question")
    expected = _scratch(env)

    class Crash(BaseException):
        pass

    real = durable.replace
    writes: list[str] = []
    shutil.rmtree(env.vault.state / "coord")
    shutil.copytree(saved, env.vault.state / "coord")

    def counting(path: Path, data: bytes, **kw: Any) -> None:
        writes.append(path.name)
        real(path, data, **kw)

    with monkeypatch.context() as m:
        m.setattr(durable, "replace", counting)
        coordination.refresh(env.vault, ACK, WINDOW)
    assert len([w for w in writes if w.startswith("pending-")]) == 2 and len(writes) == 6, writes
    for k in range(len(writes)):
        shutil.rmtree(env.vault.state / "coord")
        shutil.copytree(saved, env.vault.state / "coord")
        count = [0]

        def dying(path: Path, data: bytes, _k: int = k, _count: list[int] = count, **kw: Any) -> None:
            if _count[0] == _k:
                raise Crash
            _count[0] += 1
            real(path, data, **kw)

        monkeypatch.setattr(durable, "replace", dying)
        with pytest.raises(Crash):
            coordination.refresh(env.vault, ACK, WINDOW)
        monkeypatch.setattr(durable, "replace", real)
        assert _answers(env) == expected, k


def test_a_month_file_damaged_after_the_head_was_read_is_rebuilt_on_the_spot(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    decided = _history(env, monkeypatch)
    first = sorted(decided)[0]
    assert coordination.refresh(env.vault, ACK, WINDOW).rebuilt
    state = coordination.refresh(env.vault, ACK, WINDOW).state  # (from the files: nothing new)
    assert first not in state.pending.loaded  # (not read: nothing touched it)
    _month_file(env, first).unlink()  # (another process, a person, a disk)
    item = state.pending.get(decided[first])
    assert item is not None and item.ref.id == decided[first]
    assert _month_file(env, first).exists()  # rebuilt and saved
    assert _answers(env) == _scratch(env)


def test_the_month_of_an_id() -> None:
    ms = calendar.timegm((2026, 2, 28, 23, 59, 59)) * 1000
    assert pending.month_of(entries.encode_id(ms, 5)) == "2026-02"
    assert pending.month_of("not an id at all!") == "-"
