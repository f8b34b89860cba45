"""The declarations the operations are made of (see ``nexus/operations/__init__.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..trust import Trust

if TYPE_CHECKING:
    from typing import Protocol

    from ..settings import Settings
    from ..storage.vault import Vault
    from ..workspace import Workspace

CLI = "cli"
MCP = "mcp"
HOOK = "hook"
BOTH = frozenset({CLI, MCP})
ONLY_CLI = frozenset({CLI})
ONLY_MCP = frozenset({MCP})
ONLY_HOOK = frozenset({HOOK})
COUNT = {"ge": 1, "le": 500}  # the MCP bounds of a "how many results" parameter

# MCP tool annotations by what a call does to the vault
READ = "read"  # reads only; the same answer again
ADD = "add"  # adds (an entry, a note): never loses anything
SET = "set"  # sets something to a value: again, nothing changes
CHANGE = "change"  # replaces or removes (kept restorable, but destructive in MCP's terms)
CURSOR = "cursor"  # reading advances the agent's cursor: not read-only, nothing lost


class Param:
    """One parameter, on every surface that has it.

    ``kind``: ``str``, ``int``, ``float``, ``bool`` or ``list`` (of strings). ``description`` is what a
    model reads (MCP); ``help`` what a person reads (``--help``). ``flag``: how the command line
    spells it (``--name`` by default, ``-n``, or a bare word for a positional argument; None: not on
    the command line). ``file_flag``: a flag reading the value from a file (``-``: standard input).
    ``choices``: a closed set (an enum for models; ``cli_choices=False``: the command line takes any
    value and the library judges). ``setting``: the parameter overrides that setting instead of
    reaching the function. ``cli``/``mcp``: extra argparse keywords (``metavar``, ``nargs``) and
    pydantic ``Field`` keywords (``ge``, ``le``).

    A plain class with slots, not a dataclass: the command-line parser is built from these on every
    per-turn command, and making dataclasses costs a millisecond there.
    """

    __slots__ = (
        "choices",
        "cli",
        "cli_choices",
        "default",
        "description",
        "file_flag",
        "flag",
        "help",
        "kind",
        "mcp",
        "name",
        "required",
        "setting",
        "surfaces",
    )

    def __init__(
        self,
        name: str,
        kind: str = "str",
        description: str = "",
        *,
        help: str | None = None,
        required: bool = False,
        default: Any = None,
        choices: tuple[str, ...] = (),
        cli_choices: bool = True,
        flag: str | None = "",
        file_flag: str | None = None,
        surfaces: frozenset[str] = BOTH,
        setting: str | None = None,
        cli: Mapping[str, Any] | None = None,
        mcp: Mapping[str, Any] | None = None,
    ) -> None:
        self.name, self.kind, self.description, self.help = name, kind, description, help
        self.required, self.default, self.choices, self.cli_choices = required, default, choices, cli_choices
        self.flag, self.file_flag, self.surfaces, self.setting = flag, file_flag, surfaces, setting
        self.cli: Mapping[str, Any] = cli or {}
        self.mcp: Mapping[str, Any] = mcp or {}

    @property
    def cli_flag(self) -> str:
        """The command-line spelling (``--max-chars`` for ``max_chars`` unless ``flag`` says)."""
        return self.flag if self.flag else "--" + self.name.replace("_", "-")

    def __repr__(self) -> str:
        return f"Param({self.name!r}, {self.kind!r})"


def how_many(help: str = "how many (default 10)") -> Param:
    """The ``-n`` of an operation that lists results: 10 by default, 1 to 500 over MCP."""
    return Param(
        "n",
        "int",
        "How many results at most.",
        help=help,
        default=10,
        flag="-n",
        mcp=COUNT,
        cli={"type": "positive"},
    )


def stale_minutes(help: str = "idle time that counts as a probable crash") -> Param:
    """The command line's ``--stale-minutes``, which overrides the ``stale_checkpoint_minutes`` setting."""
    return Param("stale_minutes", "float", help=help, setting="stale_checkpoint_minutes", surfaces=ONLY_CLI)


