"""The ``nexus`` command line: parse, call one library function, print.

Every handler imports what it needs inside itself, so a command pays only for its own imports (the
hot-path commands never import YAML, Whoosh, watchdog or MCP). Every command that a program would
read has ``--json``; every command's help ends with an example. Errors are one line on stderr and a
non-zero exit; nothing is written when input is refused.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, MemoryFullError, NexusError, SettingError, StaleEditError
from . import usage

Handler = Callable[[argparse.Namespace], int]


# ------------------------------------------------------------------ helpers


def _vault(args: argparse.Namespace) -> Any:
    from ..storage.vault import find

    return find(args.vault, os.environ.get("NEXUS_VAULT"), Path.cwd())


def _keys_home() -> Path:
    from ..settings import keys_home

    return keys_home()


def _trust() -> Any:
    """What this machine trusts (``nexus.trust.Trust``): the pins beside the keys, found when first asked."""
    from ..trust import Trust

    return Trust(_keys_home)


# command-line options that give a setting (argument -> Settings field)
SETTING_ARGS = {
    "brief_max_chars": "brief_max_chars",
    "sweep_days": "sweep_days",
    "rescan_seconds": "rescan_seconds",
    "tools": "mcp_tools",
}


def _workspace(args: argparse.Namespace, vault: Any = None) -> Any:
    """The vault, the settings (argument, ``NEXUS_*``, ``nexus.md``, default) and the keys folder."""
    from .. import workspace

    given = {f: getattr(args, a) for a, f in SETTING_ARGS.items() if getattr(args, a, None) is not None}
    vault = vault if vault is not None else _vault(args)
    ws = workspace.for_vault(vault, os.environ, args=given)
    # (a float given here is kept as given: the resolver's coercion would round 0.5 minute to 0)
    return ws.with_settings(stale_checkpoint_minutes=getattr(args, "stale_minutes", None))


def _origin(args: argparse.Namespace, setting: str) -> str:
    """Where a setting's value came from on this command line: its flag and value when one was
    given, else the variable or the ``nexus.md`` property (``settings.origin``)."""
    from ..operations import BY_NAME, CLI
    from ..settings import origin

    op = BY_NAME.get(getattr(args, "operation", ""))
    for param in op.params_for(CLI) if op else ():
        if param.setting == setting and getattr(args, param.name, None) is not None:
            return f"{param.cli_flag} {getattr(args, param.name)}"
    return origin(setting, os.environ, _vault(args).config())


def _settings(args: argparse.Namespace, vault: Any) -> Any:
    return _workspace(args, vault).settings


def _progress(args: argparse.Namespace, label: str) -> Any:
    """Progress for long work: a bar with an estimate on a terminal after two seconds; nothing when
    stderr is not a terminal or the command prints JSON (``progress.py``)."""
    from ..storage.progress import bar

    return bar(label, enabled=not getattr(args, "json", False))


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):
        try:
            out = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
            out.encode("utf-8")
        except UnicodeEncodeError:  # bytes that were not UTF-8 (a file nexus did not write): \udcXX
            out = json.dumps(data, indent=2) + "\n"
        sys.stdout.write(out)
    else:
        out = text if text.endswith("\n") or not text else text + "\n"
        try:
            sys.stdout.write(out)
        except UnicodeEncodeError:
            sys.stdout.write(out.encode("utf-8", "backslashreplace").decode("utf-8"))


def _read_file(name: str, what: str) -> str:
    """The text of a file given on the command line (``-``: standard input), or one clear error."""

    try:
        data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as err:
        raise InputError(f"cannot read the {what} {name}: {err.strerror or type(err).__name__}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"the {what} {name} is not UTF-8 text (byte {err.start})") from None


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} is not a count of 1 or more")
    return n


# ------------------------------------------------------------------ handlers: the watcher


def cmd_watch(args: argparse.Namespace) -> int:
    from ..watch import watcher

    watcher.run(
        _workspace(args),
        settle_seconds=args.settle,
        once=args.once,
        as_json=args.json,
        child_env=os.environ,
    )
    return 0


def _add_coordination_commands(groups: dict[str, Any]) -> None:
    sub = groups[""]
    p = _cmd(
        sub,
        "watch",
        cmd_watch,
        "watch the vault: derived state, shadow and restore, a person's notes as entries",
        "nexus watch --rescan 5",
    )
    p.add_argument("--once", action="store_true", help="one full pass, then exit")
    p.add_argument(
        "--rescan",
        dest="rescan_seconds",
        type=float,
        help="seconds between full rescans (default: the vault's rescan_seconds, 5)",
    )
    p.add_argument(
        "--settle",
        type=float,
        default=3.0,
        help="seconds a person's text must stay unchanged before it is signed (default 3)",
    )


# ------------------------------------------------------------------ handlers: search and MCP


def cmd_mcp(args: argparse.Namespace) -> int:
    from . import mcp_front  # answers the first requests while the MCP SDK loads, then hands over

    return mcp_front.serve(_workspace(args), args.agent, mode=os.environ.get("NEXUS_MCP_FRONT", "lazy"))


def _add_search_commands(groups: dict[str, Any]) -> None:
    sub = groups[""]
    p = _cmd(
        sub,
        "mcp",
        cmd_mcp,
        "serve nexus to an agent runtime over MCP (stdio)",
        "nexus mcp --agent ella",
        json_flag=False,
    )
    p.add_argument("--agent", required=True, help="the identity tools act as (appends are signed by it)")
    p.add_argument(
        "--tools",
        choices=("agent", "all"),
        default=None,
        help="agent (default): the few tools an agent's turns need; all: every tool",
    )


# ------------------------------------------------------------------ setting up agent runtimes


def _executable(name: str) -> str:
    """The absolute path of one of nexus's commands in this installation, else from PATH, else the name."""
    import shutil
    import sysconfig

    here = Path(sysconfig.get_path("scripts")) / name
    if here.is_file():
        return str(here)
    return shutil.which(name) or name


