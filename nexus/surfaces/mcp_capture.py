"""``mcp_tools.json``: what the front answers from, captured from the SDK server itself over its stdio
transport (``python -m nexus.surfaces.mcp_capture --write``). ``tests/test_mcp_front.py`` captures it
again and fails when the file differs from what the installed SDK serves.

What it asks, in a fresh vault: the ``initialize`` answer at every handshake version, both tool
sets, the prompt and resource lists, a call's shape; in the 2026-07-28 era: ``server/discover``, the
listings, a call, the refusals of an unknown version and of a handshake.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .mcp_answers import CLIENT_CAPABILITIES, CLIENT_INFO, DATA, LISTS

if TYPE_CHECKING:
    from ..workspace import Workspace


def generate() -> dict[str, Any]:
    """What ``mcp_tools.json`` holds, asked of the SDK server itself over its stdio transport: the
    ``initialize`` answer at every handshake version, both tool sets, the prompt and resource lists."""
    import tempfile

    from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
    from mcp.types import PROTOCOL_VERSION_META_KEY
    from mcp.types.version import (
        HANDSHAKE_PROTOCOL_VERSIONS,
        LATEST_HANDSHAKE_VERSION,
        MODERN_PROTOCOL_VERSIONS,
    )

    from .. import workspace
    from ..storage.vault import init

    with tempfile.TemporaryDirectory(prefix="nexus-mcp-tools-") as tmp:
        vault, _ = init(Path(tmp) / "vault")
        ws = workspace.for_vault(vault, {}, keys=Path(tmp) / "keys")
        asked = {v: _ask_sdk(ws, "all", v) for v in HANDSHAKE_PROTOCOL_VERSIONS}
        agent_set = _ask_sdk(ws, "agent", LATEST_HANDSHAKE_VERSION)
        modern = {v: _ask_sdk_modern(ws, v) for v in MODERN_PROTOCOL_VERSIONS}
    latest = asked[LATEST_HANDSHAKE_VERSION]
    init_result = latest["initialize"]

    def same(answers: dict[str, Any]) -> bool:
        return {**answers, "initialize": {**answers["initialize"], "protocolVersion": None}} == {
            **latest,
            "initialize": {**init_result, "protocolVersion": None},
        }

    modern_answers = modern[MODERN_PROTOCOL_VERSIONS[-1]]
    server_info_key = next(iter(modern_answers["server/discover"]["_meta"]))
    lists = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources"}
    lists["resources/templates/list"] = "resourceTemplates"

    def bare(result: dict[str, Any], drop: str = "") -> dict[str, Any]:
        return {k: v for k, v in result.items() if k not in ("_meta", drop)}

    legacy_call = asked[LATEST_HANDSHAKE_VERSION]["tools/call"]
    return {
        "generated_by": "python -m nexus.surfaces.mcp_capture --write",
        "modern_versions": [v for v, answers in modern.items() if answers == modern_answers],
        "server_info_key": server_info_key,
        "subscription_id_key": SUBSCRIPTION_ID_META_KEY,
        "modern": {
            "server/discover": bare(modern_answers["server/discover"], "instructions"),
            **{m: bare(modern_answers[m], key) for m, key in lists.items()},
        },
        "modern_call": {k: v for k, v in bare(modern_answers["tools/call"]).items() if k not in legacy_call},
        "modern_unsupported": {
            k: v for k, v in modern_answers["unsupported"].items() if k in ("code", "message")
        },
        "modern_initialize": {
            k: v for k, v in modern_answers["initialize"].items() if k in ("code", "message")
        },
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


def _ask_sdk(ws: Workspace, tools: str, version: str) -> dict[str, Any]:
    """The SDK server's answers to an ``initialize`` at ``version``, to the listings and a call."""
    methods = ["initialize", "tools/list", *LISTS, "tools/call"]
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "nexus", "version": "0"}}
    lines = [json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})]
    lines.append(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    lines += [
        json.dumps({"jsonrpc": "2.0", "id": i, "method": m}) for i, m in enumerate(methods) if 0 < i < 5
    ]
    lines.append(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": _UNKNOWN_CALL}))
    return _converse(ws, tools, methods, lines)


# a call the SDK answers without running anything: its result's shape in each era
_UNKNOWN_CALL = {"name": "no-such-tool", "arguments": {}}


def _ask_sdk_modern(ws: Workspace, version: str) -> dict[str, Any]:
    """The SDK server's answers in the 2026 era at ``version``: discover, the listings, a call, and
    its refusal of a version it does not know."""
    from mcp.types import PROTOCOL_VERSION_META_KEY

    def meta(v: str) -> dict[str, Any]:
        return {
            PROTOCOL_VERSION_META_KEY: v,
            CLIENT_INFO: {"name": "nexus", "version": "0"},
            CLIENT_CAPABILITIES: {},
        }

    methods = ["server/discover", "tools/list", *LISTS, "tools/call", "unsupported", "initialize"]
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": {"_meta": meta(version)}})
        for i, m in enumerate(methods[:-3])
    ]
    lines.append(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {**_UNKNOWN_CALL, "_meta": meta(version)},
            }
        )
    )
    lines.append(
        json.dumps(
            {"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"_meta": meta("0000-00-00")}}
        )
    )
    handshake = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "n", "version": "0"},
    }
    lines.append(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": handshake}))
    return _converse(ws, "all", methods, lines)


def _converse(ws: Workspace, tools: str, methods: list[str], lines: list[str]) -> dict[str, Any]:
    """Send ``lines`` to a fresh SDK server over its stdio transport; each answer filed under
    ``methods[its id]``; the stream closed once every request is answered."""
    import threading

    from . import mcp_server

    answered: dict[str, Any] = {}
    done = threading.Event()

    def collect(line: str) -> None:
        if not line.strip():
            return
        message = json.loads(line)
        if "id" in message:
            answered[methods[message["id"]]] = message.get("result", message.get("error"))
        if len(answered) == len(methods):
            done.set()

    stdin, feed = mcp_server.pipe_reader()

    def send() -> None:
        with os.fdopen(feed, "wb") as pipe:
            pipe.write("".join(line + "\n" for line in lines).encode("utf-8"))
            pipe.flush()
            done.wait(60)

    threading.Thread(target=send, daemon=True).start()
    server = mcp_server.make_server(ws, "AGENT", tools)
    with stdin:
        mcp_server.serve_streams(server, stdin, mcp_server.LineSink(collect))
    return answered


def write() -> Path:
    data = Path(DATA)
    data.write_text(json.dumps(generate(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return data


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(
            "usage: python -m nexus.surfaces.mcp_capture --write   (regenerates mcp_tools.json from the SDK)"
        )
    print(f"wrote {write()}")
