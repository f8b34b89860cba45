"""Races: found from the log alone, listed in both agents' briefs, resolved by one reconcile entry."""

from __future__ import annotations

import shutil
import subprocess
import sys

from conftest import Env

from nexus.team import races


def _append_together(env: Env, *specs: tuple[str, str]) -> list[str]:
    """Start one real `nexus log append` process per (agent, summary) at once; return their ids."""
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-W",
                "error",
                "-m",
                "nexus",
                "log",
                "append",
                "--agent",
                agent,
                "--channel",
                "handoff",
                "--type",
                "note",
                "--summary",
                summary,
            ],
            env=env.environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for agent, summary in specs
    ]
    ids = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        ids.append(out.strip())
    return sorted(ids)


def test_same_second_appends_race_show_in_both_briefs_and_one_reconcile_resolves(env: Env) -> None:
    x, y = _append_together(env, ("ella", "I take the deploy"), ("lyra", "I take the deploy too"))

    found = env.run("races", "--json").json()
    assert [(r["a"]["id"], r["b"]["id"], r["resolved_by"]) for r in found] == [(x, y, None)]
    for agent in ("ella", "lyra"):
        brief = env.run("brief", "--agent", agent, "--json").json()
        assert brief["races"] == [[x, y]]
        owed_text = next(s["text"] for s in brief["sections"] if s["name"] == "owed")
        assert f"--ack {x} --ack {y}" in owed_text  # the exact command to reconcile
    assert "RACE" in env.run("brief", "--agent", "ella", "--peek").stdout

    rid = env.run(
        "log",
        "append",
        "--agent",
        "lyra",
        "--channel",
        "handoff",
        "--type",
        "reconcile",
        "--ack",
        x,
        "--ack",
        y,
        "--summary",
        "ella deploys, I review",
    ).stdout.strip()
    assert env.run("races", "--unresolved", "--json").json() == []
    assert [r["resolved_by"] for r in env.run("races", "--json").json()] == [rid]
    for agent in ("ella", "lyra"):
        assert env.run("brief", "--agent", agent, "--json").json()["races"] == []
    # both entries stay
    ids = [e["id"] for e in env.run("log", "tail", "-n", "10", "--json").json()]
    assert x in ids and y in ids


def test_no_race_when_the_later_author_had_read_or_acked_the_earlier(env: Env) -> None:
    x = env.append("ella", "plan A").located.entry.id
    env.run("log", "read", "--agent", "lyra")  # lyra has now seen x
    env.append("lyra", "building on plan A")
    env.run("log", "read", "--agent", "ella")  # ella has seen lyra's entry
    z = env.append("ella", "plan B").located.entry.id
    env.append("lyra", "ack plan B without reading", ack=(z,))  # acks it: no race either
    assert races.find_races(env.vault) == []
    # control: the same append without reading first does race
    w = env.append("ella", "plan C, not having read lyra's ack").located.entry.id
    assert [r.b.entry.id for r in races.find_races(env.vault)] == [w]
    assert x


def test_a_reconcile_that_acks_only_one_side_does_not_resolve(env: Env) -> None:
    x, y = _append_together(env, ("ella", "one"), ("lyra", "two"))
    env.append("ella", "half", type="reconcile", ack=(x,))  # a reconcile never races itself
    found = races.find_races(env.vault)
    assert [(r.a.entry.id, r.b.entry.id, r.resolved_by) for r in found] == [(x, y, None)]


def test_outside_the_window_there_is_no_race(env: Env) -> None:
    _append_together(env, ("ella", "one"), ("lyra", "two"))
    assert races.find_races(env.vault, window_seconds=60)
    assert races.find_races(env.vault, window_seconds=0) == []


def test_derived_state_rebuilt_from_scratch_gives_the_same_answer(env: Env) -> None:
    for i in range(6):
        _append_together(env, ("ella", f"e{i}"), ("lyra", f"l{i}"))
        if i % 2:
            env.run("log", "read", "--agent", "ella")
    incremental = [(r.a.entry.id, r.b.entry.id, r.resolved_by) for r in races.find_races(env.vault)]
    assert incremental
    shutil.rmtree(env.vault.state / "coord")
    rebuilt = [(r.a.entry.id, r.b.entry.id, r.resolved_by) for r in races.find_races(env.vault)]
    assert rebuilt == incremental


def test_matches_the_definition_checked_pair_by_pair(env: Env) -> None:
    """Against a brute-force reading of the definition over every pair of entries."""
    import random

    from nexus.keys import identity
    from nexus.ledger import log
    from nexus.storage import entries

    identity.add(env.vault, env.keys_home, "mira")
    rng = random.Random(7)
    agents = ["ella", "lyra", "mira"]
    written: list[str] = []
    for i in range(60):
        agent = rng.choice(agents)
        if rng.random() < 0.5:
            log.unread(env.vault, agent)
        ack = (rng.choice(written),) if written and rng.random() < 0.2 else ()
        kind = "reconcile" if rng.random() < 0.1 else "note"
        written.append(env.append(agent, f"s{i}", ack=ack, type=kind).located.entry.id)
    all_entries = [loc.entry for loc in log.iter_entries(env.vault)]
    expected = []
    for x in all_entries:
        for y in all_entries:
            if not (x.id < y.id and x.agent != y.agent):
                continue
            if "reconcile" in (x.type, y.type):
                continue
            if y.seen is not None and y.seen >= x.id:
                continue
            if x.id in y.ack:
                continue
            if entries.decode_id_ms(y.id) - entries.decode_id_ms(x.id) > 60_000:
                continue
            expected.append((x.id, y.id))
    found = [(r.a.entry.id, r.b.entry.id) for r in races.find_races(env.vault)]
    assert found == sorted(expected)
    assert expected  # the scenario does produce races
