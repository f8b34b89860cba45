"""``nexus mcp --agent A``: every nexus capability as MCP tools, over stdio (the only module that
imports the MCP SDK, and only when that command runs).

The tools are generated from the operations (``nexus/operations/``): each one declared with a tool
name becomes a tool with that name, title and description, an input schema pydantic builds from the
operation's parameters (closed sets as enums), and annotations from what it does to the vault. A call
runs the operation as the agent the server was started for (its appends are signed with that
agent's key) and answers with its result's JSON. A refused input or a conflict comes back as a
``ToolError`` holding nexus's own one-line message, which a model can act on. Results are JSON
objects (lists are wrapped as ``{"items": [...]}``); signatures, chain hashes and keys are left out
unless asked (``full``).

Resources: ``nexus://log/tail`` (the live log's last entries), ``nexus://decisions`` (the active
decisions) and ``nexus://checkpoint/{agent}`` (an agent's checkpoint note).

CLI commands no operation declares (set-up, git, the watcher…) are listed in ``CLI_WITHOUT_TOOL``
with the reason they have no tool.
"""

from __future__ import annotations

import functools
import inspect
import io
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from ..errors import NexusError
from ..operations import MCP, Operation, Param
from ..workspace import Workspace
from .mcp_tools import (
    AGENT_TOOLS,
    FULL_DESCRIPTION,
    PROOF_FIELDS,
    TOOL_SETS,
    call_operation,
    check_agent,
    error_text,
    instructions,
    missing,
    not_one_of,
    refused_text,
    served,
    structured,
    tool_for_cli,
    unknown_argument,
    version,
)

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["AGENT_TOOLS", "CLI_WITHOUT_TOOL", "PROOF_FIELDS", "TOOL_SETS", "build_server", "tool_for_cli"]

# CLI command -> why it has no MCP tool (the test walks the parser against this and the tool list).
CLI_WITHOUT_TOOL = {
    "watch": "a long-running process, not a call",
    "mcp": "this server itself",
    "setup": "writes an agent runtime's own configuration files: set-up, done by a person",
    "git merge-driver": "what git itself runs during a merge, never a call",
    "git refresh": "what git's hooks run after a merge or checkout",
    "sync": "talks to a git remote with the machine's credentials: a person's or a scheduler's act",
    "hermes-provider": "Hermes Agent's nexus plugin speaks to it over stdio: a channel, not a call",
}

Full = Annotated[bool, Field(description=FULL_DESCRIPTION)]


