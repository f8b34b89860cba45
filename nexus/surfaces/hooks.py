"""The hook events agent runtimes (Claude Code, Codex) send ``nexus-hook``, answered in a process.

    nexus-hook session-start --agent ella --vault /path/to/vault   # SessionStart: the brief
    nexus-hook prompt --agent ella --vault /path/to/vault          # UserPromptSubmit: only what is new
    nexus-hook pre-compact --agent ella --vault /path/to/vault     # PreCompact: save the checkpoint
    nexus-hook stop --agent ella --vault /path/to/vault [--block-without-entry]   # Stop
    nexus-hook session-end --agent ella --vault /path/to/vault     # SessionEnd: retain, pending review
    nexus-hook pre-tool --agent ella --vault /path/to/vault        # PreToolUse: an edit of a claimed path

The events are operations (``nexus/operations/registry/``, ``hook=``): this module is their thin
surface, generated like the CLI and the MCP tools. The runtime's event JSON on stdin is read and
given to the operation: ``session_id`` (what this session was told), ``cwd`` (where to look for a
vault when none is given), and each parameter the operation declares (``source``, ``prompt``,
``trigger``, ``transcript_path``, ``stop_hook_active``). Output is the JSON both runtimes document for
the event (``hookSpecificOutput.additionalContext`` for SessionStart and UserPromptSubmit;
``decision: "block"`` + ``reason`` on Stop), and nothing at all when there is nothing to say. The
vault comes from ``--vault``, ``NEXUS_VAULT``, then the event's ``cwd``; keys from ``--home``, then
``NEXUS_HOME``.

Claude Code and Codex treat exit code 2 as "block"; argparse exits 2 on a usage error. So this entry
point parses its few arguments by hand and ALWAYS exits 0: whatever goes wrong is one line (on stderr,
and as one line of context or a system message on stdout), never a blocked session. Stop never blocks
unless ``--block-without-entry`` is given, and then at most once per turn (``stop_hook_active``);
``stop --retain`` also does what session-end does (Codex has no SessionEnd event).

``nexus-hook`` is ``hook_client.py``: it asks the warm hook server (``hook_server.py``), which runs
:func:`answer` for it; with no server, it runs :func:`main` here (``python -m nexus.surfaces.hooks``
does too, without a server). Hot path: the standard library, the operations' declarations and nexus's
own small modules; the work is in ``session.py``. A prompt with nothing new since the last injection
is answered before settings or keys are read, and so is a pre-tool event for anything but an edit of
a file another agent claimed (``edits.quiet``). A prompt in a session that had no session-start (a
runtime wired without it for a new session, as Gemini CLI is: one hook fewer before its first model
request) is that session's start: the whole brief.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..operations import HOOK, OPERATIONS, Call, Operation, Param

# event argument -> the runtime's event name
EVENTS = {op.hook: op.hook_event for op in OPERATIONS if op.hook}
CONTEXT_EVENTS = ("session-start", "prompt")  # (plain context: the runtimes inject it)
VALUED = ("--agent", "--vault", "--home", "--max-chars")
FLAGS = tuple(
    p.cli_flag for op in OPERATIONS if op.hook for p in op.params_for(HOOK) if p.kind == "bool" and p.flag
)
USAGE = (
    f"usage: nexus-hook {'|'.join(EVENTS)} --agent NAME "
    f"[--vault PATH] [--home PATH] [--max-chars N] {' '.join(f'[{f}]' for f in FLAGS)}"
)


def _parse(argv: Sequence[str], env: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    if not argv or argv[0] not in EVENTS:
        raise ValueError(USAGE)
    opts: dict[str, str] = {}
    rest = list(argv[1:])
    while rest:
        key = rest.pop(0)
        if key in FLAGS:
            opts[key[2:]] = "1"
            continue
        if key not in VALUED or not rest:
            raise ValueError(USAGE)
        opts[key[2:]] = rest.pop(0)
    if "agent" not in opts:
        opts["agent"] = env.get("NEXUS_AGENT", "")
    if not opts["agent"]:
        raise ValueError(USAGE + " (or set NEXUS_AGENT)")
    return argv[0], opts


def _event(raw: str) -> dict[str, Any]:
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _value(param: Param, opts: dict[str, str], data: dict[str, Any]) -> Any:
    """A hook parameter: a --flag on the command line, else a field of the runtime's event JSON."""
    if param.kind == "bool" and param.flag:
        return param.cli_flag[2:] in opts
    value = data.get(param.cli.get("event", param.name))
    if param.kind == "dict":
        return value if isinstance(value, dict) else None
    if param.kind == "bool":
        return value is True
    if param.default is not None:
        return value if isinstance(value, str) and value else param.default
    return value if isinstance(value, str) else None