class Operation:
    """One capability. ``command``: its words on the command line (None: not there); ``tool``: its MCP
    name (None: not there); ``run``: ``"module:function"``, imported when it runs. ``acts``: whether it
    acts as an agent (``required``: ``--agent`` on the command line, the server's agent over MCP;
    ``optional``; ``none``). ``hook``: its event on ``nexus-hook`` (the runtime's name: ``hook_event``);
    a hook parameter comes from the runtime's event JSON (field ``cli["event"]``, else its name), or
    from a ``--flag`` on the hook's command line when it is a bool. ``kind``: what a call does to the
    vault (the MCP annotations).
    ``agent_tool``: in the default MCP tool set. ``full``: over MCP, a ``full`` flag brings back
    signatures, chain hashes and keys. ``why_not``: why it is on one surface only."""

    __slots__ = (
        "acts",
        "agent_help",
        "agent_tool",
        "command",
        "description",
        "example",
        "full",
        "hook",
        "hook_event",
        "json_flag",
        "kind",
        "name",
        "needs_vault",
        "params",
        "run",
        "summary",
        "title",
        "tool",
        "why_not",
    )

    def __init__(
        self,
        name: str,
        run: str,
        summary: str,
        example: str,
        *,
        description: str = "",
        title: str = "",
        command: str | None = None,
        tool: str | None = None,
        params: tuple[Param, ...] = (),
        acts: str = "none",
        agent_help: str | None = None,
        kind: str = READ,
        agent_tool: bool = False,
        full: bool = False,
        why_not: str = "",
        json_flag: bool = True,
        hook: str | None = None,
        hook_event: str = "",
        needs_vault: bool = True,
    ) -> None:
        self.name, self.run, self.summary, self.example = name, run, summary, example
        self.description, self.title, self.command, self.tool = description or summary, title, command, tool
        self.params, self.acts, self.agent_help, self.kind = params, acts, agent_help, kind
        self.agent_tool, self.full, self.why_not, self.json_flag = agent_tool, full, why_not, json_flag
        self.hook, self.hook_event = hook, hook_event  # `nexus-hook EVENT`, and the runtime's name for it
        self.needs_vault = needs_vault  # False: it runs before there is one (`init`)

    def __repr__(self) -> str:
        return f"Operation({self.name!r})"

    @property
    def surfaces(self) -> frozenset[str]:
        return frozenset(s for s, name in ((CLI, self.command), (MCP, self.tool), (HOOK, self.hook)) if name)

    def params_for(self, surface: str) -> tuple[Param, ...]:
        return tuple(p for p in self.params if surface in p.surfaces)

    def function(self) -> Callable[..., Any]:
        """The function doing the work (its module imported now, not when the parser is built)."""
        import importlib

        module, _, attr = self.run.partition(":")
        fn: Callable[..., Any] = getattr(importlib.import_module(module), attr)
        return fn


if TYPE_CHECKING:

    class Result(Protocol):
        """What an operation returns: its JSON and its text."""

        def to_json(self) -> Any: ...

        def text(self) -> str: ...


class Answer:
    """A result as data (its JSON) and text; ``notes``: lines a person should see beside it (stderr on
    the command line); ``text_notes``: notes only a person reading the text needs (not with --json);
    ``mcp``: the answer a tool gives when it differs from the JSON; ``exit_code`` on the command line.
    (A plain class, not a dataclass: every per-turn command makes one, and imports this module.)"""

    __slots__ = ("data", "exit_code", "mcp", "notes", "text_notes", "words")

    def __init__(
        self,
        data: Any,
        words: str = "",
        *,
        notes: tuple[str, ...] = (),
        mcp: Any = None,
        exit_code: int = 0,
        text_notes: tuple[str, ...] = (),
    ) -> None:
        self.data, self.words, self.notes, self.mcp = data, words, notes, mcp
        self.exit_code, self.text_notes = exit_code, text_notes

    def to_json(self) -> Any:
        return self.data

    def text(self) -> str:
        return self.words

    def for_mcp(self) -> Any:
        return self.data if self.mcp is None else self.mcp


class Call:
    """Who calls, where, and on which surface: the vault, its settings (resolved when first asked, so
    a command that needs none pays nothing for them), the keys folder and what this machine trusts
    there (``trust``: the pins, the memo, the seal secret), the acting agent."""

    def __init__(
        self,
        vault: Vault,
        *,
        agent: str = "",
        surface: str = CLI,
        settings: Settings | Callable[[], Settings],
        keys: Any,
        progress: Any = None,
        colour: bool = False,
    ) -> None:
        self.colour = colour  # the text goes to a terminal that shows colour
        self.vault = vault
        self.agent = agent
        self.surface = surface
        self._settings = settings
        self._keys = keys
        self.trust = Trust(lambda: self.keys_home)  # (the keys folder, found once for both)
        self.progress = progress

    @classmethod
    def of(cls, ws: Workspace, *, agent: str = "", surface: str = CLI, progress: Any = None) -> Call:
        return cls(
            ws.vault, agent=agent, surface=surface, settings=ws.settings, keys=ws.keys, progress=progress
        )

    @property
    def settings(self) -> Settings:
        if callable(self._settings):
            self._settings = self._settings()
        return self._settings

    @property
    def keys_home(self) -> Any:
        if callable(self._keys):
            self._keys = self._keys()
        return self._keys

    def signer(self) -> Any:
        """The acting agent's signing key."""
        from ..keys import identity

        return identity.load_signer(self.vault, self.keys_home, self.agent)

    def limits(self) -> dict[str, int]:
        """The memory stores' limits: ``memory`` (an agent's MEMORY.md) and ``user`` (USER.md)."""
        return {"memory": int(self.settings.memory_chars), "user": int(self.settings.user_chars)}
