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

from .errors import NexusError

Handler = Callable[[argparse.Namespace], int]


# ------------------------------------------------------------------ helpers


def _vault(args: argparse.Namespace) -> Any:
    from .vault import find

    return find(args.vault, os.environ.get("NEXUS_VAULT"), Path.cwd())


def _keys_home() -> Path:
    from .settings import keys_home

    return keys_home()


def _settings(args: argparse.Namespace, vault: Any) -> Any:
    from .settings import resolve

    cli_args = {k: getattr(args, k) for k in ("brief_max_chars", "sweep_days", "rescan_seconds")
                if getattr(args, k, None) is not None}
    return resolve(cli_args, os.environ, vault.config())


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")


def _read_body(args: argparse.Namespace) -> str | None:
    if getattr(args, "body_file", None):
        if args.body_file == "-":
            return sys.stdin.read()
        return Path(args.body_file).read_text(encoding="utf-8")
    body: str | None = getattr(args, "body", None)
    return body


def _entry_text(located: Any) -> str:
    e = located.entry
    head = f"{e.ts} · {e.agent} · {e.channel} · {e.type} — {e.summary}  [{e.id}]"
    if e.ack:
        head += f"\n  acks: {', '.join(e.ack)}"
    if e.body:
        head += "\n" + "\n".join("  " + line for line in e.body.split("\n"))
    return head


# ------------------------------------------------------------------ handlers: vault and identities


def cmd_init(args: argparse.Namespace) -> int:
    from .vault import init

    vault, created = init(Path(args.path), force=args.force)
    data = {"vault": str(vault.root), "created": created}
    text = f"vault ready at {vault.root} ({len(created)} files created)"
    if created:
        text += "\nnext: nexus agent add NAME   (and `nexus agent add YOU --human` for yourself)"
    _emit(args, data, text)
    return 0


def cmd_agent_add(args: argparse.Namespace) -> int:
    from . import identity

    vault = _vault(args)
    ident = identity.add(vault, _keys_home(), args.name, human=args.human)
    _emit(args, ident.to_json(),
          f"added {ident.kind} {ident.name} (key {ident.key_id}); fill in {ident.path}")
    return 0


def cmd_agent_list(args: argparse.Namespace) -> int:
    from . import identity

    vault = _vault(args)
    idents = identity.all_identities(vault)
    lines = [f"{i.name:<20} {i.kind:<6} key {i.key_id}  {i.path}" for i in idents.values()]
    _emit(args, [i.to_json() for i in idents.values()], "\n".join(lines) or "no identities yet")
    return 0


# ------------------------------------------------------------------ handlers: the log


def cmd_log_append(args: argparse.Namespace) -> int:
    from . import identity, log

    vault = _vault(args)
    signer = identity.load_signer(vault, _keys_home(), args.agent)
    result = log.append(
        vault, signer, channel=args.channel, type=args.type, summary=args.summary,
        body=_read_body(args), ack=tuple(args.ack or ()),
    )
    for q in result.quarantined:
        sys.stderr.write(f"nexus: moved a torn tail (a writer killed mid-write) to {q}\n")
    _emit(args, result.to_json(), result.located.entry.id)
    return 0


def cmd_log_read(args: argparse.Namespace) -> int:
    from . import log

    vault = _vault(args)
    items = log.unread(vault, args.agent, advance=not args.peek)
    _emit(args, [i.to_json() for i in items],
          "\n\n".join(_entry_text(i) for i in items) or "nothing new")
    return 0


def cmd_log_tail(args: argparse.Namespace) -> int:
    from . import log

    vault = _vault(args)
    items = log.tail(vault, args.n)
    _emit(args, [i.to_json() for i in items],
          "\n\n".join(_entry_text(i) for i in items) or "the log is empty")
    return 0


def cmd_log_repair(args: argparse.Namespace) -> int:
    from . import log

    moved = log.repair_tail(_vault(args))
    _emit(args, {"quarantined": moved},
          "\n".join(f"moved a torn tail to {m}" for m in moved) or "no torn tail")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from .verify import verify

    report = verify(_vault(args))
    lines = [str(p) for p in report.problems]
    status = "clean" if report.ok else f"{len(report.errors)} problem(s)"
    lines.append(f"{report.entries} entries in {report.segments} segment(s): {status}")
    _emit(args, report.to_json(), "\n".join(lines))
    return 0 if report.ok else 1


# ------------------------------------------------------------------ parser


def _cmd(
    sub: Any, name: str, handler: Handler, help: str, example: str, *, json_flag: bool = True
) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        name, help=help, description=help, epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(handler=handler)
    if json_flag:
        p.add_argument("--json", action="store_true", help="print JSON for programs")
    return p


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nexus",
        description="Shared, durable, inspectable memory for AI agents, in a Markdown vault.",
        epilog="example:\n  nexus init ~/vault && nexus agent add ella && nexus log tail",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--vault", help="the vault folder (else NEXUS_VAULT, else walk up from here)")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    p = _cmd(sub, "init", cmd_init, "create a vault (safe to run again)", "nexus init ~/vault")
    p.add_argument("path", nargs="?", default=".", help="folder to create the vault in")
    p.add_argument("--force", action="store_true", help="use a folder that holds other files")

    agent = sub.add_parser("agent", help="identities: agents and people").add_subparsers(
        title="agent commands", metavar="COMMAND")
    p = _cmd(agent, "add", cmd_agent_add, "create an identity with its key pair",
             "nexus agent add ella   |   nexus agent add sam --human")
    p.add_argument("name", help="lowercase letters, digits and dashes")
    p.add_argument("--human", action="store_true", help="a person, not an agent")
    _cmd(agent, "list", cmd_agent_list, "list identities", "nexus agent list --json")

    logp = sub.add_parser("log", help="the live-context log").add_subparsers(
        title="log commands", metavar="COMMAND")
    p = _cmd(logp, "append", cmd_log_append, "append one signed entry; prints its id",
             'nexus log append --agent ella --channel build --type note --summary "CI is green"')
    p.add_argument("--agent", required=True)
    p.add_argument("--channel", required=True)
    p.add_argument("--type", required=True)
    p.add_argument("--summary", required=True, help="one line")
    body = p.add_mutually_exclusive_group()
    body.add_argument("--body", help="the entry's body (Markdown)")
    body.add_argument("--body-file", help="read the body from a file, or - for standard input")
    p.add_argument("--ack", action="append", metavar="ID", help="an entry this one acknowledges")
    p = _cmd(logp, "read", cmd_log_read, "entries by others this agent has not read; advances its cursor",
             "nexus log read --agent lyra --json")
    p.add_argument("--agent", required=True)
    p.add_argument("--peek", action="store_true", help="leave the cursor where it is")
    p = _cmd(logp, "tail", cmd_log_tail, "the last entries of the log", "nexus log tail -n 5")
    p.add_argument("-n", type=int, default=10, help="how many (default 10)")
    _cmd(logp, "repair", cmd_log_repair, "move a torn tail to .nexus/quarantine/", "nexus log repair")

    _cmd(sub, "verify", cmd_verify, "check framing, signatures, chains and ids; exit 1 on problems",
         "nexus verify --json")
    return parser


def _version() -> str:
    from . import __version__

    return f"nexus {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except NexusError as err:
        sys.stderr.write(f"nexus: error: {err}\n")
        return err.exit_code
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
