"""`nexus mcp`'s stdio front (issue 9 item 7): it answers the first requests exactly as the SDK server
would, hands the stream over to the SDK server once the SDK is loaded, and serves alone when the SDK
cannot be loaded. Real processes compare the front (`NEXUS_MCP_FRONT=front`: never hands over) with
the SDK server alone (`NEXUS_MCP_FRONT=sdk`), response for response; the argument checks and the
result text are compared with the SDK's own in-process."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from hypothesis import given, settings
from hypothesis import strategies as st

from nexus import workspace
from nexus.surfaces import mcp_answers, mcp_capture, mcp_front, mcp_tools

ROOT = Path(__file__).resolve().parent.parent
ULID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def _request(i: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _init(i: int, version: str) -> dict[str, Any]:
    client = {"name": "test", "version": "1"}
    return _request(i, "initialize", {"protocolVersion": version, "capabilities": {}, "clientInfo": client})


def _call(i: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return _request(i, "tools/call", {"name": name, "arguments": arguments})


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _serve(
    vault: Path, keys: Path, messages: list[dict[str, Any]], *, mode: str, tools: str = "agent", **extra: str
) -> tuple[list[dict[str, Any]], str]:
    """Run `nexus mcp` as a client would: each request written once the previous one is answered
    (the SDK runs concurrent requests concurrently), stdin closed at the end. Returns every line the
    server wrote, in order, and its stderr."""
    environ = dict(os.environ, NEXUS_VAULT=str(vault), NEXUS_HOME=str(keys), NEXUS_MCP_FRONT=mode, **extra)
    err = vault.parent / f"stderr-{mode}.txt"
    out: list[dict[str, Any]] = []
    with (
        err.open("wb") as stderr,
        subprocess.Popen(
            [sys.executable, "-W", "error", "-m", "nexus", "mcp", "--agent", "ella", "--tools", tools],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=environ,
            cwd=str(vault),
        ) as proc,
    ):
        assert proc.stdin is not None and proc.stdout is not None
        for message in messages:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
            while "id" in message and message["id"] not in {m.get("id") for m in out}:
                line = proc.stdout.readline()
                assert line, f"the server closed stdout before answering {message}: {err.read_text()}"
                out.append(json.loads(line))
        proc.stdin.close()
        out += [json.loads(line) for line in proc.stdout]
        assert proc.wait(timeout=60) == 0, err.read_text()
    return out, err.read_text(encoding="utf-8")


def _twins(env: Env, tmp_path: Path) -> tuple[tuple[Path, Path], tuple[Path, Path]]:
    """Two identical copies of the vault and its keys: one for the front, one for the SDK."""
    pairs = []
    for name in ("front", "sdk"):
        shutil.copytree(env.vault.root, tmp_path / name / "vault", symlinks=True)
        shutil.copytree(env.keys_home, tmp_path / name / "keys", symlinks=True)
        pairs.append((tmp_path / name / "vault", tmp_path / name / "keys"))
    return pairs[0], pairs[1]


def _normal(messages: list[dict[str, Any]]) -> str:
    """The answers with entry ids and times replaced (two vaults never mint the same ones)."""
    return TIME.sub(
        "TIME", ULID.sub("ULID", json.dumps(messages, sort_keys=True, ensure_ascii=False, indent=1))
    )


AGENT_SESSION = [
    _init(1, "2026-07-28"),  # newer than the handshake: both counter-offer the latest handshake version
    INITIALIZED,
    _request(2, "ping"),
    _request(3, "tools/list"),
    _request(4, "prompts/list"),
    _request(5, "resources/list"),
    _request(6, "resources/templates/list"),
    _call(7, "brief", {}),
    _call(8, "log_append", {"channel": "build", "type": "note", "summary": "front capybara", "body": "é ✓"}),
    _call(9, "log_append", {"channel": "build", "type": "note"}),
    _call(10, "log_append", {"channel": "build", "type": "gossip", "summary": "x"}),
    _call(11, "nope", {}),
    _call(12, "log_append", {"channel": "Bad Channel", "type": "note", "summary": "x"}),
    _call(13, "log_append", {"channel": "build", "type": "note", "summary": "extra key", "zzz": 1}),
    _call(14, "acknowledge", {"ids": ["not-an-id"]}),
    _call(15, "search", {"query": "capybara"}),
    _call(16, "checkpoint_save", {"status": "sleeping"}),
    _call(17, "state_restore", {"version": 1}),
    _call(18, "brief", {"peek": True, "max_chars": 3000}),
    _call(19, "log_append", {"channel": "build", "type": "note", "summary": "hidden", "body": "a %% b %% c"}),
    _request(20, "tools/list", {"_meta": {"progressToken": 0}}),  # as Codex 0.171 asks
]


def _modern(
    i: int, method: str, params: dict[str, Any] | None = None, version: str = "2026-07-28"
) -> dict[str, Any]:
    """A request in the 2026 era: the per-request envelope in its ``_meta``, as Claude Code sends it."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {
            "name": "claude-code",
            "title": "Claude Code",
            "version": "2.1.332",
        },
        "io.modelcontextprotocol/clientCapabilities": {
            "roots": {"listChanged": True},
            "elicitation": {"form": {}},
        },
    }
    return _request(i, method, {**(params or {}), "_meta": meta})


