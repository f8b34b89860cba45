"""What ``nexus mcp``'s stdio front answers by itself, exactly as the SDK server would, without
importing the MCP SDK (``mcp_front.py`` runs the process and hands over to the SDK server).

:class:`Answers` takes one parsed JSON-RPC message and gives the response, or :class:`Defer` when
the SDK must answer it: ``initialize`` (the same protocol-version negotiation, capabilities, server
info, instructions), ``ping``, ``tools/list``, ``prompts/list``, ``resources/list``,
``resources/templates/list`` from ``mcp_tools.json``, and ``tools/call`` whose arguments
``mcp_tools.check_arguments`` can check exactly (the same operation runs, the same result or error
is rendered). ``mcp_tools.json`` is generated from the SDK server itself over its stdio transport
(``python -m nexus.surfaces.mcp_answers --write``); a test fails when it differs from what the
installed SDK serves.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import mcp_tools
from .mcp_tools import Defer

if TYPE_CHECKING:
    from ..workspace import Workspace

DATA = Path(__file__).with_name("mcp_tools.json")
LISTS = ("prompts/list", "resources/list", "resources/templates/list")
_INIT_KEYS = frozenset({"protocolVersion", "capabilities", "clientInfo", "_meta"})
_CLIENT_INFO_KEYS = frozenset({"name", "version", "title", "description", "websiteUrl"})


def load_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def _is_id(value: Any) -> bool:
    return type(value) in (str, int)


def _valid_initialize(params: Any) -> bool:
    """Whether the SDK takes these ``initialize`` params (the shapes a client sends; anything
    unusual goes to the SDK, which judges it)."""
    if not isinstance(params, dict) or not set(params) <= _INIT_KEYS:
        return False
    info, caps = params.get("clientInfo"), params.get("capabilities")
    return (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(caps, dict)
        and all(isinstance(v, dict) for v in caps.values())
        and isinstance(info, dict)
        and set(info) <= _CLIENT_INFO_KEYS
        and {"name", "version"} <= set(info)
        and all(isinstance(v, str) for v in info.values())
        and isinstance(params.get("_meta", {}), dict)
    )


class Answers:
    """The answers the front gives by itself: :meth:`take` a parsed message, get the response to
    write (None: nothing to write), or :class:`Defer` (the SDK answers it)."""

    def __init__(self, ws: Workspace, agent: str, tools: str, data: dict[str, Any]) -> None:
        self.ws, self.agent, self.data = ws, agent, data
        self.ops = {op.tool: op for op in mcp_tools.served(tools) if op.tool}
        listed = [t for t in data["tools"] if t["name"] in self.ops]
        self.listings: dict[str, Any] = {"tools/list": {"tools": listed}} | {m: data[m] for m in LISTS}
        self.initialize: dict[str, Any] | None = None  # the client's initialize request, once answered
        self.initialized = False  # notifications/initialized came (replayed to the SDK at hand-over)
        self.passthrough = False  # the session did not open with an initialize the front took

    def take(self, message: Any) -> dict[str, Any] | None:
        if self.passthrough:
            raise Defer
        try:
            return self._take(message)
        except Defer:
            if self.initialize is None:  # the SDK decides the session's era from its first request
                self.passthrough = True
            raise

    def _take(self, message: Any) -> dict[str, Any] | None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            raise Defer
        method, params = message.get("method"), message.get("params")
        if not isinstance(method, str):
            raise Defer  # a client's answer to a request of the SDK's
        if "id" not in message:
            if method == "notifications/initialized" and self.initialize is not None and not params:
                self.initialized = True
                return None
            raise Defer
        if not _is_id(message["id"]):
            raise Defer
        if self.initialize is None:
            if method != "initialize" or not _valid_initialize(params):
                raise Defer
            return self._answer(message, self._initialized(message))
        meta = params.get("_meta") if isinstance(params, dict) else None
        if meta is not None and (not isinstance(meta, dict) or self.data["modern_meta_key"] in meta):
            raise Defer  # the 2026 per-request envelope: the SDK refuses it on this session
        if method == "ping" and not params:
            return self._answer(message, {})
        if method in self.listings and self._paginated(params):
            return self._answer(message, self.listings[method])
        if method == "tools/call":
            return self._answer(message, self.call(params))
        raise Defer

    @staticmethod
    def _paginated(params: Any) -> bool:
        """No params, or only a cursor and a progress token (the SDK lists everything on one page
        whatever the cursor, and reports no progress for a listing; Codex sends
        ``_meta.progressToken`` with every ``tools/list`` and waits for the answer before its first
        turn)."""
        if not params:
            return True
        if not isinstance(params, dict) or not set(params) <= {"cursor", "_meta"}:
            return False
        meta = params.get("_meta", {})
        return isinstance(meta, dict) and set(meta) <= {"progressToken"}

    @staticmethod
    def _answer(message: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}

    def _initialized(self, message: dict[str, Any]) -> dict[str, Any]:
        data = self.data
        requested = message["params"]["protocolVersion"]
        version = requested if requested in data["handshake_versions"] else data["latest_handshake_version"]
        if version not in data["front_versions"]:
            raise Defer
        self.initialize = message
        return {
            "capabilities": data["capabilities"],
            "instructions": mcp_tools.instructions(self.agent),
            "protocolVersion": version,
            "serverInfo": {**data["server_info"], "version": mcp_tools.version()},
        }

    def call(self, params: Any) -> dict[str, Any]:
        """A ``tools/call`` result, as the SDK server gives it."""
        if not isinstance(params, dict) or not set(params) <= {"name", "arguments", "_meta"}:
            raise Defer
        name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
        if not isinstance(name, str) or not isinstance(arguments, dict | None):
            raise Defer
        if meta is not None and (
            not isinstance(meta, dict)
            or not set(meta) <= {"progressToken"}
            or not _is_id(meta.get("progressToken", 0))
        ):
            raise Defer
        op = self.ops.get(name)
        if op is None:
            return mcp_tools.failed(f"Unknown tool: {name}")
        try:
            kwargs = mcp_tools.check_arguments(op, arguments or {})
        except ValueError as err:
            return mcp_tools.failed(str(err))
        try:
            return mcp_tools.rendered(op, mcp_tools.call_operation(op, self.ws, self.agent, kwargs))
        except Exception as err:
            text = mcp_tools.error_text(err)
            if text is None:  # a crash: the SDK says only this, and logs the traceback
                import traceback

                traceback.print_exc(file=sys.stderr)
                return mcp_tools.failed(f"Error executing tool {name}")
            return mcp_tools.failed(mcp_tools.refused_text(name, text, self.ops))


# ------------------------------------------------------------------ mcp_tools.json, from the SDK server


def generate() -> dict[str, Any]:
    """What ``mcp_tools.json`` holds, asked of the SDK server itself over its stdio transport: the
    ``initialize`` answer at every handshake version, both tool sets, the prompt and resource lists."""
    import tempfile

    import anyio
    from mcp.types import PROTOCOL_VERSION_META_KEY
    from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    from .. import workspace
    from ..storage.vault import init

    with tempfile.TemporaryDirectory(prefix="nexus-mcp-tools-") as tmp:
        vault, _ = init(Path(tmp) / "vault")
        ws = workspace.for_vault(vault, {}, keys=Path(tmp) / "keys")
        asked = {v: anyio.run(_ask_sdk, ws, "all", v) for v in HANDSHAKE_PROTOCOL_VERSIONS}
        agent_set = anyio.run(_ask_sdk, ws, "agent", LATEST_HANDSHAKE_VERSION)
    latest = asked[LATEST_HANDSHAKE_VERSION]
    init_result = latest["initialize"]

    def same(answers: dict[str, Any]) -> bool:
        return {**answers, "initialize": {**answers["initialize"], "protocolVersion": None}} == {
            **latest,
            "initialize": {**init_result, "protocolVersion": None},
        }

    return {
        "generated_by": "python -m nexus.surfaces.mcp_answers --write",
        "handshake_versions": list(HANDSHAKE_PROTOCOL_VERSIONS),
        "latest_handshake_version": LATEST_HANDSHAKE_VERSION,
        "front_versions": [v for v, answers in asked.items() if same(answers)],
        "modern_meta_key": PROTOCOL_VERSION_META_KEY,
        "capabilities": init_result["capabilities"],
        "server_info": {k: v for k, v in init_result["serverInfo"].items() if k != "version"},
        "agent_tools": [t["name"] for t in agent_set["tools/list"]["tools"]],
        "tools": latest["tools/list"]["tools"],
        **{m: latest[m] for m in LISTS},
    }


async def _ask_sdk(ws: Workspace, tools: str, version: str) -> dict[str, Any]:
    """The SDK server's answers to an ``initialize`` at ``version`` and to the listings."""
    import anyio

    from . import mcp_server

    methods = ["initialize", "tools/list", *LISTS]
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "nexus", "version": "0"}}
    lines = [json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})]
    lines.append(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    lines += [json.dumps({"jsonrpc": "2.0", "id": i, "method": m}) for i, m in enumerate(methods) if i]
    answered: dict[str, Any] = {}
    done = anyio.Event()

    class Collect:
        async def write(self, text: str) -> int:
            for line in filter(None, text.split("\n")):
                message = json.loads(line)
                answered[methods[message["id"]]] = message.get("result", message.get("error"))
            if len(answered) == len(methods):
                done.set()
            return len(text)

        async def flush(self) -> None:
            return None

    async def feed() -> AsyncIterator[str]:
        for line in lines:
            yield line + "\n"
        await done.wait()

    class Feed:
        def __aiter__(self) -> AsyncIterator[str]:
            return feed()

    server = mcp_server.make_server(ws, "AGENT", tools)
    with anyio.fail_after(60):
        await server.serve_lines(Feed(), Collect())
    return answered


def write() -> Path:
    DATA.write_text(json.dumps(generate(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return DATA


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(
            "usage: python -m nexus.surfaces.mcp_answers --write   (regenerates mcp_tools.json from the SDK)"
        )
    print(f"wrote {write()}")
