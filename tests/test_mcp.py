"""The MCP server (issue 5): one real stdio smoke test through the official client; the rest in-process
with ``mcp.Client(server)``."""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from nexus.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent


def _cli_commands(parser: argparse.ArgumentParser, prefix: str = "") -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                full = f"{prefix} {name}".strip()
                if sub.get_default("handler") is not None:
                    yield full
                yield from _cli_commands(sub, full)


def _server(env: Env, agent: str = "ella") -> Any:
    from nexus import mcp_server

    return mcp_server.build_server(env.vault, env.keys_home, agent)


def _call(env: Env, *calls: tuple[str, dict[str, Any]], agent: str = "ella") -> list[Any]:
    """Call tools in order on one in-process client; return each CallToolResult."""
    from mcp import Client

    async def go() -> list[Any]:
        async with Client(_server(env, agent)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(go())


def _ok(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    return result.structured_content


def _tool_names(env: Env) -> dict[str, Any]:
    from mcp import Client

    async def go() -> dict[str, Any]:
        async with Client(_server(env)) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    return asyncio.run(go())


def test_stdio_smoke_through_the_official_client(env: Env) -> None:
    """`nexus mcp` as a real subprocess over stdio: initialise, list, append, search, a refused input."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-W", "error", "-m", "nexus", "mcp", "--agent", "ella"],
        env={"NEXUS_VAULT": str(env.vault.root), "NEXUS_HOME": str(env.keys_home),
             "PYTHONPATH": str(ROOT)},
        cwd=str(env.vault.root),
    )

    async def go() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"brief", "log_append", "search", "decide", "checkpoint_save"} <= names
            appended = await session.call_tool(
                "log_append", {"channel": "build", "type": "note", "summary": "stdio capybara works"})
            assert not appended.is_error
            entry_id = appended.structured_content["id"]
            found = await session.call_tool("search", {"query": "capybara"})
            assert [h["entry_id"] for h in found.structured_content["items"]] == [entry_id]
            refused = await session.call_tool("log_append", {"channel": "Bad Channel", "type": "note",
                                                             "summary": "x"})
            assert refused.is_error and "invalid channel" in refused.content[0].text

    asyncio.run(go())
    assert env.run("verify").returncode == 0


def test_every_cli_capability_has_a_tool_and_every_tool_a_cli_command(env: Env) -> None:
    from nexus import mcp_server

    tools = set(_tool_names(env))
    expected: set[str] = set()
    for command in _cli_commands(build_parser()):
        if command in mcp_server.CLI_WITHOUT_TOOL:
            continue
        name = mcp_server.TOOL_FOR_CLI.get(command, command.replace(" ", "_").replace("-", "_"))
        expected.add(name)
    missing = sorted(expected - tools)
    assert not missing, f"CLI commands without an MCP tool: {missing}"
    extra = sorted(tools - expected - set(mcp_server.TOOLS_WITHOUT_CLI))
    assert not extra, f"MCP tools without a CLI command (or an entry in TOOLS_WITHOUT_CLI): {extra}"
    stale = sorted(set(mcp_server.CLI_WITHOUT_TOOL) - set(_cli_commands(build_parser())))
    assert not stale, f"CLI_WITHOUT_TOOL names commands that no longer exist: {stale}"


def test_every_tool_is_documented_in_docs_mcp_md(env: Env) -> None:
    text = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    missing = [name for name in _tool_names(env) if f"`{name}`" not in text]
    assert not missing, f"tools not listed in docs/mcp.md: {missing}"


def test_every_tool_has_annotations_and_a_description(env: Env) -> None:
    tools = _tool_names(env)
    for name, tool in tools.items():
        assert tool.description, name
        a = tool.annotations
        assert a is not None and a.read_only_hint is not None and a.destructive_hint is not None, name
        assert a.idempotent_hint is not None, name
    for name in ("search", "log_tail", "decisions", "verify", "state_show", "index_status", "recall"):
        assert tools[name].annotations.read_only_hint is True, name
    for name in ("log_append", "decide", "state_set", "memory_remove", "checkpoint_save", "acknowledge"):
        assert tools[name].annotations.read_only_hint is False, name
    for name in ("state_set", "memory_remove", "memory_replace", "memory_facts_retire"):
        assert tools[name].annotations.destructive_hint is True, name


def test_errors_are_tool_errors_with_nexus_messages(env: Env) -> None:
    res = _call(env, ("acknowledge", {"ids": ["not-an-id"]}),
                ("search", {"query": "colour:red"}),
                ("state_set", {"content": "# State\n", "expect": 7}),
                ("checkpoint_show", {"of": "lyra"}))
    texts = [r.content[0].text for r in res]
    assert all(r.is_error for r in res), texts
    assert "is not an entry id" in texts[0]
    assert "unknown field 'colour'" in texts[1]
    assert "version" in texts[2]
    assert "lyra has no checkpoint yet" in texts[3]
    assert "Traceback" not in "".join(texts)


def test_tools_are_thin_adapters_over_the_library(env: Env) -> None:
    question = env.append("lyra", "which database?", type="question").located.entry.id
    res = _call(
        env,
        ("log_owed", {}),
        ("acknowledge", {"ids": [question], "summary": "postgres"}),
        ("log_owed", {}),
        ("decide", {"title": "Use Postgres", "decision": "Postgres for everything.",
                    "rationale": "One database to run."}),
        ("decisions", {}),
        ("checkpoint_save", {"task": "migrate", "step": "schema", "next": "data"}),
        ("checkpoint_show", {}),
        ("memory_add", {"content": "The user prefers short answers."}),
        ("memory_snapshot", {}),
        ("log_read", {"peek": True}),
        ("search", {"query": "postgres", "type": "decision"}),
    )
    owed_before, _ack, owed_after, decided, listed, _cp, shown, _mem, snap, unread, hits = map(_ok, res)
    assert [e["id"] for e in owed_before["items"]] == [question]
    assert owed_after["items"] == []
    assert [d["id"] for d in listed["items"]] == [decided["id"]]
    assert shown["task"] == "migrate" and shown["next"] == "data"
    assert "short answers" in json.dumps(snap)
    assert [e["id"] for e in unread["items"]] == [question]
    assert any(h["path"] == decided["path"] for h in hits["items"])
    assert env.run("verify").returncode == 0


def test_resources_live_log_decisions_and_checkpoint(env: Env) -> None:
    from mcp import Client

    env.append("lyra", "resource heron entry")

    async def go() -> tuple[str, str, str, Any]:
        async with Client(_server(env)) as client:
            await client.call_tool("decide", {"title": "Tabs never", "decision": "Spaces only.",
                                              "rationale": "PEP 8."})
            await client.call_tool("checkpoint_save", {"task": "lint", "step": "ruff", "next": "mypy"})
            log = (await client.read_resource("nexus://log/tail")).contents[0].text
            dec = (await client.read_resource("nexus://decisions")).contents[0].text
            cp = (await client.read_resource("nexus://checkpoint/ella")).contents[0].text
            try:
                missing = await client.read_resource("nexus://checkpoint/lyra")
            except Exception as err:  # the client raises on a resource error
                missing = err
            return log, dec, cp, missing

    log, dec, cp, missing = asyncio.run(go())
    assert "resource heron entry" in log
    assert "Tabs never" in dec
    assert "lint" in cp and "mypy" in cp
    assert "no checkpoint" in str(missing)


def test_an_unknown_agent_is_refused(env: Env) -> None:
    run = env.run("mcp", "--agent", "nobody", check=False)
    assert run.returncode != 0 and "unknown agent 'nobody'" in run.stderr and run.stdout == ""


@pytest.mark.parametrize("command", [["log", "tail"], ["log", "append", "--agent", "ella", "--channel", "c",
                                                       "--type", "note", "--summary", "s"]])
def test_hot_paths_never_import_mcp_or_whoosh(env: Env, command: list[str]) -> None:
    code = ("import sys; from nexus.cli import main; rc = main(sys.argv[1:]); "
            "bad = [m for m in ('mcp', 'whoosh', 'markdown_it') if m in sys.modules]; "
            "assert not bad, bad; sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-W", "error", "-c", code, *command], env=env.environ,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
