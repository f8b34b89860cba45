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
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from ..errors import NexusError, StaleEditError
from ..operations import BY_COMMAND, MCP, OPERATIONS, Call, Operation, Param
from ..storage.vault import Vault
from ..workspace import Workspace

F = TypeVar("F", bound=Callable[..., Any])

# CLI command -> why it has no MCP tool (the test walks the parser against this and the tool list).
CLI_WITHOUT_TOOL = {
    "watch": "a long-running process, not a call",
    "mcp": "this server itself",
    "setup": "writes an agent runtime's own configuration files: set-up, done by a person",
    "git merge-driver": "what git itself runs during a merge, never a call",
    "git refresh": "what git's hooks run after a merge or checkout",
    "sync": "talks to a git remote with the machine's credentials: a person's or a scheduler's act",
}

# The tools an agent needs on its turns (served by default: every tool definition is paid for in every
# session's context). `--tools all` serves every tool, for maintenance and for people.
AGENT_TOOLS = tuple(op.tool for op in OPERATIONS if op.tool and op.agent_tool)
TOOL_SETS = ("agent", "all")
# Fields an agent never needs in a result (signatures, chain hashes, key material): left out unless a
# tool is called with full=true.
PROOF_FIELDS = frozenset({"sig", "prev", "key", "public_key", "key_id", "seq", "seen"})

Full = Annotated[bool, Field(description="true: include signatures, chain hashes and key ids.")]


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


def _lean(value: Any) -> Any:
    """``value`` without the proof fields (signatures, chain hashes, keys) at any depth."""
    if isinstance(value, dict):
        return {k: _lean(v) for k, v in value.items() if k not in PROOF_FIELDS}
    if isinstance(value, list):
        return [_lean(v) for v in value]
    return value


def _adapter(fn: F) -> F:
    """Turn nexus's own errors into ToolError with the same message; leave proofs out unless full."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
        except StaleEditError as err:
            raise ToolError(f"{err}\n{err.diff}") from None
        except NexusError as err:
            raise ToolError(str(err)) from None
        except (FileNotFoundError, PermissionError, IsADirectoryError) as err:
            raise ToolError(f"{err.strerror}: {err.filename}") from None
        return result if kwargs.get("full") or isinstance(result, str) else _lean(result)

    return wrapper  # type: ignore[return-value]


def readable(tool: str, err: ValidationError) -> str:
    """One line naming the parameter and what is wrong with it (no pydantic links, no input echo)."""
    parts = []
    for problem in err.errors():
        name = ".".join(str(p) for p in problem["loc"]) or "arguments"
        kind = problem["type"]
        if kind == "missing":
            parts.append(f"missing required argument `{name}`")
        elif kind in ("literal_error", "enum"):
            allowed = problem.get("ctx", {}).get("expected", "")
            parts.append(f"`{name}` must be one of {allowed}")
        elif kind == "extra_forbidden":
            parts.append(f"unknown argument `{name}`")
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


def tool_for_cli(command: str) -> str:
    """The MCP tool of a CLI command (``log append`` → ``log_append``, ``review`` → ``review_pending``)."""
    op = BY_COMMAND.get(command)
    if op is not None and op.tool:
        return op.tool
    return command.replace(" ", "_").replace("-", "_")


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
        from ..team.hints import tools_for_commands

        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as err:
            cause = err.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(readable(name, cause)) from None
            if isinstance(cause, ToolError):
                names = {t.name for t in await MCPServer.list_tools(self)}
                raise ToolError(tools_for_commands(f"{name}: {cause}", names, tool_for_cli)) from None
            raise


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
    generated from them), it runs the operation and answers with its result's JSON."""
    settings_params = {p.name: p.setting for p in op.params_for(MCP) if p.setting}

    def tool(**kwargs: Any) -> Any:
        kwargs.pop("full", None)
        overrides = {settings_params[k]: kwargs.pop(k) for k in list(kwargs) if k in settings_params}
        call = Call.of(ws.with_settings(**overrides), agent=agent, surface=MCP)
        result = op.function()(call, **kwargs)
        return result.for_mcp() if hasattr(result, "for_mcp") else result.to_json()

    tool.__name__ = op.tool or op.name
    tool.__doc__ = op.description or op.summary
    tool.__signature__ = _signature(op)  # type: ignore[attr-defined]
    return tool


def _add_operations(server: MCPServer, ws: Workspace, agent: str, tools: str) -> None:
    for op in OPERATIONS:
        if op.tool and (tools == "all" or op.agent_tool):
            server.add_tool(
                _adapter(_tool_function(op, ws, agent)),
                name=op.tool,
                title=op.title,
                description=op.description or op.summary,
                annotations=ANNOTATIONS[op.kind],
                structured_output=False if op.name == "brief" else None,
            )


def build_server(ws: Workspace, agent: str, *, tools: str | None = None) -> MCPServer:
    """The server, with the ``tools`` set (``agent``: the few an agent's turns need; ``all``: every
    tool; default: the ``mcp_tools`` setting) bound to the workspace's vault and acting as ``agent``."""
    from ..errors import InputError
    from ..storage.text import check_name

    vault, keys_home, st = ws.vault, ws.keys_home, ws.settings
    tools = st.mcp_tools if tools is None else tools

    check_name(agent)
    if tools not in TOOL_SETS:
        raise InputError(f"unknown tool set {tools!r}: use one of {', '.join(TOOL_SETS)}")
    from ..keys import trust

    trust.configure(keys_home)  # the keys this machine pinned decide what readers show as verified
    if not vault.identity_path(agent).is_file():
        from ..errors import IdentityError

        raise IdentityError(f"unknown agent {agent!r}: run `nexus agent add {agent}` first")
    server = NexusMCPServer(
        "nexus",
        version=_version(),
        instructions=(
            f"nexus: shared, durable memory for agents working together. You are {agent!r}. "
            "Call the `brief` tool before each response; after a meaningful turn record what you "
            "did with `log_append`; acknowledge what others wrote with `acknowledge`; record "
            "decisions with `decide`; find anything with `search`; save your working context "
            "with `checkpoint_save`."
        ),
    )

    _add_operations(server, ws, agent, tools)
    _resources(server, vault)
    return server


def _resources(server: MCPServer, vault: Vault) -> None:
    from mcp.server.mcpserver.exceptions import ResourceError

    @server.resource(
        "nexus://log/tail",
        name="live-log",
        mime_type="text/markdown",
        description="The last 50 entries of the live-context log",
    )
    def live_log() -> str:
        from ..ledger import log
        from ..team.brief import entry_text

        return "\n".join(entry_text(x) for x in log.tail(vault, 50)) or "(the log is empty)\n"

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


def _version() -> str:
    from .. import __version__

    return str(__version__)


def run(ws: Workspace, agent: str) -> int:
    """Serve over stdio until the client closes the stream (the tool set: ``ws.settings.mcp_tools``)."""
    server = build_server(ws, agent)
    server.run("stdio")
    return 0
