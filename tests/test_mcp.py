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

from nexus.surfaces.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent


def _cli_commands(parser: argparse.ArgumentParser, prefix: str = "") -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                full = f"{prefix} {name}".strip()
                if sub.get_default("handler") is not None:
                    yield full
                yield from _cli_commands(sub, full)


def _server(env: Env, agent: str = "ella", tools: str = "all") -> Any:
    from nexus import workspace
    from nexus.surfaces import mcp_server

    ws = workspace.for_vault(env.vault, {}, keys=env.keys_home)
    return mcp_server.build_server(ws, agent, tools=tools)


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


def _text(resource: Any) -> str:
    """The text of a resource read through the client."""
    return str(resource.contents[0].text)


def _tool_names(env: Env, tools: str = "all") -> dict[str, Any]:
    from mcp import Client

    async def go() -> dict[str, Any]:
        async with Client(_server(env, tools=tools)) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    return asyncio.run(go())


def test_stdio_smoke_through_the_official_client(env: Env) -> None:
    """`nexus mcp` as a real subprocess over stdio: initialise, list, append, search, a refused input."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-W", "error", "-m", "nexus", "mcp", "--agent", "ella"],
        env={"NEXUS_VAULT": str(env.vault.root), "NEXUS_HOME": str(env.keys_home), "PYTHONPATH": str(ROOT)},
        cwd=str(env.vault.root),
    )

    async def go() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"brief", "log_append", "search", "decide", "checkpoint_save"} <= names
            assert "state_restore" not in names  # maintenance tools only with --tools all
            appended = await session.call_tool(
                "log_append", {"channel": "build", "type": "note", "summary": "stdio capybara works"}
            )
            assert not appended.is_error
            entry_id = appended.structured_content["id"]
            found = await session.call_tool("search", {"query": "capybara"})
            assert [h["entry_id"] for h in found.structured_content["items"]] == [entry_id]
            refused: Any = await session.call_tool(
                "log_append", {"channel": "Bad Channel", "type": "note", "summary": "x"}
            )
            assert refused.is_error and "invalid channel" in refused.content[0].text

    asyncio.run(go())
    assert env.run("verify").returncode == 0


def test_every_operation_is_reachable_on_each_surface_it_declares(env: Env) -> None:
    """The surfaces are generated from the operations: each one's command is in the parser, its tool
    is served (under `--tools all`; the default set is the operations marked for agents), and one
    missing from a surface says why."""
    from nexus.operations import OPERATIONS
    from nexus.surfaces import mcp_server

    tools, commands = set(_tool_names(env)), set(_cli_commands(build_parser()))
    agent_tools = set(_tool_names(env, "agent"))
    for op in OPERATIONS:
        assert op.command is None or op.command in commands, op.name
        assert op.tool is None or op.tool in tools, op.name
        assert op.tool is None or (op.tool in agent_tools) == op.agent_tool, op.name
        assert (op.command and op.tool) or op.why_not, f"{op.name}: on one surface only, and no reason"
        assert mcp_server.tool_for_cli(op.command or "") == op.tool or not op.command or not op.tool
    # every tool is an operation's; a command no operation declares says why it has no tool
    assert tools == {op.tool for op in OPERATIONS if op.tool}
    declared = {op.command for op in OPERATIONS}
    undeclared = sorted(c for c in commands - declared if c not in mcp_server.CLI_WITHOUT_TOOL)
    assert not undeclared, (
        f"CLI commands neither declared as operations nor in CLI_WITHOUT_TOOL: {undeclared}"
    )
    stale = sorted(set(mcp_server.CLI_WITHOUT_TOOL) - commands)
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
    res = _call(
        env,
        ("acknowledge", {"ids": ["not-an-id"]}),
        ("search", {"query": "colour:red"}),
        ("state_set", {"content": "# State\n", "expect": 7}),
        ("checkpoint_show", {"of": "lyra"}),
    )
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
        (
            "decide",
            {
                "title": "Use Postgres",
                "decision": "Postgres for everything.",
                "rationale": "One database to run.",
            },
        ),
        ("decisions", {}),
        ("decisions_show", {"id": "D-0001"}),
        ("checkpoint_save", {"task": "migrate", "step": "schema", "next": "data"}),
        ("checkpoint_show", {}),
        ("memory_add", {"content": "The user prefers short answers."}),
        ("memory_snapshot", {}),
        ("log_read", {"peek": True}),
        ("search", {"query": "postgres", "type": "decision"}),
    )
    owed_before, _ack, owed_after, decided, listed, one, _cp, shown, _mem, snap, unread, hits = map(_ok, res)
    assert one["id"] == decided["id"] and one["rationale"] == "One database to run."
    assert one["in_force"] == decided["id"] and one["superseded_by_chain"] == []
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
            await client.call_tool(
                "decide", {"title": "Tabs never", "decision": "Spaces only.", "rationale": "PEP 8."}
            )
            await client.call_tool("checkpoint_save", {"task": "lint", "step": "ruff", "next": "mypy"})
            log = _text(await client.read_resource("nexus://log/tail"))
            dec = _text(await client.read_resource("nexus://decisions"))
            cp = _text(await client.read_resource("nexus://checkpoint/ella"))
            missing: Any
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


@pytest.mark.parametrize(
    "command",
    [
        ["log", "tail"],
        ["log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", "s"],
    ],
)
def test_hot_paths_never_import_mcp_or_whoosh(env: Env, command: list[str]) -> None:
    code = (
        "import sys; from nexus.surfaces.cli import main; rc = main(sys.argv[1:]); "
        "bad = [m for m in ('mcp', 'whoosh', 'markdown_it') if m in sys.modules]; "
        "assert not bad, bad; sys.exit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", code, *command],
        env=env.environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr


# ------------------------------------------------------------------ answers made for agents (issue 9)


def test_the_brief_comes_once_as_markdown_within_its_budget_and_names_tools(env: Env) -> None:
    """Over MCP the brief is its Markdown text, once (no JSON copy), within the budget, and every
    instruction in it names an MCP tool, never a shell command."""
    from mcp import Client

    question = env.append(
        "lyra", "which queue library?", type="question", body="nats or redis"
    ).located.entry.id
    for i in range(80):
        env.append("lyra", f"progress note {i:03d}", body="detail " * 40)

    async def go() -> Any:
        async with Client(_server(env, tools="agent")) as client:
            return await client.call_tool("brief", {"max_chars": 3000})

    res = asyncio.run(go())
    assert not res.is_error
    assert len(res.content) == 1 and res.structured_content is None
    text = res.content[0].text
    assert text.startswith("# nexus brief for ella") and len(text) <= 3000
    assert text.count(question) == 1 and "nats or redis" in text  # owed and unread: once, with its body
    assert "`acknowledge`" in text and "`log_read`" in text  # what to call, as tools
    assert "nexus log" not in text and "--agent" not in text


def test_every_tool_has_a_title_and_every_parameter_a_description(env: Env) -> None:
    tools = _tool_names(env)
    for name, tool in tools.items():
        assert tool.title, f"{name} has no title"
        for param, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), f"{name}.{param} has no description"

    # closed sets are enums
    def enum(tool: str, param: str) -> list[str]:
        return list(tools[tool].input_schema["properties"][param]["enum"])

    assert enum("log_append", "type") == ["note", "question", "correction", "handoff"]
    assert enum("memory_add", "target") == ["memory", "user"]
    assert enum("checkpoint_save", "status") == ["in-progress", "blocked", "done"]
    assert enum("retain", "type") == ["decision", "fact", "failure", "preference"]


def test_the_default_tool_set_is_small_and_all_serves_every_tool(env: Env) -> None:
    """The sizes docs/mcp.md reports are the sizes served (tool count exact, characters within 10%)."""
    import re

    from nexus.surfaces import mcp_server

    agent_set, all_set = _tool_names(env, "agent"), _tool_names(env, "all")
    assert set(agent_set) == set(mcp_server.AGENT_TOOLS)
    assert set(agent_set) < set(all_set)
    docs = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    for label, served in (("agent", agent_set), ("all", all_set)):
        size = len(
            json.dumps(
                [t.model_dump(mode="json", exclude_none=True, by_alias=True) for t in served.values()],
                ensure_ascii=False,
            )
        )
        found = re.search(rf"`--tools {label}`[^|]*\| (\d+) \| ([\d,]+) \|", docs)
        assert found, f"docs/mcp.md does not report the size of the {label} set"
        assert int(found.group(1)) == len(served)
        documented = int(found.group(2).replace(",", ""))
        assert abs(documented - size) <= size * 0.1, (label, documented, size)


def test_a_missing_or_invalid_argument_is_one_readable_line(env: Env) -> None:
    res = _call(
        env,
        ("log_append", {"channel": "build", "type": "note"}),
        ("log_append", {"channel": "build", "type": "gossip", "summary": "x"}),
        ("log_tail", {"n": "many"}),
    )
    texts = [r.content[0].text for r in res]
    assert all(r.is_error for r in res), texts
    assert texts[0] == "log_append: missing required argument `summary`"
    assert texts[1].startswith("log_append: `type` must be one of") and "'note'" in texts[1]
    assert texts[2].startswith("log_tail: `n`")
    for text in texts:
        assert "\n" not in text and "pydantic" not in text and "http" not in text, text


def test_messages_name_tools_not_shell_commands(env: Env) -> None:
    """A library message naming a CLI command reads, over MCP, as the tool to call."""
    from nexus.surfaces import mcp_server
    from nexus.team import hints

    stale, missing = _call(
        env, ("state_set", {"content": "# State\n", "expect": 7}), ("state_diff", {"old": 42})
    )
    for res in (stale, missing):
        assert res.is_error and "`nexus " not in res.content[0].text, res.content[0].text
    assert "the `state_show` tool" in stale.content[0].text
    assert "the `state_history` tool" in missing.content[0].text
    swapped = hints.tools_for_commands(
        "run `nexus log append --agent a --ack ID` or `nexus watch`", {"log_append"}, mcp_server.tool_for_cli
    )
    assert swapped == "run the `log_append` tool or `nexus watch`"  # a command without a tool stays


def test_results_leave_out_signatures_chain_hashes_and_keys_unless_asked(env: Env) -> None:
    appended, tail, full = map(
        _ok,
        _call(
            env,
            ("log_append", {"channel": "build", "type": "note", "summary": "lean answers"}),
            ("log_tail", {"n": 1}),
            ("log_tail", {"n": 1, "full": True}),
        ),
    )
    assert set(appended) == {"id", "file", "lines", "link"}
    assert len(json.dumps(appended)) < 200
    lean = tail["items"][0]
    assert lean["id"] == appended["id"] and lean["summary"] == "lean answers"
    assert not {"sig", "prev", "key", "seq", "seen"} & set(lean)
    assert {"sig", "prev", "key"} <= set(full["items"][0]) and full["items"][0]["sig"]


def test_log_append_tells_the_agent_when_its_body_was_made_visible(env: Env) -> None:
    """A body holding markup Obsidian hides is stored visible, and the MCP caller is told (issue 12)."""
    changed, plain = _call(
        env,
        (
            "log_append",
            {"channel": "build", "type": "note", "summary": "x", "body": "before %% hidden %% after"},
        ),
        ("log_append", {"channel": "build", "type": "note", "summary": "y", "body": "nothing hidden"}),
    )
    note = _ok(changed).get("note", "")
    assert "%\\%" in note and "person sees all of it" in note
    assert "note" not in _ok(plain)
