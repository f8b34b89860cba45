"""The start of ``nexus mcp`` before its first answer: the command line, the vault, the agent and the
tool set, read with the standard library's cheapest parts only (no argparse, pathlib, typing or nexus
library), so that the front (``mcp_front.py``) answers a runtime's opening request within a few
milliseconds of Python's own start.

:func:`read` recognises the command lines ``nexus setup`` writes (``[--vault V] mcp --agent A [--tools
T]``) on the happy path only: the vault found as ``storage.vault.find`` finds it, the agent's identity
note there, the tool set from ``--tools``, ``NEXUS_MCP_TOOLS`` or ``nexus.md`` (through the settings
cache the CLI keeps, ``.nexus/cache/config.json``, when it is current). Anything else, or any doubt,
gives None and the whole command line goes through the CLI as before, which words every error. The
front then resolves the workspace with the library itself (every setting, the agent checked again, a
warning for a misspelt ``NEXUS_*`` variable) once the opening requests are answered.
"""

from __future__ import annotations

import os
import sys

from . import mcp_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ..workspace import Workspace

MARKER = "nexus.md"
TOOL_SETS = ("agent", "all")
MODES = ("auto", "lazy", "front")  # (``sdk`` goes through the CLI: the SDK server from the first byte)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


class Start:
    """What the front needs before its first answer."""

    __slots__ = ("agent", "mode", "tools", "tools_given", "vault", "vault_given")

    def __init__(self, options: dict[str, str], vault: str, tools: str, mode: str) -> None:
        self.vault_given, self.tools_given = options.get("--vault"), options.get("--tools")
        self.vault, self.agent, self.tools, self.mode = vault, options["--agent"], tools, mode

    def workspace(self) -> Workspace:
        """The workspace ``nexus mcp`` acts in, as the CLI resolves it (``invocation.workspace``:
        every setting, a warning for a misspelt ``NEXUS_*`` variable), the agent and tool set checked
        again. Imported only now: after the opening answers."""
        import argparse

        from ..variables import unknown
        from . import invocation, mcp_tools

        for warning in unknown(os.environ):
            sys.stderr.write(f"nexus: {warning}\n")
        ws: Workspace = invocation.workspace(
            argparse.Namespace(vault=self.vault_given, tools=self.tools_given)
        )
        mcp_tools.check_agent(ws, self.agent, ws.settings.mcp_tools)
        if (
            ws.settings.mcp_tools != self.tools
        ):  # nexus.md changed as the server started: serve what was listed
            ws = ws.with_settings(mcp_tools=self.tools)
        return ws


def _options(argv: Sequence[str]) -> dict[str, str] | None:
    """``--vault``, ``--agent`` and ``--tools`` of ``[--vault V] mcp --agent A [--tools T]`` (each at
    most once, ``--x V`` or ``--x=V``), or None for any other command line."""
    found: dict[str, str] = {}
    rest = list(argv)
    where = "--vault"
    while rest:
        word = rest.pop(0)
        if word == "mcp" and where == "--vault":
            where = "mcp"
            continue
        name, eq, value = word.partition("=")
        if name not in ({"--vault"} if where == "--vault" else {"--agent", "--tools"}) or name in found:
            return None
        if not eq:
            if not rest:
                return None
            value = rest.pop(0)
        if not value or value.startswith("-"):
            return None
        found[name] = value
    return found if where == "mcp" and "--agent" in found else None


def _vault(given: str | None, env_value: str | None, cwd: str) -> str | None:
    """The vault folder, as ``storage.vault.find`` finds it (None: not found, the CLI says why)."""
    for value in (given, env_value):
        if value:
            root = os.path.expanduser(value)
            return root if os.path.isfile(os.path.join(root, MARKER)) else None
    folder = os.path.abspath(cwd)
    while True:
        if os.path.isfile(os.path.join(folder, MARKER)):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _configured_tools(vault: str) -> str | None:
    """``mcp_tools`` of ``nexus.md``: from the settings cache when it is current, the default when the
    note's properties do not name it at all (None: not known here)."""
    marker = os.path.join(vault, MARKER)
    try:
        st = os.stat(marker)
        with open(os.path.join(vault, ".nexus", "cache", "config.json"), encoding="utf-8") as file:
            cached = mcp_json.loads(file.read())
        if cached.get("stamp") == [st.st_mtime_ns, st.st_size]:
            value = cached["config"].get("mcp_tools", "agent")
            return value if isinstance(value, str) else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    try:
        with open(marker, "rb") as file:
            text = file.read()
    except OSError:
        return None
    head, _, rest = text.replace(b"\r\n", b"\n").partition(b"\n")
    properties, end, _ = rest.partition(b"\n---\n")
    if head.rstrip() != b"---" or not end or b"mcp_tools" in properties:
        return None
    return "agent"


def read(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> Start | None:
    """What ``nexus mcp`` starts with, or None: the CLI runs the command line instead."""
    options = _options(argv)
    mode = env.get("NEXUS_MCP_FRONT", "lazy")
    if options is None or mode not in MODES:
        return None
    vault = _vault(options.get("--vault"), env.get("NEXUS_VAULT"), cwd)
    agent = options["--agent"]
    if vault is None or len(agent) > 32 or not set(agent) <= _NAME_CHARS or agent.strip("-") != agent:
        return None
    if not os.path.isfile(os.path.join(vault, "agents", agent, "identity.md")):
        return None
    tools = options.get("--tools") or env.get("NEXUS_MCP_TOOLS")
    if tools is None:
        tools = _configured_tools(vault)
    if tools not in TOOL_SETS:
        return None
    return Start(options, vault, tools, mode)