MODERN_SESSION = [
    _modern(1, "server/discover"),  # how Claude Code opens
    _modern(2, "tools/list"),
    _modern(3, "prompts/list"),
    _modern(4, "resources/list"),
    _modern(5, "resources/templates/list"),
    _modern(6, "tools/call", {"name": "brief", "arguments": {}}),
    _modern(
        7,
        "tools/call",
        {
            "name": "log_append",
            "arguments": {"channel": "build", "type": "note", "summary": "modern capybara"},
        },
    ),
    _modern(8, "tools/call", {"name": "log_append", "arguments": {"channel": "build", "type": "gossip"}}),
    _modern(9, "tools/call", {"name": "nope", "arguments": {}}),
    _modern(10, "server/discover", version="2099-01-01"),  # unknown: the SDK's refusal, at once
    _modern(11, "tools/list", {"cursor": "x"}),
    _init(12, "2025-11-25"),  # a handshake on a 2026 connection: the SDK's refusal, at once
]
ALL_SESSION = [
    _init(1, "2025-06-18"),
    INITIALIZED,
    _request(2, "tools/list", {"cursor": "anything"}),
    _call(3, "log_tail", {"n": 1}),
    _call(4, "log_tail", {"n": 1, "full": True}),
    _call(5, "state_set", {"content": "# State\n", "expect": 7}),
    _call(6, "decisions", {"all": True}),
    _call(7, "memory_facts_add", {"name": "x", "type": "rumour"}),
]


