"""What ``nexus mcp``'s stdio front answers by itself, exactly as the SDK server would, without
importing the MCP SDK (``mcp_front.py`` runs the process and hands over to the SDK server).

:class:`Answers` takes one parsed JSON-RPC message and gives the response, or :class:`Defer` when
the SDK must answer it: ``initialize`` (the same protocol-version negotiation, capabilities, server
info, instructions), ``ping``, ``tools/list``, ``prompts/list``, ``resources/list``,
``resources/templates/list`` from ``mcp_tools.json``, and ``tools/call`` whose arguments
``mcp_tools.check_arguments`` can check exactly (the same operation runs, the same result or error
is rendered). Both eras the SDK serves: the ``initialize`` handshake (2024-11-05 to 2025-11-25) and
the 2026-07-28 per-request envelope, which a client opens with ``server/discover`` (Claude Code
does); a version the SDK does not know, and a handshake on a connection in that era, get the SDK's
own refusal at once (the client falls back without waiting). As the SDK does, the first request
decides the session's era. ``mcp_tools.json`` is generated from the SDK server itself over its
stdio transport (``python -m nexus.surfaces.mcp_capture --write``); a test fails when it differs
from what the installed SDK serves.
"""

from __future__ import annotations

import os
import sys

from . import mcp_json
from .mcp_protocol import Defer, instructions, version

TYPE_CHECKING = False  # (typing's own flag costs its import: ~3 ms before the first answer)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..operations import Operation
    from ..workspace import Workspace

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp_tools.json")
LISTS = ("prompts/list", "resources/list", "resources/templates/list")
_INIT_KEYS = frozenset({"protocolVersion", "capabilities", "clientInfo", "_meta"})
_CLIENT_INFO_KEYS = frozenset({"name", "version", "title", "description", "websiteUrl"})
MODERN_LISTS = ("tools/list", *LISTS)
# the 2026 envelope's keys in a request's _meta (what the SDK reads; any other key: the SDK decides)
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
LISTEN = "subscriptions/listen"
LISTEN_ACK = "notifications/subscriptions/acknowledged"
_LIST_CHANGES = frozenset({"toolsListChanged", "promptsListChanged", "resourcesListChanged"})


def load_data() -> dict[str, Any]:
    with open(DATA, encoding="utf-8") as file:
        data: dict[str, Any] = mcp_json.loads(file.read())
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


def _valid_envelope(meta: dict[str, Any], version_key: str) -> bool:
    """Whether a 2026 envelope is one the front can judge as the SDK does: a version string, the
    client's capabilities as an object of objects, its info (if any) as the handshake's."""
    if not set(meta) <= {version_key, CLIENT_INFO, CLIENT_CAPABILITIES, "progressToken"}:
        return False
    caps, info = meta.get(CLIENT_CAPABILITIES), meta.get(CLIENT_INFO, {"name": "", "version": ""})
    return (
        isinstance(meta.get(version_key), str)
        and isinstance(caps, dict)
        and all(isinstance(v, dict) for v in caps.values())
        and isinstance(info, dict)
        and set(info) <= _CLIENT_INFO_KEYS
        and {"name", "version"} <= set(info)
        and all(isinstance(v, str) for v in info.values())
        and _is_id(meta.get("progressToken", 0))
    )


def _listens(params: dict[str, Any]) -> bool:
    """A listen request for list changes only (what the front can acknowledge as the SDK does)."""
    wanted = params.get("notifications")
    return (
        set(params) == {"notifications"}
        and isinstance(wanted, dict)
        and set(wanted) <= _LIST_CHANGES
        and all(isinstance(v, bool) for v in wanted.values())
    )