def _setup_agent(
    args: argparse.Namespace, project: Path, home: Path, env: dict[str, str]
) -> tuple[str | None, str | None, Path | None]:
    """Who ``nexus setup`` wires: ``--agent``, else (``--check``) the agent, vault and keys folder the
    runtime's existing wiring names (None: nothing is wired)."""
    from . import runtimes

    keys = Path(args.keys_home) if args.keys_home else None
    if args.agent is not None:
        return args.agent, args.vault, keys
    found = runtimes.wired(args.runtime, args.scope, project, home, env)
    if found is None and not runtimes.reads_back(args.runtime):
        raise InputError(f"give --agent: nexus does not read {args.runtime}'s wiring back")
    if found is None:
        return None, None, None
    vault = args.vault or (str(found.vault) if found.vault else None)
    return found.agent, vault, keys or found.keys_home


def cmd_setup(args: argparse.Namespace) -> int:
    from ..keys.identity import private_key_path
    from ..settings import keys_home
    from ..storage.text import check_name
    from ..storage.vault import find as find_vault
    from . import runtimes
    from .runtimes import wiring

    scopes = runtimes.scopes(args.runtime)  # an unknown runtime is refused before anything is read
    if args.scope is None:
        args.scope = scopes[0]
    if args.scope not in wiring.SCOPES:
        raise InputError(f"unknown scope {args.scope!r}: use project or user")
    if args.scope not in scopes:
        raise InputError(
            f"{args.runtime} has no {args.scope} scope (it reads only its per-user configuration): "
            f"leave out --scope, or use --scope {scopes[0]}; nothing was changed"
        )
    project, home, env = Path(args.project).resolve(), Path.home(), dict(os.environ)
    agent, vault_path, keys = _setup_agent(args, project, home, env)
    if agent is None:  # --check, and nothing wired: the runtime would not use nexus
        where = project if args.scope == "project" else home
        fix = f"nexus setup {args.runtime} --agent NAME" + (" --scope user" if args.scope == "user" else "")
        line = f"{args.runtime} would not use nexus: it is not wired in {where} ({args.scope} scope) → {fix}"
        _emit(
            args,
            {"uses_nexus": False, "agent": None, "checks": [{"ok": False, "what": line, "fix": fix}]},
            line,
        )
        return 1
    vault = find_vault(vault_path, os.environ.get("NEXUS_VAULT"), Path.cwd())
    if not vault.identity_path(check_name(agent)).is_file():
        raise vault.unknown_agent(agent)
    keys = (keys or _keys_home()).resolve()
    w = wiring.Wiring(
        agent=agent,
        vault=vault.root.resolve(),
        keys_home=keys,
        scope=args.scope,
        project=project,
        home=home,
        nexus=_executable("nexus"),
        hook=_executable("nexus-hook"),
        env=env,
    )
    if args.check:
        ok, findings, lines = runtimes.check(args.runtime, w, private_key_path(vault, keys, agent))
        _emit(args, {"uses_nexus": ok, "agent": agent, "checks": findings}, "\n".join(lines))
        return 0 if ok else 1
    p = runtimes.plan(args.runtime, w, args.skip or [], write=False)  # a file it cannot merge: refused first
    wiring.check_key(
        lambda folder: private_key_path(vault, folder, agent),
        keys,
        agent,
        wiring.key_candidates(vault.root, keys, keys_home({}), os.environ.get("NEXUS_HOME")),
        "--keys-home",
    )
    if not args.dry_run:
        p = runtimes.plan(args.runtime, w, args.skip or [], write=True)
    data: list[dict[str, Any]] = [
        {
            "path": str(o.path),
            "what": o.what,
            "state": "wired" if not o.changed else "missing" if o.old is None else "outdated",
            "backup": str(o.backup) if o.backup else None,
        }
        for o in p.outcomes
    ]
    behalf = runtimes.behalf_lines(p, done=not args.dry_run)
    changed = sum(o.changed for o in p.outcomes)
    if args.dry_run:
        diffs = "".join(o.diff() for o in p.outcomes if o.changed)
        summary = f"dry run: {changed} file{'s' if changed != 1 else ''} would change; nothing written"
        _emit(
            args,
            {"changes": [d for d in data if d["state"] != "wired"], "behalf": behalf},
            "\n".join(filter(None, [diffs.rstrip("\n"), *behalf, summary])),
        )
        return 0
    lines = []
    for o in p.outcomes:
        if not o.changed:
            lines.append(f"unchanged {o.path}")
        elif o.old is None:
            lines.append(f"created   {o.path} — {o.what}")
        else:
            lines.append(f"updated   {o.path} — {o.what} (backup: {o.backup})")
    _emit(args, {"files": data, "behalf": behalf}, "\n".join(lines + behalf))
    return 0