@pytest.mark.parametrize(
    ("session", "tools"), [(AGENT_SESSION, "agent"), (ALL_SESSION, "all"), (MODERN_SESSION, "agent")]
)
def test_the_front_answers_as_the_sdk_server_does(
    env: Env, tmp_path: Path, session: list[dict[str, Any]], tools: str
) -> None:
    """Response for response, the front alone (never handing over) and the SDK server alone give the
    same JSON: initialize, the listings, tool results, refusals, unknown tools."""
    question = env.append("lyra", "which queue?", type="question").located.entry.id
    env.append("lyra", "a capybara was seen", body="near the build server")
    front_vault, sdk_vault = _twins(env, tmp_path)
    front, front_err = _serve(*front_vault, session, mode="front", tools=tools)
    sdk, _ = _serve(*sdk_vault, session, mode="sdk", tools=tools)
    assert [m.get("id") for m in front] == [m["id"] for m in session if "id" in m]
    assert all("result" in m or m["id"] in (10, 12) for m in front), front  # the front answered all
    assert _normal(front) == _normal(sdk)
    assert "could not be loaded" not in front_err  # nothing was left for the SDK
    if tools == "agent":
        brief = 7 if session is AGENT_SESSION else 6
        assert question in json.dumps([m for m in front if m["id"] == brief])  # the brief shows what is owed
    for vault, _keys in (front_vault, sdk_vault):
        verify = subprocess.run(
            [sys.executable, "-m", "nexus", "--vault", str(vault), "verify"],
            env=dict(os.environ, NEXUS_HOME=str(_keys)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_session_through_the_official_client_spans_the_hand_over(env: Env, tmp_path: Path) -> None:
    """`lazy`: the SDK loads only when a request needs it, so the first calls are the front's for
    certain; a resource read makes the SDK take the stream; calls and reads after it are the SDK's."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env.append("lyra", "before the hand-over, a heron")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-W", "error", "-m", "nexus", "mcp", "--agent", "ella"],
        env={
            "NEXUS_VAULT": str(env.vault.root),
            "NEXUS_HOME": str(env.keys_home),
            "PYTHONPATH": str(ROOT),
            "NEXUS_MCP_FRONT": "lazy",
        },
        cwd=str(env.vault.root),
    )

    async def go() -> None:
        with (tmp_path / "stderr.txt").open("w") as errlog:
            await session_through(errlog)

    async def session_through(errlog: Any) -> None:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as typed,
        ):
            session: Any = typed
            init = await session.initialize()
            assert init.server_info.name == "nexus" and "ella" in (init.instructions or "")
            names = {t.name for t in (await session.list_tools()).tools}
            assert names == set(mcp_tools.AGENT_TOOLS)
            brief = await session.call_tool("brief", {})
            assert not brief.is_error and "a heron" in brief.content[0].text
            first = await session.call_tool(
                "log_append", {"channel": "c", "type": "note", "summary": "front otter"}
            )
            assert not first.is_error
            decide = {"title": "Otters first", "decision": "Always.", "rationale": "They are quick."}
            assert not (await session.call_tool("decide", decide)).is_error
            # the SDK takes the stream here: the decision the front recorded is there for it
            decisions = await session.read_resource("nexus://decisions")
            assert "Otters first" in decisions.contents[0].text
            second = await session.call_tool(
                "log_append", {"channel": "c", "type": "note", "summary": "sdk otter"}
            )
            assert not second.is_error
            found = await session.call_tool("search", {"query": "otter"})
            ids = {h["entry_id"] for h in found.structured_content["items"] if h["entry_id"]}
            assert {first.structured_content["id"], second.structured_content["id"]} <= ids
            missing = await session.call_tool("log_append", {"channel": "c", "type": "note"})
            assert (
                missing.is_error
                and missing.content[0].text == "log_append: missing required argument `summary`"
            )
            assert {t.name for t in (await session.list_tools()).tools} == names
            log = await session.read_resource("nexus://log/tail")
            assert "front otter" in log.contents[0].text and "sdk otter" in log.contents[0].text

    asyncio.run(go())
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()
    assert env.run("verify").returncode == 0


def test_without_the_sdk_the_front_serves_tools_and_errors_the_rest(env: Env, tmp_path: Path) -> None:
    """An `mcp` package that fails to import: the front still answers initialize, the tool list and
    tool calls; a resource read gets a JSON-RPC error; EOF ends with exit 0."""
    broken = tmp_path / "broken"
    (broken / "mcp").mkdir(parents=True)
    (broken / "mcp" / "__init__.py").write_text("raise ImportError('no SDK here')\n")
    messages = [
        _init(1, "2025-11-25"),
        INITIALIZED,
        _request(2, "resources/read", {"uri": "nexus://decisions"}),
        _request(3, "tools/list"),
        _call(4, "log_append", {"channel": "c", "type": "note", "summary": "no sdk needed"}),
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}},
        _call(5, "brief", {"max_chars": "lots"}),  # a value the SDK would judge: refused here
    ]
    out, err = _serve(
        env.vault.root,
        env.keys_home,
        messages,
        mode="auto",
        PYTHONPATH=os.pathsep.join([str(broken), str(ROOT)]),
    )
    by_id = {m["id"]: m for m in out}
    assert len(out) == len(by_id) == 5  # every request answered once; the notification none
    assert by_id[1]["result"]["serverInfo"]["name"] == "nexus"
    assert "no SDK here" in by_id[2]["error"]["message"] and "no SDK here" in err
    assert len(by_id[3]["result"]["tools"]) == len(mcp_tools.AGENT_TOOLS)
    assert by_id[4]["result"]["isError"] is False
    assert by_id[5]["error"]["code"] == mcp_front.INTERNAL_ERROR
    assert "no sdk needed" in env.run("log", "tail").stdout


def _whole_session(env: Env, messages: list[dict[str, Any]]) -> tuple[dict[Any, dict[str, Any]], str]:
    """``nexus mcp`` fed ``messages`` then EOF at once: its answers by id, and its stdout."""
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-m", "nexus", "mcp", "--agent", "ella"],
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True,
        text=True,
        env=env.environ,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return {m["id"]: m for m in map(json.loads, proc.stdout.splitlines()) if "id" in m}, proc.stdout


def test_requests_kept_for_the_sdk_are_answered_when_stdin_closes_at_once(env: Env) -> None:
    """A client that writes its requests and closes stdin: the front answers its own, the SDK those
    kept for it (its transport alone would drop what is in flight at EOF), a cancelled one excepted."""
    messages = [
        _init(1, "2025-11-25"),
        INITIALIZED,
        _request(2, "resources/read", {"uri": "nexus://decisions"}),
        _call(3, "log_append", {"channel": "c", "type": "note", "summary": "before eof"}),
        _request(4, "resources/read", {"uri": "nexus://log/tail"}),
        _request(5, "resources/read", {"uri": "nexus://decisions"}),
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}},
    ]
    by_id, stdout = _whole_session(env, messages)
    assert {1, 2, 3, 4} <= set(by_id) and all("result" in by_id[i] for i in (1, 2, 3, 4)), stdout
    assert "before eof" in by_id[4]["result"]["contents"][0]["text"]


def test_a_session_opening_with_the_2026_envelope_spans_the_hand_over(env: Env) -> None:
    """No `initialize`: the client's first request carries the 2026-07-28 per-request envelope (Claude
    Code opens so). The front answers the discover and the call in that era; the SDK serves the rest
    of the session in the same era after the hand-over."""
    meta = {
        mcp_answers.load_data()["modern_meta_key"]: "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    listen = _request(
        "listen:0", "subscriptions/listen", {"_meta": meta, "notifications": {"toolsListChanged": True}}
    )
    messages = [
        _request(1, "server/discover", {"_meta": meta}),
        listen,  # acknowledged by the front; the SDK serves the stream from the hand-over on
        _request(2, "tools/call", {"name": "brief", "arguments": {"peek": True}, "_meta": meta}),
        _request(3, "resources/read", {"uri": "nexus://decisions", "_meta": meta}),  # the SDK's
        _request(4, "tools/call", {"name": "brief", "arguments": {"peek": True}, "_meta": meta}),
    ]
    front = mcp_answers.Answers(
        workspace.for_vault(env.vault, {}, keys=env.keys_home), "ella", "agent", mcp_answers.load_data()
    )
    opened = front.take(messages[0])
    assert opened is not None and opened["result"]["supportedVersions"] == ["2026-07-28"]
    ack = front.take(listen)
    assert ack is not None and ack["method"] == "notifications/subscriptions/acknowledged", ack
    called = front.take(messages[2])
    assert called is not None and called["result"]["resultType"] == "complete"  # the front's, in that era
    with pytest.raises(mcp_tools.Defer):
        front.take(messages[3])
    by_id, stdout = _whole_session(env, messages)
    assert "2026-07-28" in by_id[1]["result"]["supportedVersions"], by_id[1]
    for i in (2, 4):
        assert by_id[i]["result"]["resultType"] == "complete", stdout
        assert by_id[i]["result"]["content"][0]["text"].startswith("# nexus brief for ella")
    assert by_id[3]["result"]["contents"], stdout  # the SDK took the stream in the 2026 era
    acks = [m for m in map(json.loads, stdout.splitlines()) if m.get("method") == mcp_answers.LISTEN_ACK]
    assert acks == [ack], stdout  # once, the front's: the SDK's own, after the hand-over, swallowed


def test_what_the_front_leaves_to_the_sdk(env: Env) -> None:
    """Anything the front cannot be sure to answer as the SDK would goes to the SDK, unanswered here;
    a session that does not open with an initialize the front took is the SDK's entirely."""
    from nexus import workspace

    ws = workspace.for_vault(env.vault, {}, keys=env.keys_home)

    def answers() -> mcp_answers.Answers:
        return mcp_answers.Answers(ws, "ella", "agent", mcp_answers.load_data())

    front = answers()
    opened = front.take(_init(1, "2025-06-18"))
    assert opened is not None and opened["result"]["protocolVersion"] == "2025-06-18"
    assert front.take(INITIALIZED) is None and front.initialized
    envelope = {mcp_answers.load_data()["modern_meta_key"]: "2026-07-28"}
    kept = [
        None,  # not JSON
        [_request(2, "ping")],  # a batch
        {"jsonrpc": "2.0", "id": 2, "result": {}},  # a client's answer
        {**_request(2, "ping"), "id": True},
        _request(2, "ping", {"_meta": {"progressToken": 1}}),
        _request(2, "tools/list", {"_meta": envelope}),
        _request(2, "resources/read", {"uri": "nexus://decisions"}),
        _request(2, "completion/complete", {}),
        _request(2, "initialize", _init(2, "2025-11-25")["params"]),  # a second one
        _request(2, "tools/call", {"name": "brief", "arguments": {}, "task": {}}),
        _request(2, "tools/call", {"name": "brief", "arguments": {}, "_meta": {"progressToken": [1]}}),
        _request(2, "tools/call", {"name": "brief", "arguments": "{}"}),
        _call(2, "brief", {"max_chars": "300"}),
        _call(2, "brief", {"max_chars": 100}),
        _call(2, "log_append", {"channel": "c", "type": "note", "summary": "x", "body": "null"}),
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
    ]
    for message in kept:
        with pytest.raises(mcp_tools.Defer):
            front.take(message)
    assert not front.passthrough
    assert front.take(_request(3, "ping")) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    for opening in (_request(1, "ping"), _init(1, "2025-11-25") | {"params": {"protocolVersion": "x"}}):
        late = answers()
        with pytest.raises(mcp_tools.Defer):
            late.take(opening)
        with pytest.raises(mcp_tools.Defer):  # everything after it too
            late.take(_init(2, "2025-11-25"))
        assert late.passthrough


def test_mcp_tools_json_is_what_the_sdk_server_serves() -> None:
    """The front's tool list and initialize answer are generated from the SDK server; regenerate with
    `python -m nexus.surfaces.mcp_capture --write` when this fails."""
    assert mcp_answers.load_data() == json.loads(json.dumps(mcp_capture.generate())), (
        "nexus/surfaces/mcp_tools.json is stale: run `python -m nexus.surfaces.mcp_capture --write`"
    )


# ------------------------------------------------------------ in-process: the front's checks = the SDK's


def _sdk_tools(env: Env) -> dict[str, Any]:
    from nexus import workspace
    from nexus.surfaces import mcp_server

    server = mcp_server.build_server(
        workspace.for_vault(env.vault, {}, keys=env.keys_home), "ella", tools="all"
    )
    return {str(op.tool): server._tool_manager.get_tool(str(op.tool)) for op in mcp_tools.served("all")}


def _sdk_kwargs(tool: Any, name: str, arguments: dict[str, Any]) -> Any:
    """What the SDK gives the tool function for ``arguments``, or its one-line refusal."""
    from pydantic import ValidationError

    from nexus.surfaces.mcp_server import readable

    try:
        return tool.fn_metadata.validate_arguments(arguments)
    except ValidationError as err:
        return readable(name, err)


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 300),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(
        ["note", "memory", "done", "null", "[1]", "true", "5", '"x"', "{}", "", "zzz", "in-progress"]
    ),
    st.text(max_size=6),
    st.lists(st.sampled_from(["a", "01M8SVKGTG3WGC8PMSEQ1C7XQJ", "null"]), max_size=2),
    st.lists(st.integers(0, 3), min_size=1, max_size=2),
)