def _hints(read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


READ = _hints(True, False, True)
ADD = _hints(False, False, False)
SET = _hints(False, False, True)
CHANGE = _hints(False, True, False)
# reading the log advances the agent's cursor: not read-only, but nothing is lost
CURSOR = _hints(False, False, False)


def _adapter(fn: F) -> F:
    """Turn nexus's own errors into ToolError with the same message (``mcp_tools.error_text``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as err:
            text = error_text(err)
            if text is None:
                raise
            raise ToolError(text) from None

    return wrapper  # type: ignore[return-value]


def readable(tool: str, err: ValidationError) -> str:
    """One line naming the parameter and what is wrong with it (no pydantic links, no input echo)."""
    parts = []
    for problem in err.errors():
        name = ".".join(str(p) for p in problem["loc"]) or "arguments"
        kind = problem["type"]
        if kind == "missing":
            parts.append(missing(name))
        elif kind in ("literal_error", "enum"):
            parts.append(not_one_of(name, problem.get("ctx", {}).get("expected", "")))
        elif kind == "extra_forbidden":
            parts.append(unknown_argument(name))
        else:
            parts.append(f"`{name}`: {problem['msg'].lower()}")
    return f"{tool}: " + "; ".join(parts)


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema as short as it can be and mean the same to a model: no generated titles, and
    ``anyOf [X, null]`` with a null default said as ``X`` (not being required already says optional)."""
    out = {k: v for k, v in schema.items() if k != "title"}
    props: dict[str, Any] = {}
    for name, prop in dict(schema.get("properties", {})).items():
        prop = {k: v for k, v in prop.items() if k != "title"}
        options = prop.get("anyOf")
        if isinstance(options, list) and {"type": "null"} in options and prop.get("default", 0) is None:
            rest = [o for o in options if o != {"type": "null"}]
            if len(rest) == 1:
                prop = {k: v for k, v in prop.items() if k not in ("anyOf", "default")} | rest[0]
        props[name] = prop
    if props:
        out["properties"] = props
    return out


def _says_nothing(schema: dict[str, Any] | None) -> bool:
    return schema is None or {k: v for k, v in schema.items() if k != "title"} == {
        "type": "object",
        "additionalProperties": True,
    }


class NexusMCPServer(MCPServer):
    """MCPServer whose refused calls read as one line (``TOOL: what is wrong``, no SDK prefix) naming
    tools instead of shell commands, and whose tool list is compact (every definition is paid for in
    every session's context)."""

    async def list_tools(self) -> list[Any]:
        listed = await super().list_tools()
        # an output schema that only says "an object" tells a model nothing: left out
        return [
            t.model_copy(
                update={
                    "input_schema": compact_schema(t.input_schema),
                    "output_schema": None if _says_nothing(t.output_schema) else t.output_schema,
                }
            )
            for t in listed
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as err:
            cause = err.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(readable(name, cause)) from None
            if isinstance(cause, ToolError):
                names = {t.name for t in await MCPServer.list_tools(self)}
                raise ToolError(refused_text(name, str(cause), names)) from None
            raise


class LineSink(io.RawIOBase):
    """A writable stream that hands each whole line written to it to ``line`` (the SDK's stdout when
    it serves a connection that is not the process's own: the front's wire, a test's collector)."""

    def __init__(self, line: Callable[[str], None]) -> None:
        super().__init__()
        self.line, self.pending = line, b""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.pending += bytes(data)
        *lines, self.pending = self.pending.split(b"\n")
        for text in lines:
            self.line(text.decode("utf-8", "replace"))
        return len(data)


def serve_streams(server: MCPServer, stdin: io.TextIOBase, sink: LineSink) -> None:
    """Serve one connection over ``stdin`` (read to its end) and ``sink``, through the SDK's public
    ``run("stdio")``: its stdio transport serves ``sys.stdin``/``sys.stdout`` as they are when they
    are not the process's descriptors 0 and 1, so they stand in for them meanwhile. (The front hands
    its stream over so, and the generator of ``mcp_tools.json`` asks the SDK so.) No private
    attribute of the SDK is used; the hand-over tests fail if its transport stops serving them."""
    saved = sys.stdin, sys.stdout
    sys.stdin = stdin
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(sink), encoding="utf-8", write_through=True)
    try:
        server.run("stdio")
    finally:
        sys.stdout.flush()
        sys.stdin, sys.stdout = saved


def pipe_reader() -> tuple[io.TextIOWrapper, int]:
    """A text stream to serve as the SDK's stdin, and the descriptor that feeds it (close it: EOF)."""
    read_fd, write_fd = os.pipe()
    return io.TextIOWrapper(io.FileIO(read_fd, "rb"), encoding="utf-8", errors="replace"), write_fd


# ------------------------------------------------------------ tools generated from the operations

ANNOTATIONS = {"read": READ, "add": ADD, "set": SET, "change": CHANGE, "cursor": CURSOR}
_KINDS: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool, "list": list[str]}


def _annotation(param: Param) -> Any:
    """A parameter's type as the SDK reads it: the type (a closed set as a Literal), optional when it
    may be left out with nothing, described for a model."""
    kind: Any = Literal[param.choices] if param.choices else _KINDS[param.kind]
    field = dict(param.mcp)
    nullable = field.pop("nullable", param.default is None)  # (null may also mean "the default")
    if not param.required and nullable and param.kind != "bool":
        kind = kind | None
    return Annotated[kind, Field(description=param.description, **field)]


def _signature(op: Operation) -> inspect.Signature:
    params = [
        inspect.Parameter(
            p.name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=_annotation(p),
            default=inspect.Parameter.empty if p.required else p.default,
        )
        for p in op.params_for(MCP)
    ]
    if op.full:
        params.append(
            inspect.Parameter("full", inspect.Parameter.KEYWORD_ONLY, annotation=Full, default=False)
        )
    returns = str if op.name == "brief" else dict[str, Any]
    return inspect.Signature(params, return_annotation=returns)