def _add_setup_command(groups: dict[str, Any]) -> None:
    sub = groups[""]
    p = _cmd(
        sub,
        "setup",
        cmd_setup,
        "wire an agent runtime (claude-code, codex, gemini-cli, opencode, hermes, openclaw, cursor) "
        "to this vault",
        "nexus setup claude-code --agent ella\n  nexus setup --check claude-code",
    )
    p.add_argument("runtime", help="claude-code, codex, gemini-cli, opencode, hermes, openclaw or cursor")
    p.add_argument(
        "--agent", help="the identity the runtime acts as (with --check: read from the wiring when left out)"
    )
    p.add_argument(
        "--keys-home",
        metavar="PATH",
        help="the keys folder to wire (holds keys/VAULT_ID/AGENT.pem; default: NEXUS_HOME, else the "
        "per-user config folder)",
    )
    p.add_argument(
        "--skip",
        action="append",
        metavar="NAME",
        help="leave out one thing setup writes on your behalf (it names each: allow, enable, trust…)",
    )
    p.add_argument(
        "--scope",
        default=None,
        help="project: files in --project (the default for claude-code, codex and cursor); user: files in "
        "your home folder (the only scope, so the default, for hermes: $HERMES_HOME, else ~/.hermes; "
        "and openclaw: ~/.openclaw)",
    )
    p.add_argument("--project", default=".", help="the project folder for project scope (default: here)")
    p.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")
    p.add_argument(
        "--check",
        action="store_true",
        help="say whether the runtime would really use nexus (exit 1 naming what is missing and the fix)",
    )