def test_the_fronts_argument_check_is_the_sdks(env: Env) -> None:
    """For any arguments, when the front does not defer to the SDK, it gives the tool exactly the
    keyword arguments the SDK's argument model gives, or exactly the SDK's one-line refusal."""
    tools = _sdk_tools(env)

    @settings(max_examples=150, deadline=None)
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        op = data.draw(st.sampled_from(mcp_tools.served("all")))
        names = [p.name for p in op.params_for("mcp")] + (["full"] if op.full else []) + ["other"]
        arguments = data.draw(st.dictionaries(st.sampled_from(names), VALUES, max_size=4))
        expected = _sdk_kwargs(tools[str(op.tool)], str(op.tool), arguments)
        try:
            got: Any = mcp_tools.check_arguments(op, arguments)
        except mcp_tools.Defer:
            return
        except ValueError as err:
            got = str(err)
        assert got == expected, (op.tool, arguments)

    check()


def test_every_tools_refusal_of_missing_or_closed_set_arguments_is_the_sdks(env: Env) -> None:
    """Every tool with a required parameter or a closed set: the refusal for none given and for a
    value outside each set, the front's text beside the SDK's."""
    tools = _sdk_tools(env)
    checked = 0
    for op in mcp_tools.served("all"):
        params = op.params_for("mcp")
        bad = {p.name: "zzz" for p in params if p.choices}
        for arguments in ({}, bad):
            if not any(p.required for p in params) and not (arguments and bad):
                continue  # nothing to refuse: the call would run
            try:
                front = mcp_tools.check_arguments(op, arguments)
            except ValueError as err:
                front = str(err)  # type: ignore[assignment]
            assert front == _sdk_kwargs(tools[str(op.tool)], str(op.tool), arguments), op.tool
            checked += 1
    assert checked >= 20


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(exclude_categories=["Cs"])),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(value=JSON_VALUES)
def test_result_text_is_the_sdks(value: Any) -> None:
    """A result's text content is byte for byte what the SDK writes (pydantic-core's JSON)."""
    import pydantic_core

    assert mcp_tools.json_text(value) == pydantic_core.to_json(value, fallback=str, indent=2).decode()