class Answers:
    """The answers the front gives by itself: :meth:`take` a parsed message, get the response to
    write (None: nothing to write), or :class:`Defer` (the SDK answers it)."""

    def __init__(
        self, ws: Workspace | Callable[[], Workspace], agent: str, tools: str, data: dict[str, Any]
    ) -> None:
        self._ws, self.agent, self.tools, self.data = ws, agent, tools, data
        self._ops: dict[str, Operation] | None = None  # the served operations, by tool (first call)
        served = set(data["agent_tools"]) if tools == "agent" else None
        listed = [t for t in data["tools"] if served is None or t["name"] in served]
        self.names = [t["name"] for t in listed]
        self.listings: dict[str, Any] = {"tools/list": {"tools": listed}} | {m: data[m] for m in LISTS}
        self.initialize: dict[str, Any] | None = None  # the client's initialize request, once answered
        self.initialized = False  # notifications/initialized came (replayed to the SDK at hand-over)
        self.passthrough = False  # the session did not open with a request the front took
        self.modern: dict[str, Any] | None = None  # the 2026 session's first request (replayed likewise)
        self.listening: list[dict[str, Any]] = []  # listen streams acknowledged, the SDK's at hand-over

    def take(self, message: Any) -> dict[str, Any] | None:
        if self.passthrough:
            raise Defer
        try:
            return self._take(message)
        except Defer:
            if self.initialize is None and self.modern is None:  # the first request decides the era
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
        if self.modern is not None or (self.initialize is None and self._enveloped(method, params)):
            return self._modern(message, method, params)
        if self.initialize is None:
            return self._opening(message, method, params)
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

    def _opening(self, message: dict[str, Any], method: str, params: Any) -> dict[str, Any]:
        if method != "initialize" or not _valid_initialize(params):
            raise Defer
        return self._answer(message, self._initialized(message))

    def _enveloped(self, method: str, params: Any) -> bool:
        """Whether a session's first request opens the 2026 era (as the SDK decides it)."""
        meta = params.get("_meta") if isinstance(params, dict) else None
        return method != "initialize" and isinstance(meta, dict) and self.data["modern_meta_key"] in meta

    def _modern(self, message: dict[str, Any], method: str, params: Any) -> dict[str, Any]:
        """A request of the 2026 era: every one carries the envelope; answered with the SDK's stamps."""
        data, key = self.data, self.data["modern_meta_key"]
        if method == "initialize" and self.modern is not None and _valid_initialize(params):
            # the handshake does not exist in this era: the SDK's refusal, at once
            refusal = {"supported": data["modern_versions"], "requested": params["protocolVersion"]}
            return {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {**data["modern_initialize"], "data": refusal},
            }
        meta = params.get("_meta") if isinstance(params, dict) else None
        if not isinstance(meta, dict) or not _valid_envelope(meta, key):
            raise Defer
        version = meta[key]
        if version not in data["modern_versions"]:  # the SDK's refusal, at once: the client falls back
            if self.modern is None:
                self.modern = message
            return {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {
                    **data["modern_unsupported"],
                    "data": {"supported": data["modern_versions"], "requested": version},
                },
            }
        rest = {k: v for k, v in params.items() if k != "_meta"}
        if method == "server/discover" and not rest:
            result = {
                **data["modern"]["server/discover"],
                "instructions": instructions(self.agent),
            }
        elif method in MODERN_LISTS and (not rest or set(rest) == {"cursor"}):
            result = {**data["modern"][method], **self.listings[method]}
        elif method == "subscriptions/listen" and self.modern is not None and _listens(rest):
            self.listening.append(message)  # the SDK serves the stream from the hand-over on
            return {
                "jsonrpc": "2.0",
                "method": LISTEN_ACK,
                "params": {
                    "_meta": {data["subscription_id_key"]: message["id"]},
                    "notifications": {k: True for k, v in rest["notifications"].items() if v},
                },
            }
        elif method == "tools/call":
            result = {
                **self.call(
                    {
                        **rest,
                        **(
                            {"_meta": {"progressToken": meta["progressToken"]}}
                            if "progressToken" in meta
                            else {}
                        ),
                    }
                ),
                **data["modern_call"],
            }
        else:
            raise Defer
        if self.modern is None:
            self.modern = message
        return self._answer(message, self._stamped(result))

    def _stamped(self, result: dict[str, Any]) -> dict[str, Any]:
        """A 2026 result's ``_meta``: the server's info, its version this nexus's."""
        info = {**self.data["server_info"], "version": version()}
        return {**result, "_meta": {**result.get("_meta", {}), self.data["server_info_key"]: info}}

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
        known = requested in data["handshake_versions"]
        negotiated = requested if known else data["latest_handshake_version"]
        if negotiated not in data["front_versions"]:
            raise Defer
        self.initialize = message
        return {
            "capabilities": data["capabilities"],
            "instructions": instructions(self.agent),
            "protocolVersion": negotiated,
            "serverInfo": {**data["server_info"], "version": version()},
        }

    @property
    def resolved(self) -> bool:
        return not callable(self._ws)

    @property
    def ws(self) -> Workspace:
        """The workspace tool calls act in (given, or made when first needed: ``mcp_front`` answers
        the opening requests before it resolves it)."""
        if callable(self._ws):
            self._ws = self._ws()
        return self._ws

    def ops(self, mcp_tools: Any) -> dict[str, Operation]:
        """The served operations by tool name (the registry is imported only for a call)."""
        if self._ops is None:
            self._ops = {str(op.tool): op for op in mcp_tools.served(self.tools) if op.tool}
        return self._ops

    def call(self, params: Any) -> dict[str, Any]:
        """A ``tools/call`` result, as the SDK server gives it. Only a call needs the operations and
        the workspace: they are loaded here, the first time (the listings come from the data)."""
        from . import mcp_tools  # the registry and the operations' code: not before a call

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
        ops = self.ops(mcp_tools)
        op = ops.get(name)
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
            return mcp_tools.failed(mcp_tools.refused_text(name, text, ops))