def cmd_hermes_provider(args: argparse.Namespace) -> int:
    from . import hermes

    # the protocol owns standard output: anything else printed goes to standard error
    answers, sys.stdout = sys.stdout, sys.stderr
    try:
        return hermes.serve(sys.stdin, answers)
    finally:
        sys.stdout = answers


def _add_hermes_command(groups: dict[str, Any]) -> None:
    _cmd(
        groups[""],
        "hermes-provider",
        cmd_hermes_provider,
        "answer Hermes Agent's nexus plugin over stdio (the plugin `nexus setup hermes` installs runs it)",
        "nexus hermes-provider < requests.jsonl",
        json_flag=False,
    )


# ------------------------------------------------------------------ handlers: many machines (git, file sync)


def cmd_git_merge_driver(args: argparse.Namespace) -> int:
    from ..sync import gitsync

    code, lines = gitsync.merge_driver(args.base, args.ours, args.theirs, args.path, env=os.environ)
    for line in lines:
        sys.stderr.write(f"{gitsync.DRIVER_SAYS}{line}\n")
    return code


def cmd_git_refresh(args: argparse.Namespace) -> int:
    from ..sync import gitsync

    if os.environ.get(gitsync.IN_SYNC_ENV):
        return 0  # `nexus sync` refreshes once its merge is done (and holds the locks meanwhile)
    data = gitsync.refresh(_vault(args), args.before, trust=_trust())
    if not args.quiet or args.json:
        _emit(
            args,
            data,
            f"{data['arrived']} entries arrived, {len(data['renumbered'])} decisions "
            f"renumbered, {len(data['imported'])} conflict copies imported",
        )
    return 0


def cmd_sync(args: argparse.Namespace) -> int:
    from ..sync import gitsync

    data = gitsync.sync(_vault(args), args.remote, env=os.environ, trust=_trust())
    for line in data["conflicts"]:
        if not args.json:
            sys.stderr.write(f"nexus: listed: {line}\n")
    text = (
        f"synced with {data['remote']}/{data['branch']}: {data['committed']} commit(s), "
        f"{'merged' if data['merged'] else 'nothing to merge'}, "
        f"{'pushed' if data['pushed'] else 'nothing to push'}"
    )
    _emit(args, data, text)
    return 0


def _add_git_commands(groups: dict[str, Any]) -> None:
    gitp = _group(groups, "git")
    p = _cmd(
        gitp,
        "merge-driver",
        cmd_git_merge_driver,
        "what git runs to merge a file nexus manages (registered by `nexus git setup`)",
        "nexus git merge-driver %O %A %B %L %P",
        json_flag=False,
    )
    for name in ("base", "ours", "theirs", "marker", "path"):
        p.add_argument(name)
    p = _cmd(
        gitp,
        "refresh",
        cmd_git_refresh,
        "bring derived state up to date after git changed the vault (run by the git hooks)",
        "nexus git refresh --before ORIG_HEAD",
    )
    p.add_argument("--quiet", action="store_true", help="print nothing")
    p.add_argument(
        "--before",
        metavar="COMMIT",
        help="what the work tree held before git changed it (the hooks pass ORIG_HEAD)",
    )


