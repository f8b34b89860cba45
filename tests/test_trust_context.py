"""What this machine trusts (the pins in the keys folder) travels with each call, not in the process:
two vaults with keys folders of their own, used one after the other in ONE process (the in-process
CLI, the MCP tools as the server runs them), each see their own pins, whichever ran last."""

from __future__ import annotations

import base64
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from nexus import workspace
from nexus.audit import verify_state
from nexus.keys import identity, trust
from nexus.ledger import log
from nexus.ledger.check import check_entry
from nexus.operations import BY_TOOL
from nexus.storage.vault import Vault, init
from nexus.surfaces import mcp_tools
from nexus.trust import Trust


def _other_vault(tmp_path: Path) -> Env:
    """A second vault (agents ella and lyra) with a keys folder of its own."""
    keys = tmp_path / "b-keys"
    vault, _ = init(tmp_path / "b-vault")
    for name in ("ella", "lyra"):
        identity.add(vault, keys, name)
    return Env(vault, keys)


def _swap_key(vault: Vault, name: str, home: Path) -> None:
    """Someone who can edit the vault declares a key of their own in ``name``'s identity note (its
    private key in ``home``) and signs an entry with it: a machine that pinned the old key must show
    that entry as not ``name``'s words; a machine that never saw the vault pins the new one."""
    key = Ed25519PrivateKey.generate()
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    public = "ed25519:" + base64.b64encode(raw).decode()
    kid = trust.key_id_of(public)
    assert kid is not None
    path = identity.private_key_path(vault, home, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    identity.set_key(vault, name, public, kid)
    log.append(
        vault, identity.load_signer(vault, home, name), channel="general", type="note", summary="swapped in"
    )


def _tail(ws: workspace.Workspace) -> dict[str, str]:
    """The last entries as the MCP server (started with ``ws``) answers ``log_tail`` for ``lyra``."""
    answer = mcp_tools.call_operation(BY_TOOL["log_tail"], ws, "lyra", {"n": 10, "full": True})
    return _verdicts(answer["items"])


def _verdicts(items: list[dict[str, Any]]) -> dict[str, str]:
    """summary -> "ok", or the finding that shows the entry apart (UNVERIFIED)."""
    return {x["summary"]: "ok" if x["verified"] else x["problem"] for x in items}


def test_two_vaults_with_their_own_keys_folders_each_see_their_own_pins_in_one_process(
    env: Env, tmp_path: Path
) -> None:
    a, b = env, _other_vault(tmp_path)
    a.append("ella", "before the swap")
    assert a.run("verify").returncode == 0  # the CLI, in this process: a's pins, in a's keys folder
    _swap_key(a.vault, "ella", tmp_path / "attacker")
    b.append("ella", "hello from b")

    ws_a = workspace.for_vault(a.vault, {}, keys=a.keys_home)
    mcp_tools.check_agent(ws_a, "lyra", "agent")  # what an MCP server for a checks once, at its start
    shown = _tail(ws_a)
    assert shown["before the swap"] == "ok"
    assert shown["swapped in"].startswith("key-changed")  # a's pins: not ella's words

    # b, through the CLI in this same process, with its own keys folder: it pins b's keys in b's
    # folder (and only there)
    b_read = b.run("log", "tail", "--json").json()
    assert _verdicts(b_read) == {"hello from b": "ok"}
    assert trust.pins_path(b.keys_home, b.vault).is_file()
    assert not trust.pins_path(a.keys_home, b.vault).exists()

    # a again, after b: still a's pins (before, the last entry point to run decided for both)
    shown = _tail(ws_a)
    assert shown["swapped in"].startswith("key-changed")
    assert "key-changed" in a.run("verify", check=False).stdout
    # and a keys folder that never saw a's vault pins what the note says now: the trust is the call's
    fresh = workspace.for_vault(a.vault, {}, keys=tmp_path / "never-saw-a")
    mcp_tools.check_agent(fresh, "lyra", "agent")
    assert _tail(fresh)["swapped in"] == "ok"
    assert os.environ["NEXUS_HOME"] == str(a.keys_home)  # (nothing above changed the process)


def test_two_verifications_in_threads_of_one_process_each_check_with_their_own_keys(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``verify`` in two threads of one process (an MCP server, the watcher and a command), on two
    vaults with keys folders of their own: each run checks its entries with its own keys, whatever the
    other run loaded meanwhile. Thread a is held after its first signature until b has loaded its keys
    and checked one."""
    a, b = env, _other_vault(tmp_path)
    for who, name in ((a, "a"), (b, "b")):
        for i in range(3):
            who.append("ella", f"{name} {i}")
    real = check_entry
    a_waits, b_checked = threading.Event(), threading.Event()

    def held(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "a" and not a_waits.is_set():
            a_waits.set()
            b_checked.wait(60)
        elif threading.current_thread().name == "b":
            b_checked.set()
        return real(*args, **kwargs)

    monkeypatch.setattr(verify_state, "check_entry", held)
    reports: dict[str, Any] = {}

    def run(name: str, who: Env) -> None:
        reports[name] = verify_state.verify(who.vault, trust=Trust(who.keys_home), full=True)

    first = threading.Thread(target=run, args=("a", a), name="a")
    first.start()
    assert a_waits.wait(60)
    second = threading.Thread(target=run, args=("b", b), name="b")
    second.start()
    second.join(60)
    first.join(60)
    assert b_checked.is_set()
    for name in ("a", "b"):
        assert reports[name].ok and reports[name].entries >= 3, [p.message for p in reports[name].problems]