def test_the_tool_data_is_shipped_with_the_package() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert "mcp_tools.json" in config["package-data"]["nexus.surfaces"]
    assert (
        Path(mcp_answers.DATA).is_file() and Path(mcp_answers.DATA).parent == Path(mcp_tools.__file__).parent
    )


def test_every_tool_count_and_size_in_the_docs_is_what_is_served() -> None:
    """Each "N tools" and "N tools, M characters" the docs and the README say about a tool set is
    what the server lists (`mcp_tools.json`, itself checked against the SDK above): the count
    exact, the characters of the `tools/list` JSON within 1%."""
    data = mcp_answers.load_data()
    sets = {"agent": [t for t in data["tools"] if t["name"] in data["agent_tools"]], "all": data["tools"]}
    size = {k: len(json.dumps(v, ensure_ascii=False)) for k, v in sets.items()}
    count = {k: len(v) for k, v in sets.items()}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    pattern = re.compile(r"(\d+) tools(?:, ([\d,]+) characters)?")
    checked = 0
    for page in pages:
        if page.name == "performance.md":  # measurements with their dates, not what is served
            continue
        for line in page.read_text(encoding="utf-8").splitlines():
            if "before this split" in line.lower():
                continue
            for found in pattern.finditer(line):
                n = int(found.group(1))
                which = "all" if "all" in line[max(0, found.start() - 40) : found.start()] else "agent"
                assert n == count[which], (
                    f"{page.name}: {line.strip()!r} says {n} tools; {which} serves {count[which]}"
                )
                if found.group(2):
                    chars = int(found.group(2).replace(",", ""))
                    assert abs(chars - size[which]) <= size[which] * 0.01, (
                        page.name,
                        line,
                        chars,
                        size[which],
                    )
                checked += 1
    table = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    for label, key in (("agent", "agent"), ("all", "all")):
        row = re.search(rf"`--tools {label}`[^|]*\| (\d+) \| ([\d,]+) \|", table)
        assert row and int(row.group(1)) == count[key], label
        assert abs(int(row.group(2).replace(",", "")) - size[key]) <= size[key] * 0.01, (
            label,
            row.group(2),
            size[key],
        )
    assert checked >= 5


@pytest.mark.parametrize("handed_over", [False, True], ids=["front", "sdk"])
def test_sigint_ends_nexus_mcp_promptly(env: Env, handed_over: bool) -> None:
    """A runtime closing its server sends SIGINT first (Claude Code then waits ~100 ms before
    SIGTERM): `nexus mcp` exits at once, whether the front or the SDK's server has the stream."""
    import signal
    import time

    proc = subprocess.Popen(
        [sys.executable, "-W", "error", "-m", "nexus", "mcp", "--agent", "ella"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env.environ,
    )
    assert proc.stdin is not None and proc.stdout is not None
    requests = [_init(1, "2025-11-25"), INITIALIZED]
    if handed_over:
        requests.append(_request(2, "resources/read", {"uri": "nexus://decisions"}))  # only the SDK answers
    for message in requests:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
    for _ in range(2 if handed_over else 1):
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] in (1, 2) and "result" in answer, answer
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=60)  # (before the handler: a traceback in the front, a hang once handed over)
    proc.stdin.close()
    proc.stdout.close()
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert code == 0 and "Traceback" not in err, err