def _call(op: Operation, vault: Any, opts: dict[str, str], env: Mapping[str, str]) -> Call:
    """The call, with settings and keys found only when the operation asks for them."""
    from .. import workspace

    max_chars = int(opts["max-chars"]) if "max-chars" in opts else None
    ws = workspace.for_vault(
        vault,
        env,
        args={"brief_max_chars": max_chars} if max_chars else {},
        keys=Path(opts["home"]) if "home" in opts else None,
    )
    return Call.of(ws, agent=opts["agent"])  # (its trust: the pins beside the keys, ws.keys)


def run(
    event: str,
    opts: dict[str, str],
    data: dict[str, Any],
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> dict[str, Any] | None:
    """Do what ``event`` asks; return the JSON to print (None: print nothing). Raises on failure.
    ``env``: the environment the settings come from (default: this process's); ``cwd``: the caller's
    working folder (default: this process's), where the event's ``cwd`` is taken from when it has none
    (the hook server answers for processes other than itself, and never changes its own folder)."""
    from ..operations import BY_HOOK
    from ..storage.vault import find

    env = os.environ if env is None else env
    op = BY_HOOK[event]
    given = data.get("cwd")
    if not (isinstance(given, str) and os.path.isabs(given)):
        here = cwd or os.getcwd()
        data = {**data, "cwd": os.path.join(here, given) if isinstance(given, str) and given else here}
    vault = find(opts.get("vault"), env.get("NEXUS_VAULT"), Path(data["cwd"]))
    sid = str(data.get("session_id") or env.get("NEXUS_SESSION") or "default")
    kwargs = {p.name: _value(p, opts, data) for p in op.params_for(HOOK)}
    if event == "prompt":
        from ..team import session

        if session.quiet(vault, opts["agent"], sid, prompt=kwargs.get("prompt")):
            return None  # nothing moved since the last injection: the fastest answer is none
        if not session.known(vault, opts["agent"], sid):  # a session nexus saw no start of: this is it
            op = BY_HOOK["session-start"]
            kwargs = {p.name: _value(p, opts, data) for p in op.params_for(HOOK)}
            text = op.function()(_call(op, vault, opts, env), session_id=sid, **kwargs).text()
            session.quiet(vault, opts["agent"], sid, prompt=data.get("prompt"))  # (the turn recorded)
            return {"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": text}}
    elif event == "pre-tool":
        from ..operations import edits

        if edits.quiet(vault, opts["agent"], kwargs["tool_name"], kwargs["tool_input"], kwargs["cwd"]):
            return None  # not an edit, or nobody else holds the file: no answer, before settings or keys
    elif event == "stop" and not kwargs.get("block_without_entry"):
        from ..team import session

        if not kwargs.get("retain") or session.unchanged(vault, opts["agent"], sid):
            return None  # nothing to block, nothing appended since the turn began: nothing to retain
    result = op.function()(_call(op, vault, opts, env), session_id=sid, **kwargs)
    out = result.to_json()
    if "decision" in out or "hookSpecificOutput" in out:  # (Stop's block; PreToolUse's deny)
        return dict(out)
    text = result.text()
    if event not in CONTEXT_EVENTS or not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": text}}


def answer(argv: Sequence[str], raw: str, env: Mapping[str, str], cwd: str | None = None) -> tuple[str, str]:
    """What the hook ``argv`` prints on stdout and on stderr, given the event JSON ``raw``, the
    environment and the working folder it runs in. Never raises: a failure is one line on both."""
    event = argv[0] if argv else ""
    try:
        name, opts = _parse(argv, env)
        out = run(name, opts, _event(raw), env, cwd)
        return ("" if out is None else json.dumps(out, ensure_ascii=False) + "\n"), ""
    except Exception as err:  # a hook must never block the agent: one line, exit 0
        what = (
            "the live context could not be loaded" if event in CONTEXT_EVENTS else f"{event or 'hook'} failed"
        )
        message = f"nexus: {what}: {' '.join(str(err).split())}"
        out = (
            {"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": message}}
            if event in CONTEXT_EVENTS
            else {"systemMessage": message}
        )
        return json.dumps(out, ensure_ascii=False) + "\n", message + "\n"


def event_json() -> str:
    """This process's standard input: the runtime's event JSON (always drained: a runtime may block on
    it), or nothing from a terminal."""
    try:
        return "" if sys.stdin.isatty() else sys.stdin.read()
    except (OSError, ValueError):
        return ""


def main(argv: Sequence[str] | None = None, raw: str | None = None) -> int:
    """The hook in this process (``raw``: the event JSON already read, else standard input)."""
    out, err = answer(
        list(sys.argv[1:] if argv is None else argv), event_json() if raw is None else raw, os.environ
    )
    sys.stdout.write(out)
    sys.stderr.write(err)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
