"""`nexus watch` verifies entries as they arrive (issue 15): a verify after it has nothing left to check,
and damage to verified history becomes an `integrity` event."""

from __future__ import annotations

import json
from collections.abc import Callable

from conftest import Env
from test_watch import WatchProcess, _wait_until, watching

from nexus.audit import verify_state
from nexus.ledger import log

__all__ = ["watching"]  # (the fixture, used by name)


def _verified_entries(env: Env) -> int:
    try:
        return int(json.loads(verify_state.state_path(env.vault, env.keys_home).read_bytes())["entries"])
    except (OSError, ValueError, KeyError):
        return -1


def test_the_watcher_verifies_entries_as_they_arrive(env: Env, watching: Callable[..., WatchProcess]) -> None:
    for i in range(3):
        env.append("ella", f"before {i}")
    w = watching()
    _wait_until(lambda: _verified_entries(env) == 3)  # what was appended while no watcher ran
    for i in range(4):
        env.append("lyra" if i % 2 else "ella", f"while watched {i}")
    _wait_until(lambda: _verified_entries(env) == 7)
    report = env.run("verify", "--json").json()
    assert report["ok"] and report["entries"] == 7 and report["checked"] == 0 and not report["full"]

    located = list(log.iter_entries(env.vault))
    path = env.vault.root / located[1].file
    data = bytearray(path.read_bytes())
    data[data.index(b"before 1", located[1].offset)] ^= 0x01  # a history edit
    path.write_bytes(bytes(data))
    [event] = w.wait_for(lambda e: e["event"] == "integrity")
    assert event["problems"] == 1 and event["kinds"] == ["edited"]
    after = env.run("verify", "--json", check=False).json()
    assert [p["kind"] for p in after["problems"] if p["kind"] not in ("notice", "stray-text")] == ["edited"]