def _tool_function(op: Operation, ws: Workspace, agent: str) -> Callable[..., Any]:
    """The function the SDK calls for ``op``: its parameters are the operation's (so the schema is
    generated from them); it runs the operation (``mcp_tools.call_operation``, what the front runs)."""

    def tool(**kwargs: Any) -> Any:
        return call_operation(op, ws, agent, kwargs)

    tool.__name__ = op.tool or op.name
    tool.__doc__ = op.description or op.summary
    tool.__signature__ = _signature(op)  # type: ignore[attr-defined]
    return tool


def _add_operations(server: MCPServer, ws: Workspace, agent: str, tools: str) -> None:
    for op in served(tools):
        server.add_tool(
            _adapter(_tool_function(op, ws, agent)),
            name=op.tool,
            title=op.title,
            description=op.description or op.summary,
            annotations=ANNOTATIONS[op.kind],
            structured_output=None if structured(op) else False,
        )


def build_server(ws: Workspace, agent: str, *, tools: str | None = None) -> MCPServer:
    """The server, with the ``tools`` set (``agent``: the few an agent's turns need; ``all``: every
    tool; default: the ``mcp_tools`` setting) bound to the workspace's vault and acting as ``agent``."""
    tools = ws.settings.mcp_tools if tools is None else tools
    check_agent(ws, agent, tools)
    return make_server(ws, agent, tools)


def make_server(ws: Workspace, agent: str, tools: str) -> NexusMCPServer:
    """The server for an agent and a tool set already checked (``mcp_tools.check_agent``)."""
    server = NexusMCPServer(
        "nexus",
        version=version(),
        instructions=instructions(agent),
    )
    _add_operations(server, ws, agent, tools)
    _resources(server, ws)
    return server


def _resources(server: MCPServer, ws: Workspace) -> None:
    from mcp.server.mcpserver.exceptions import ResourceError

    vault = ws.vault

    @server.resource(
        "nexus://log/tail",
        name="live-log",
        mime_type="text/markdown",
        description="The last 50 entries of the live-context log",
    )
    def live_log() -> str:
        from ..ledger import log
        from ..team.brief import entry_text
        from ..team.coordination import entry_checker

        shown = log.tail(vault, 50, checker=entry_checker(vault, ws.trust))
        return "\n".join(entry_text(x) for x in shown) or "(the log is empty)\n"

    @server.resource(
        "nexus://decisions",
        name="decisions",
        mime_type="text/markdown",
        description="The active decisions, one line each",
    )
    def active_decisions() -> str:
        from ..project import decisions

        lines = [
            f"- **{d.id}** {d.title}: {decisions.one_line(d, 160)} ({d.author}, {d.date[:10]})"
            for d in decisions.active(vault)
        ]
        return "\n".join(lines) + "\n" if lines else "(no active decisions)\n"

    @server.resource(
        "nexus://checkpoint/{agent}",
        name="checkpoint",
        mime_type="text/markdown",
        description="An agent's checkpoint note",
    )
    def checkpoint(agent: str) -> str:
        from ..project import checkpoints
        from ..storage.text import check_name

        try:
            path = checkpoints.checkpoint_path(vault, check_name(agent))
            return path.read_text(encoding="utf-8")
        except (NexusError, FileNotFoundError) as err:
            raise ResourceError(
                f"{agent} has no checkpoint yet" if isinstance(err, FileNotFoundError) else str(err)
            ) from None


def run(ws: Workspace, agent: str) -> int:
    """Serve over stdio with the SDK alone, from the first byte, until the client closes the stream
    (the tool set: ``ws.settings.mcp_tools``). ``nexus mcp`` runs the front (``mcp_front.py``),
    which hands over to this server once the SDK is loaded; this is ``NEXUS_MCP_FRONT=sdk``."""
    server = build_server(ws, agent)
    server.run("stdio")
    return 0
