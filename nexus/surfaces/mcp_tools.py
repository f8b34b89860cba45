"""The MCP tools without the MCP SDK: what a call does and what it answers, shared by the SDK server
(``mcp_server.py``) and the stdio front that answers before the SDK is loaded (``mcp_front.py``,
``mcp_answers.py``).

Nothing here imports ``mcp`` or ``pydantic``: the front must answer within a fraction of the SDK's
own import time. What the SDK decides (the tool list's JSON, the ``initialize`` capabilities, the
protocol versions) is generated from the SDK server into ``mcp_tools.json`` (``python -m
nexus.surfaces.mcp_capture --write``; a test fails when it differs from what the SDK serves). What
nexus decides lives here once: the operation call, the lean result, the one-line error texts, the
instructions, and :func:`check_arguments`, which accepts exactly the arguments the SDK's argument
model accepts unchanged and says when it cannot be sure (then the SDK decides).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import NexusError, StaleEditError
from ..operations import BY_COMMAND, MCP, OPERATIONS, Call, Operation, Param

# shared with the front, which answers before the library loads (mcp_protocol imports nothing)
from .mcp_protocol import Defer as Defer
from .mcp_protocol import instructions as instructions
from .mcp_protocol import version as version

if TYPE_CHECKING:
    from ..workspace import Workspace

# The tools an agent needs on its turns (served by default: every tool definition is paid for in every
# session's context). `--tools all` serves every tool, for maintenance and for people.
AGENT_TOOLS = tuple(op.tool for op in OPERATIONS if op.tool and op.agent_tool)
TOOL_SETS = ("agent", "all")
# Fields an agent never needs in a result (signatures, chain hashes, key material, an entry's format
# version): left out unless a tool is called with full=true.
PROOF_FIELDS = frozenset({"sig", "prev", "key", "public_key", "key_id", "seq", "seen", "v"})
FULL_DESCRIPTION = "true: include signatures, chain hashes and key ids."
# pydantic Field keywords the front checks itself (any other: the SDK judges the call)
_BOUNDS = {"ge": float.__ge__, "gt": float.__gt__, "le": float.__le__, "lt": float.__lt__}


class InFlight:
    """The tool calls running now, so that an interrupt ends the process between calls, never in
    the middle of one (``nexus mcp`` on SIGINT)."""

    def __init__(self) -> None:
        self.count = 0
        self.idle = threading.Condition()

    def __enter__(self) -> None:
        with self.idle:
            self.count += 1

    def __exit__(self, *exc: object) -> None:
        with self.idle:
            self.count -= 1
            self.idle.notify_all()

    def wait_idle(self, timeout: float) -> None:
        with self.idle:
            self.idle.wait_for(lambda: self.count == 0, timeout)


CALLS = InFlight()


def served(tools: str) -> list[Operation]:
    """The operations served as tools in the ``tools`` set, in the order they are listed."""
    return [op for op in OPERATIONS if op.tool and (tools == "all" or op.agent_tool)]


def check_agent(ws: Workspace, agent: str, tools: str) -> None:
    """Refuse an unknown tool set or agent before serving (the keys readers trust travel in ``ws``:
    each call's ``Call.trust``)."""
    from ..errors import InputError
    from ..storage.text import check_name

    check_name(agent)
    if tools not in TOOL_SETS:
        raise InputError(f"unknown tool set {tools!r}: use one of {', '.join(TOOL_SETS)}")
    if not ws.vault.identity_path(agent).is_file():
        raise ws.vault.unknown_agent(agent)


def lean(value: Any) -> Any:
    """``value`` without the proof fields (signatures, chain hashes, keys) at any depth."""
    if isinstance(value, dict):
        return {k: lean(v) for k, v in value.items() if k not in PROOF_FIELDS}
    if isinstance(value, list):
        return [lean(v) for v in value]
    return value


def call_operation(op: Operation, ws: Workspace, agent: str, kwargs: dict[str, Any]) -> Any:
    """Run ``op`` as ``agent`` with validated ``kwargs`` (every parameter, ``full`` too) and return
    its answer: the result's MCP form, lean unless ``full``. Raises what the operation raises."""
    full = bool(kwargs.pop("full", False))
    settings_params = {p.name: p.setting for p in op.params_for(MCP) if p.setting}
    overrides = {settings_params[k]: kwargs.pop(k) for k in list(kwargs) if k in settings_params}
    call = Call.of(ws.with_settings(**overrides), agent=agent, surface=MCP)
    with CALLS:
        result = op.function()(call, **kwargs)
    answer = result.for_mcp() if hasattr(result, "for_mcp") else result.to_json()
    return answer if full or isinstance(answer, str) else lean(answer)


def error_text(err: BaseException) -> str | None:
    """nexus's own one-line message for a refused call (None: not an error a caller can act on)."""
    if isinstance(err, StaleEditError):
        return f"{err}\n{err.diff}"
    if isinstance(err, NexusError):
        return str(err)
    if isinstance(err, FileNotFoundError | PermissionError | IsADirectoryError):
        return f"{err.strerror}: {err.filename}"
    return None


def tool_for_cli(command: str) -> str:
    """The MCP tool of a CLI command (``log append`` → ``log_append``, ``review`` → ``review_pending``)."""
    op = BY_COMMAND.get(command)
    if op is not None and op.tool:
        return op.tool
    return command.replace(" ", "_").replace("-", "_")


def refused_text(tool: str, message: str, tools: Collection[str]) -> str:
    """A refused call's text: the tool's name, then nexus's message naming tools, not commands."""
    from ..team.hints import tools_for_commands

    return tools_for_commands(f"{tool}: {message}", tools, tool_for_cli)


def missing(name: str) -> str:
    return f"missing required argument `{name}`"


def not_one_of(name: str, expected: str) -> str:
    return f"`{name}` must be one of {expected}"


def unknown_argument(name: str) -> str:
    return f"unknown argument `{name}`"


def one_of(choices: Collection[str]) -> str:
    """A closed set as the argument validator names it (``'a', 'b' or 'c'``)."""
    quoted = [repr(c) for c in choices]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


# ------------------------------------------------------------------ arguments, as the SDK checks them


def _nullable(param: Param) -> bool:
    """Whether the SDK's argument model takes ``null`` for ``param`` (``mcp_server._annotation``)."""
    nullable = param.mcp.get("nullable", param.default is None)
    return not param.required and bool(nullable) and param.kind != "bool"


def _value(param: Param, value: Any) -> Any:
    """``value`` as the SDK's model gives it to the tool, if it takes it unchanged; else Defer (or
    ValueError for a string outside a closed set: a refusal the front words itself)."""
    if value is None:
        if _nullable(param):
            return None
        raise Defer
    if param.kind == "str":
        return _text(param, value)
    if param.kind == "bool":
        if type(value) is not bool:
            raise Defer
        return value
    if param.kind == "list":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise Defer
        return list(value)
    return _number(param, value)


def _text(param: Param, value: Any) -> str:
    if not isinstance(value, str):
        raise Defer
    if param.choices or _nullable(param):  # not a plain `str`: the SDK first tries it as JSON
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            parsed = value
        if not isinstance(parsed, str | int | float):
            raise Defer
    if param.choices and value not in param.choices:
        raise ValueError(not_one_of(param.name, one_of(param.choices)))
    return value


def _number(param: Param, value: Any) -> Any:
    if param.kind == "int" and type(value) is not int:
        raise Defer
    if param.kind == "float":
        if type(value) not in (int, float) or not math.isfinite(value):
            raise Defer
        value = float(value)
    if param.kind not in ("int", "float"):
        raise Defer
    for key, bound in param.mcp.items():
        if key == "nullable":
            continue
        try:
            within = key in _BOUNDS and _BOUNDS[key](float(value), float(bound))
        except OverflowError:
            within = False
        if not within:
            raise Defer  # out of bounds (or a bound the front does not know): the SDK words it
    return value


def check_arguments(op: Operation, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments the SDK's argument model would give the tool for ``arguments``: every
    parameter (defaults filled in, ``full`` too; unknown keys ignored, as the model does). Raises
    ValueError with the refusal's text (missing arguments, a value outside a closed set), or Defer
    when the SDK might judge the arguments otherwise (another type it may coerce, a bound)."""
    kwargs: dict[str, Any] = {}
    problems: list[str] = []
    for param in op.params_for(MCP):
        if param.name not in arguments:
            if param.required:
                problems.append(missing(param.name))
            kwargs[param.name] = param.default
            continue
        try:
            kwargs[param.name] = _value(param, arguments[param.name])
        except ValueError as err:
            problems.append(str(err))
    if op.full:
        value = arguments.get("full", False)
        if type(value) is not bool:
            raise Defer
        kwargs["full"] = value
    if problems:
        raise ValueError(f"{op.tool}: " + "; ".join(problems))
    return kwargs


# ------------------------------------------------------------------ results, as the SDK renders them


def _float_text(value: float) -> str:
    """A float as the SDK's JSON encoder (pydantic-core) writes it: Python's repr, except 1e-05 ..
    9.9e-05 written out (``0.00001``) and no zero in a negative exponent (``1e-7``)."""
    text = repr(value)
    if not math.isfinite(value):
        return {"inf": "Infinity", "-inf": "-Infinity"}.get(text, "NaN")
    if "e-" not in text:
        return text
    mantissa, exponent = text.split("e-")
    if int(exponent) == 5:
        sign = "-" if mantissa.startswith("-") else ""
        digits = mantissa.lstrip("-").replace(".", "")
        return f"{sign}0.0000{digits}"
    return f"{mantissa}e-{int(exponent)}"


def json_text(value: Any, indent: str = "") -> str:
    """``value`` as the SDK writes a tool's result into its text content (pydantic-core's
    ``to_json(indent=2)``: the same bytes as ``json.dumps(indent=2, ensure_ascii=False)`` but for
    some floats). Raises TypeError for a value that is not JSON."""
    if isinstance(value, float):
        return _float_text(value)
    if value is None or isinstance(value, str | int):
        return json.dumps(value, ensure_ascii=False)
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [
            f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {json_text(v, inner)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(inner + json_text(v, inner) for v in value) + "\n" + indent + "]"
    raise TypeError(f"not JSON: {type(value).__name__}")


def plain(value: Any) -> Any:
    """``value`` as the SDK puts a result in ``structuredContent`` (tuples as lists)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def structured(op: Operation) -> bool:
    """Whether the tool answers with ``structuredContent`` (every tool but ``brief``, whose answer is
    its Markdown text, once)."""
    return op.name != "brief"


def rendered(op: Operation, answer: Any) -> dict[str, Any]:
    """The ``tools/call`` result the SDK gives for a tool's answer: its text (JSON unless a string)
    and, for a structured tool, the object again as ``structuredContent``. Raises TypeError or
    UnicodeError where the SDK could not render it either (it answers ``Error executing tool``)."""
    if isinstance(answer, str) and not structured(op):
        text = answer
    elif isinstance(answer, dict) or not structured(op):
        text = json_text(answer)
    else:
        raise TypeError(f"{op.tool} answered {type(answer).__name__}, not an object")
    text.encode("utf-8")
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": False}
    if structured(op):
        result["structuredContent"] = plain(answer)
    return result


def failed(text: str) -> dict[str, Any]:
    """A tool error's ``tools/call`` result."""
    return {"content": [{"type": "text", "text": text}], "isError": True}
