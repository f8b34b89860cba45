"""Acknowledgements: ack-needing entries are owed by every other agent until it acks them."""

from __future__ import annotations

import shutil

import pytest
from conftest import Env

from nexus.keys import identity
from nexus.team import acks


def test_a_decision_is_owed_by_the_other_agent_until_it_acks(env: Env) -> None:
    d = env.run(
        "log",
        "append",
        "--agent",
        "ella",
        "--channel",
        "db",
        "--type",
        "decision",
        "--summary",
        "we use sqlite",
    ).stdout.strip()
    env.run("log", "append", "--agent", "ella", "--channel", "db", "--type", "note", "--summary", "fyi")
    assert [e["id"] for e in env.run("log", "owed", "--agent", "lyra", "--json").json()] == [d]
    assert env.run("log", "owed", "--agent", "ella", "--json").json() == []  # never your own
    assert env.run("log", "owed", "--agent", "sam", "--json").json() == []  # people never owe
    unknown = env.run("log", "owed", "--agent", "nobody", check=False)
    assert unknown.returncode == 1 and "unknown agent 'nobody'" in unknown.stderr
    assert acks.unacknowledged(env.vault) == {d: ["lyra"]}

    # acking something else changes nothing; acking it settles it
    env.run("log", "append", "--agent", "lyra", "--channel", "db", "--type", "note", "--summary", "hm")
    assert [e.entry.id for e in acks.owed(env.vault, "lyra")] == [d]
    env.run(
        "log", "append", "--agent", "lyra", "--channel", "db", "--type", "note", "--summary", "ok", "--ack", d
    )
    assert env.run("log", "owed", "--agent", "lyra", "--json").json() == []
    assert "owes no acknowledgements" in env.run("log", "owed", "--agent", "lyra").stdout
    assert acks.unacknowledged(env.vault) == {}


def test_a_new_agent_owes_what_it_has_not_acked(env: Env) -> None:
    q = env.append("ella", "which port?", type="question").located.entry.id
    env.append("lyra", "8080", ack=(q,))
    assert acks.unacknowledged(env.vault) == {}
    identity.add(env.vault, env.keys_home, "mira")
    assert acks.unacknowledged(env.vault) == {q: ["mira"]}
    assert [e.entry.id for e in acks.owed(env.vault, "mira")] == [q]


def test_ack_types_come_from_the_vault_setting(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    env.append("ella", "please review", type="review-request")
    env.append("ella", "a decision", type="decision")
    custom = ("review-request",)
    assert [e.entry.type for e in acks.owed(env.vault, "lyra", custom)] == ["review-request"]
    assert [e.entry.type for e in acks.owed(env.vault, "lyra")] == ["decision"]
    monkeypatch.setenv("NEXUS_ACK_TYPES", "review-request")
    out = env.run("log", "owed", "--agent", "lyra", "--json")
    assert [e["type"] for e in out.json()] == ["review-request"]


def test_owed_is_incremental_and_matches_a_rebuild(env: Env) -> None:
    ids = [env.append("ella", f"h{i}", type="handoff").located.entry.id for i in range(30)]
    for i in range(0, 30, 3):
        env.append("lyra", f"ack {i}", ack=(ids[i],))
    first = [e.entry.id for e in acks.owed(env.vault, "lyra")]
    assert first == [i for n, i in enumerate(ids) if n % 3]
    shutil.rmtree(env.vault.state / "coord")
    assert [e.entry.id for e in acks.owed(env.vault, "lyra")] == first