def _add_sync_command(groups: dict[str, Any]) -> None:
    sub = groups[""]
    p = _cmd(
        sub,
        "sync",
        cmd_sync,
        "commit what nexus manages, fetch, merge through the driver, verify, push (never an "
        "unverified vault)",
        "nexus sync --remote origin",
    )
    p.add_argument("--remote", help="the git remote (default: the branch's upstream, else origin)")


# ------------------------------------------------------------------ commands generated from the operations

# the help of each group of commands (``nexus log``, ``nexus checkpoint``…)
GROUPS = {
    "agent": "identities: agents and people",
    "log": "the live-context log",
    "checkpoint": "per-agent checkpoints",
    "state": "the project state note (versioned)",
    "memory": "bounded agent memory, the user profile, the memory index",
    "memory facts": "the memory index: one note per fact under memory/",
    "index": "the search index under .nexus/index/",
    "git": "the vault as a git repository",
    "claim": "claims: take (`nexus claim PATTERN…` is `nexus claim take PATTERN…`), renew, release",
}


def _group(groups: dict[str, Any], words: str) -> Any:
    """The subparsers a command with these leading words is added to (made when first asked)."""
    if words not in groups:
        parent, _, last = words.rpartition(" ")
        command = groups.get(f"command:{words}")  # a command with commands of its own (`decisions show`)
        holder = command or _group(groups, parent).add_parser(last, help=GROUPS.get(words, ""))
        groups[words] = holder.add_subparsers(title=f"{last} commands", metavar="COMMAND")
    return groups[words]


def _add_operations(groups: dict[str, Any], only: str | None = None) -> None:
    """One subcommand per operation that has a command (only those under the command word ``only``,
    when given), with its parameters as options."""
    from ..operations import CLI, OPERATIONS

    for op in OPERATIONS:
        if not op.command or (only is not None and op.command.split(" ", 1)[0] != only):
            continue
        prefix, _, last = op.command.rpartition(" ")
        p = _cmd(_group(groups, prefix), last, _run_operation, op.summary, op.example, json_flag=op.json_flag)
        p.set_defaults(operation=op.name)
        groups[f"command:{op.command}"] = p
        if op.acts != "none":
            p.add_argument("--agent", required=op.acts == "required", help=op.agent_help)
        exclusive: dict[str, Any] = {}
        for param in op.params_for(CLI):
            _add_param(p, param, exclusive)


def _add_param(p: argparse.ArgumentParser, param: Any, groups: dict[str, Any]) -> None:
    """A parameter as an option (or a positional argument, or a --X-file option reading a file;
    options in one ``group`` exclude each other)."""
    kw = _argument_keywords(param)
    target: Any = p
    if "group" in param.cli:
        if param.cli["group"] not in groups:
            groups[param.cli["group"]] = p.add_mutually_exclusive_group(
                required=param.cli.get("group_required", False)
            )
        target = groups[param.cli["group"]]
    elif param.file_flag and param.flag is not None:
        target = p.add_mutually_exclusive_group(required=param.required)
    elif param.flag is not None and not param.cli_flag.startswith("-"):
        p.add_argument(param.cli_flag, **kw)
        return
    if param.flag is not None:
        target.add_argument(
            param.cli_flag, dest=param.name, required=param.required and not param.file_flag, **kw
        )
    if param.file_flag:
        target.add_argument(
            param.file_flag,
            dest=f"{param.name}_file",
            required=param.required and param.flag is None,
            metavar=param.cli.get("file_metavar") or param.file_flag.lstrip("-").replace("-", "_").upper(),
            help=param.cli.get("file_help"),
        )


