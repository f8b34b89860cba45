"""`nexus mcp`'s fast start (`nexus/surfaces/program.py`, `mcp_start.py`): the opening request is
answered before the CLI, the settings or the operations are imported; every command line it does not
recognise, and every error, is the CLI's own. (The answers themselves are compared with the SDK
server's in test_mcp_front.py, which runs this same start.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from hypothesis import given, settings
from hypothesis import strategies as st

from nexus.surfaces import mcp_answers, mcp_json, mcp_start

DISCOVER = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "server/discover",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "codex-mcp-client", "version": "0.171.0"},
    },
}
# what the front must not have imported when it answers: the CLI, the settings machinery, the
# operations, the SDK, the session's threads, and the standard modules only they need
HEAVY = {
    "threading",
    "queue",
    "json",
    "re",
    "enum",
    "collections",
    "functools",
    "nexus.surfaces.mcp_session",
    "nexus.surfaces.mcp_tools",
    "argparse",
    "pathlib",
    "typing",
    "dataclasses",
    "nexus.surfaces.cli",
    "nexus.settings",
    "nexus.workspace",
    "nexus.operations",
    "nexus.storage.vault",
    "mcp",
    "pydantic",
}
# records the modules loaded when the first answer is written, then runs `nexus mcp` as installed
PROBE = """
import sys
from nexus.surfaces import mcp_front, program
send = mcp_front.Wire.send
def first(self, message):
    if not getattr(first, "seen", None):
        first.seen = sorted(sys.modules)
        with open(sys.argv[1], "w") as out:
            out.write("\\n".join(first.seen))
    send(self, message)
mcp_front.Wire.send = first
sys.exit(program.main(sys.argv[2:]))
"""


def _mcp(
    env: Env, *args: str, lines: Sequence[dict[str, Any]] = (), **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error", "-m", "nexus", *args],
        input="".join(json.dumps(m) + "\n" for m in lines),
        env={**env.environ, **extra},
        cwd=env.vault.root,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("opening", [DISCOVER, INITIALIZE], ids=["server/discover", "initialize"])
def test_the_opening_is_answered_before_the_cli_and_the_library_load(
    env: Env, tmp_path: Path, opening: dict[str, Any]
) -> None:
    seen = tmp_path / "modules.json"
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(seen), "mcp", "--agent", "ella"],
        input=json.dumps(opening) + "\n",
        env=dict(env.environ, NEXUS_MCP_FRONT="front"),
        cwd=env.vault.root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout.splitlines()[0])
    assert answer["id"] == opening["id"] and "result" in answer
    loaded = set(seen.read_text().splitlines())
    assert loaded & HEAVY == set()


def test_tools_list_is_answered_from_the_data_and_a_call_then_runs(env: Env) -> None:
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "log_append",
            "arguments": {"summary": "from the fast start", "channel": "build", "type": "note"},
        },
    }
    run = _mcp(
        env, "mcp", "--agent", "ella", lines=[INITIALIZE, initialized, listing, call], NEXUS_MCP_FRONT="front"
    )
    assert run.returncode == 0, run.stderr
    by_id = {m["id"]: m for m in map(json.loads, run.stdout.splitlines())}
    names = [t["name"] for t in by_id[1]["result"]["tools"]]
    assert names == mcp_answers.load_data()["agent_tools"]
    assert by_id[2]["result"]["isError"] is False, by_id[2]
    assert "from the fast start" in env.run("log", "tail", "--json").stdout


@pytest.mark.parametrize(
    "args",
    [
        ("mcp", "--agent", "bob"),  # no such identity
        ("mcp", "--agent", "Ella"),  # not a name
        ("mcp", "--agent", "ella", "--tools", "some"),  # not a tool set
        ("mcp",),  # --agent missing
        ("mcp", "--agent", "ella", "--verbose"),  # not an option
        ("--vault", "/nonexistent", "mcp", "--agent", "ella"),  # not a vault
    ],
)
def test_what_the_fast_start_does_not_take_is_the_clis_to_refuse(env: Env, args: tuple[str, ...]) -> None:
    assert mcp_start.read(list(args), env.environ, str(env.vault.root)) is None
    fast, cli = _mcp(env, *args), _mcp(env, *args, NEXUS_MCP_FRONT="sdk")  # sdk: always the CLI's path
    assert fast.returncode == cli.returncode != 0
    assert fast.stderr == cli.stderr and fast.stderr.count("\n") == 1, fast.stderr


def test_a_setting_the_library_refuses_ends_the_session_with_the_clis_line(env: Env) -> None:
    """The fast start does not judge every setting: the library does, once the opening is answered."""
    bad = {"NEXUS_BRIEF_MAX_CHARS": "many"}
    fast = _mcp(env, "mcp", "--agent", "ella", lines=[INITIALIZE], NEXUS_MCP_FRONT="lazy", **bad)
    cli = _mcp(env, "mcp", "--agent", "ella", lines=[INITIALIZE], NEXUS_MCP_FRONT="sdk", **bad)
    assert fast.returncode == cli.returncode != 0
    assert fast.stderr.splitlines()[-1] == cli.stderr.splitlines()[-1]
    assert "NEXUS_BRIEF_MAX_CHARS" in fast.stderr


def test_the_tool_set_is_read_as_the_settings_resolve_it(env: Env) -> None:
    root, cwd = env.vault.root, str(env.vault.root / "log")
    given = mcp_start.read(["mcp", "--agent", "ella", "--tools", "all"], {}, cwd)
    assert given is not None and given.tools == "all" and given.vault == str(root)
    from_env = mcp_start.read(["mcp", "--agent=ella"], {"NEXUS_MCP_TOOLS": "all"}, cwd)
    assert from_env is not None and from_env.tools == "all"
    marker = root / "nexus.md"
    marker.write_text(marker.read_text().replace("---\n", "---\nmcp_tools: all\n", 1))
    assert mcp_start.read(["mcp", "--agent", "ella"], {}, cwd) is None  # named, cache stale: the CLI reads it
    assert env.vault.config()["mcp_tools"] == "all"  # (what the CLI reads, keeping its cache)
    cached = mcp_start.read(["mcp", "--agent", "ella"], {}, cwd)
    assert cached is not None and cached.tools == "all"
    os.utime(marker, ns=(0, 0))
    assert mcp_start.read(["mcp", "--agent", "ella"], {}, cwd) is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_the_wires_json_is_the_json_packages(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert mcp_json.dumps(value) == text
    assert json.dumps(mcp_json.loads(text.encode())) == json.dumps(json.loads(text))
    assert json.dumps(mcp_json.loads(f" \t{json.dumps(value, indent=1)}\r\n")) == json.dumps(value)


@pytest.mark.parametrize("text", ["", " ", "{", '{"a" 1}', "[1,]", "1 2", "nul", '"\\x"', "{}x", "\xff"])
def test_what_is_not_json_is_refused_as_the_json_package_refuses_it(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        mcp_json.loads(text)
    with pytest.raises(ValueError):
        mcp_json.loads(text.encode("latin-1"))
