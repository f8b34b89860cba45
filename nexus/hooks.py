"""``nexus-hook``: the entry point agent runtimes (Claude Code, Codex) call from their hooks.

    nexus-hook session-start --agent ella --vault /path/to/vault   # SessionStart: the brief
    nexus-hook prompt --agent ella --vault /path/to/vault          # UserPromptSubmit: only what is new
    nexus-hook pre-compact --agent ella --vault /path/to/vault     # PreCompact: save the checkpoint
    nexus-hook stop --agent ella --vault /path/to/vault [--block-without-entry]   # Stop
    nexus-hook session-end --agent ella --vault /path/to/vault     # SessionEnd: retain, pending review

The runtime's event JSON on stdin is read and used: ``session_id`` (what this session was told),
``cwd`` (where to look for a vault when none is given), ``source`` (startup, resume, clear, compact),
``prompt``, ``trigger``, ``transcript_path`` and ``stop_hook_active``. Output is the JSON both runtimes
document for the event (``hookSpecificOutput.additionalContext`` for SessionStart and
UserPromptSubmit; ``decision: "block"`` + ``reason`` on Stop), and nothing at all when there is nothing
to say. The vault comes from ``--vault``, ``NEXUS_VAULT``, then the event's ``cwd``; keys from
``--home``, then ``NEXUS_HOME``.

Claude Code and Codex treat exit code 2 as "block"; argparse exits 2 on a usage error. So this entry
point parses its few arguments by hand and ALWAYS exits 0: whatever goes wrong is one line (on stderr,
and as one line of context or a system message on stdout), never a blocked session. Stop never blocks
unless ``--block-without-entry`` is given, and then at most once per turn (``stop_hook_active``);
``stop --retain`` also does what session-end does (Codex has no SessionEnd event).

Hot path: the standard library and nexus's own small modules; the work is in ``session.py``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# event argument -> the runtime's event name
EVENTS = {
    "session-start": "SessionStart",
    "prompt": "UserPromptSubmit",
    "pre-compact": "PreCompact",
    "stop": "Stop",
    "session-end": "SessionEnd",
}
CONTEXT_EVENTS = ("session-start", "prompt")
VALUED = ("--agent", "--vault", "--home", "--max-chars")
FLAGS = ("--block-without-entry", "--retain")
USAGE = (
    "usage: nexus-hook session-start|prompt|pre-compact|stop|session-end --agent NAME "
    "[--vault PATH] [--home PATH] [--max-chars N] [--block-without-entry] [--retain]"
)
BLOCK_REASON = (
    "nexus: you wrote no log entry this turn. Append one (the `log_append` tool, or "
    '`nexus log append --agent {agent} --channel TOPIC --type note --summary "..."`) '
    "saying what you did, then stop."
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


def run(
    event: str, opts: dict[str, str], data: dict[str, Any], env: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """Do what ``event`` asks; return the JSON to print (None: print nothing). Raises on failure.
    ``env``: the environment the settings come from (default: this process's)."""
    from . import session
    from .vault import find

    env = os.environ if env is None else env
    cwd = data.get("cwd")
    start = Path(cwd) if isinstance(cwd, str) and cwd else Path.cwd()
    vault = find(opts.get("vault"), env.get("NEXUS_VAULT"), start)
    agent = opts["agent"]
    sid = str(data.get("session_id") or env.get("NEXUS_SESSION") or "default")
    prompt = data.get("prompt") if isinstance(data.get("prompt"), str) else None
    if event == "prompt" and session.quiet(vault, agent, sid, prompt=prompt):
        return None  # nothing moved since the last injection: the fastest answer is none
    from . import workspace

    max_chars = int(opts["max-chars"]) if "max-chars" in opts else None
    ws = workspace.for_vault(
        vault,
        env,
        args={"brief_max_chars": max_chars} if max_chars else {},
        keys=Path(opts["home"]) if "home" in opts else None,
    )
    from . import trust

    trust.configure(ws.keys_home)  # the keys this machine pinned decide what the context shows as verified
    home = ws.keys_home
    if event == "session-start":
        text = session.start(vault, agent, sid, ws.settings, source=str(data.get("source") or "startup"))
    elif event == "prompt":
        text = session.turn(vault, agent, sid, ws.settings, prompt=prompt)
    elif event == "pre-compact":
        transcript = data.get("transcript_path")
        session.pre_compact(
            vault,
            agent,
            sid,
            trigger=str(data.get("trigger") or "auto"),
            transcript=transcript if isinstance(transcript, str) else None,
            keys_home=home,
        )
        return None
    elif event == "stop":
        if "retain" in opts:  # runtimes without a session-end event (Codex): retain at every stop, once each
            session.end(vault, agent, sid)
        if (
            "block-without-entry" in opts
            and data.get("stop_hook_active") is not True
            and not session.wrote_this_turn(vault, agent, sid)
        ):
            return {"decision": "block", "reason": BLOCK_REASON.format(agent=agent)}
        return None
    else:  # session-end
        session.end(vault, agent, sid)
        return None
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": text}}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    raw = ""
    try:
        if not sys.stdin.isatty():
            raw = sys.stdin.read()  # the runtime's event JSON (always drained: a runtime may block on it)
    except (OSError, ValueError):
        pass
    event = argv[0] if argv else ""
    try:
        name, opts = _parse(argv, os.environ)
        out = run(name, opts, _event(raw), os.environ)
        if out is not None:
            sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
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
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        sys.stderr.write(message + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