def _argument_keywords(param: Any) -> dict[str, Any]:
    """argparse's keywords for a parameter: help, type or action, choices, default, nargs, metavar."""
    kw: dict[str, Any] = {"help": param.help}
    if "metavar" in param.cli:
        kw["metavar"] = param.cli["metavar"]
    if param.kind == "bool":
        kw["action"] = "store_true"
    elif param.kind in ("int", "float"):
        kw["type"] = (
            _positive if param.cli.get("type") == "positive" else {"int": int, "float": float}[param.kind]
        )
    elif param.kind == "list" and "nargs" not in param.cli:
        kw["action"] = "append"
    if "nargs" in param.cli:
        kw["nargs"] = param.cli["nargs"]
    if param.choices and param.cli_choices:
        kw["choices"] = param.choices
    if param.default is not None and param.kind != "bool":
        kw["default"] = param.default
    return kw


def _param_value(args: argparse.Namespace, param: Any) -> Any:
    """A parameter's value from the command line (a --X-file option's file read as text)."""
    source = getattr(args, f"{param.name}_file", None) if param.file_flag else None
    if not source:
        return getattr(args, param.name, None)
    if param.cli.get("decode") == "lenient":
        from ..errors import InputError

        try:  # undecodable bytes become lone surrogates, which the text rules make visible
            raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
        except OSError as err:
            raise InputError(f"cannot read the {param.name} file {source}: {err.strerror}") from None
        return raw.decode("utf-8", errors="surrogateescape")
    return _read_file(source, param.file_flag)


def _run_operation(args: argparse.Namespace) -> int:
    """Run the operation a generated command stands for, and print its result."""
    from ..operations import BY_NAME, CLI, Call

    op = BY_NAME[args.operation]
    kwargs: dict[str, Any] = {}
    overrides: dict[str, Any] = {}
    for param in op.params_for(CLI):
        value = _param_value(args, param)
        if param.setting:
            overrides[param.setting] = value
        else:
            kwargs[param.name] = value
    vault = _vault(args) if op.needs_vault else None  # (`init` makes one)
    call = Call(
        vault,  # type: ignore[arg-type]
        agent=getattr(args, "agent", None) or "",
        surface=CLI,
        settings=lambda: _workspace(args, vault).with_settings(**overrides).settings,
        keys=_keys_home,
        progress=lambda label: _progress(args, label),
        colour=sys.stdout.isatty() and not os.environ.get("NO_COLOR"),
    )
    result = op.function()(call, **{k: v for k, v in kwargs.items() if v is not None})
    notes = list(getattr(result, "notes", ()))
    if not getattr(args, "json", False):
        notes += getattr(result, "text_notes", ())
    for note in notes:
        sys.stderr.write(f"nexus: {note}\n")
    _emit(args, result.to_json(), result.text())
    return int(getattr(result, "exit_code", 0))


# ------------------------------------------------------------------ parser


def _cmd(
    sub: Any, name: str, handler: Handler, help: str, example: str, *, json_flag: bool = True
) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=help,
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(handler=handler)
    # (also after the command: `nexus mcp --agent ella --vault X`; SUPPRESS keeps one given before it)
    p.add_argument("--vault", default=argparse.SUPPRESS, help="the vault folder (as before the command)")
    if json_flag:
        p.add_argument("--json", action="store_true", help="print JSON for programs")
    return p


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (``nexus: error: …``), like every other error; exit 2."""

    def error(self, message: str) -> Any:
        said = _one_line(usage.explain(self.prog, message))
        self.exit(2, f"nexus: error: {self.prog}: {said} (see `{self.prog} --help`)\n")


# the command words of the commands written by hand here, and what adds them (the rest come from the
# operations)
HAND_WRITTEN: dict[str, Callable[[dict[str, Any]], None]] = {
    "watch": _add_coordination_commands,
    "mcp": _add_search_commands,
    "setup": _add_setup_command,
    "hermes-provider": _add_hermes_command,
    "git": _add_git_commands,
    "sync": _add_sync_command,
}


def command_word(argv: Sequence[str]) -> str | None:
    """The command word of a command line (``log`` in ``nexus --vault V log append …``), or None when
    there is none or it is not a command: then the whole parser is built, for the help or the error."""
    from ..operations import OPERATIONS

    rest = list(argv)
    while rest and rest[0].startswith("--vault"):
        rest = rest[1:] if "=" in rest[0] else rest[2:]
    if not rest or rest[0].startswith("-"):
        return None
    known = set(HAND_WRITTEN) | {op.command.split(" ", 1)[0] for op in OPERATIONS if op.command}
    return rest[0] if rest[0] in known else None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command-line parser: every command, or only those under the command word ``only`` (what a
    command line needs: building all ~60 subparsers costs ~30 ms, a fifth of a short command)."""
    parser = _Parser(
        prog="nexus",
        description="Shared, durable, inspectable memory for AI agents, in a Markdown vault.",
        epilog="example:\n  nexus init vault && cd vault && nexus agent add ella && nexus log tail",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--vault", help="the vault folder (else NEXUS_VAULT, else walk up from here)")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    groups: dict[str, Any] = {"": sub}
    if only is None:
        _group(groups, "log")  # first in the help
    _add_operations(groups, only)
    for word, add in HAND_WRITTEN.items():
        if only is None or only == word:
            add(groups)
    return parser


def _version() -> str:
    from .. import __version__

    return f"nexus {__version__}"


def _one_line(message: str) -> str:
    return message.replace("\r", " ").replace("\n", " ").encode("utf-8", "backslashreplace").decode()


def claim_words(argv: Sequence[str]) -> list[str]:
    """``nexus claim PATTERN…`` is ``nexus claim take PATTERN…`` (argparse cannot hold patterns and the
    ``renew``/``release`` commands as positionals of one command)."""
    out = list(argv)
    i = 0
    while i < len(out) and out[i].startswith("--vault"):
        i += 1 if "=" in out[i] else 2
    if (
        i + 1 < len(out)
        and out[i] == "claim"
        and out[i + 1] not in ("take", "renew", "release", "-h", "--help")
    ):
        out.insert(i + 1, "take")
    return out


def _parse(argv: Sequence[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The parser and the parsed command line; a usage error names what was typed, with the close
    word and the help of the command it was typed for (``usage.py``)."""
    from ..variables import unknown

    for warning in unknown(os.environ):  # a misspelt NEXUS_* variable would be ignored silently
        sys.stderr.write(f"nexus: {warning}\n")
    argv = claim_words(argv)
    parser = build_parser(command_word(argv))
    mistyped = usage.unknown_option(parser, argv)
    if mistyped is not None:
        mistyped[0].error(mistyped[1])
    args, extra = parser.parse_known_args(argv)
    if extra:
        usage.command_parser(parser, argv).error(f"unexpected argument(s): {' '.join(extra)}")
    return parser, args


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser, args = _parse(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except SettingError as err:  # named as the person gave it: the flag, the variable or nexus.md
        sys.stderr.write(f"nexus: error: {err.given_as(_origin(args, err.setting))}\n")
        return err.exit_code
    except StaleEditError as err:  # the version moved: the current one and a diff, to edit again
        sys.stderr.write(f"nexus: error: {err}\n{err.diff}")
        if getattr(args, "json", False):
            _emit(args, {"error": str(err), "current": err.current, "diff": err.diff}, "")
        return err.exit_code
    except NexusError as err:
        sys.stderr.write(f"nexus: error: {err}\n")
        if getattr(args, "json", False) and isinstance(err, MemoryFullError):
            # a program reads the store's state from the answer instead of parsing the message
            _emit(
                args,
                {
                    "error": "memory-full",
                    "message": str(err).split("\n", 1)[0],
                    "usage": err.usage,
                    "entries": list(err.entries),
                },
                "",
            )
        return err.exit_code
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    except OSError as err:  # a disk error (EIO, ENOSPC…): one line; an append it stopped left no entry
        where = f": {err.filename}" if err.filename else ""
        sys.stderr.write(f"nexus: error: {err.strerror or err}{where} (nothing was acknowledged)\n")
        return 1
