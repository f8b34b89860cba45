"""OpenClaw: the MCP server under ``mcp.servers`` in ``~/.openclaw/openclaw.json`` (JSON5; written back
as JSON, which JSON5 reads), an internal hook ``~/.openclaw/hooks/nexus-brief/`` (``HOOK.md`` +
``handler.ts``) enabled under ``hooks.internal``, and the rules block in the workspace's ``AGENTS.md``.
OpenClaw keeps one configuration per user: there is no project scope. Internal hooks run only in the
Gateway (``openclaw gateway run``), never in ``openclaw agent --local``.

The hook's events: ``agent:bootstrap`` (every run, before the system prompt is built: the brief goes in
as a ``NEXUS.md`` bootstrap file, rebuilt each run, so what the others wrote since arrives on the next
run), ``session:compact:before`` (the checkpoint is saved; the next run's brief carries it), and
``command:new``, ``command:reset`` and ``session:auto-reset`` (the session ends: its decisions go to
the bank, pending approval).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

from . import rules
from .configfiles import block_merge, exact, json_merge, table
from .wiring import Change, Wiring

SCOPES = ("user",)  # OpenClaw keeps one configuration per user (~/.openclaw)

HOOK_NAME = "nexus-brief"
EVENTS = ["agent:bootstrap", "session:compact:before", "command:new", "command:reset", "session:auto-reset"]

HOOK_MD = """---
name: nexus-brief
description: "Inject the nexus brief (what the others wrote, what you owe, decisions, memory) at bootstrap"
metadata: {"openclaw": {"emoji": "🔗", "events": EVENTS}}
---

# nexus-brief

For the configured nexus agent, runs `nexus-hook`: on `agent:bootstrap`, `session-start`, whose
output joins the bootstrap files as `NEXUS.md`; on `session:compact:before`, `pre-compact` (the
checkpoint); on `command:new`, `command:reset` and `session:auto-reset`, `session-end` (the session's
decisions to the bank, pending approval). Written by `nexus setup openclaw`; a re-run rewrites it.
""".replace("EVENTS", json.dumps(EVENTS))

# Plain JavaScript is valid TypeScript: the handler runs as OpenClaw loads it and under plain Node.
HANDLER = """// nexus-brief: written by `nexus setup openclaw` (a re-run rewrites it).
import {{ execFileSync }} from "node:child_process";

const COMMAND = {command};
const ARGS = {args};  // after the event: --agent, --vault, --home

function hook(event, input) {{
  return execFileSync(COMMAND, [event, ...ARGS], {{
    input: JSON.stringify(input),
    encoding: "utf8",
    timeout: 15000,
  }});
}}

function sessionOf(event, ctx) {{
  return String(ctx.sessionId || event.sessionKey || "openclaw");
}}

/** @param {{any}} event */
const handler = async (event) => {{
  if (!event) return;
  const ctx = event.context || {{}};
  const what = `${{event.type}}:${{event.action}}`;
  if (what === "session:compact:before") {{
    try {{
      hook("pre-compact", {{
        session_id: sessionOf(event, ctx),
        hook_event_name: "PreCompact",
        trigger: "openclaw",
      }});
    }} catch (err) {{
      console.error("nexus: the checkpoint could not be saved: " + String(err).split("\\n")[0]);
    }}
    return;
  }}
  if (what === "command:new" || what === "command:reset" || what === "session:auto-reset") {{
    const ended = ctx.previousSessionEntry || ctx.sessionEntry || {{}};
    try {{
      hook("session-end", {{
        session_id: String(ended.sessionId || sessionOf(event, ctx)),
        hook_event_name: "SessionEnd",
        reason: what,
      }});
    }} catch (err) {{
      console.error("nexus: the session's end could not be recorded: " + String(err).split("\\n")[0]);
    }}
    return;
  }}
  if (what !== "agent:bootstrap") return;
  let text = "";
  try {{
    const out = hook("session-start", {{
      session_id: sessionOf(event, ctx),
      cwd: ctx.workspaceDir || process.cwd(),
      hook_event_name: "SessionStart",
      source: "startup",
    }});
    const parsed = out.trim() ? JSON.parse(out) : {{}};
    const specific = parsed.hookSpecificOutput || {{}};
    text = specific.additionalContext || parsed.systemMessage || "";
  }} catch (err) {{
    text = "nexus: the live context could not be loaded: " + String(err).split("\\n")[0];
  }}
  if (!text || !Array.isArray(ctx.bootstrapFiles)) return;
  ctx.bootstrapFiles.push({{
    name: "NEXUS.md",
    path: (ctx.workspaceDir || ".") + "/NEXUS.md",
    content: text,
    missing: false,
  }});
}};

export default handler;
"""


def changes(w: Wiring) -> list[Change]:
    base = w.home / ".openclaw"
    config = base / "openclaw.json"
    hook = base / "hooks" / HOOK_NAME
    args = ["--agent", w.agent, "--vault", str(w.vault), "--home", str(w.keys_home)]

    def edit(data: dict[str, Any]) -> None:
        table(table(data, "mcp"), "servers")["nexus"] = w.mcp_server()
        internal = table(table(data, "hooks"), "internal")
        internal["enabled"] = True
        table(table(internal, "entries"), HOOK_NAME)["enabled"] = True

    return [
        Change(
            config,
            "MCP server `nexus` (mcp.servers), hook nexus-brief enabled",
            json_merge(config, edit, json5=True),
        ),
        Change(hook / "HOOK.md", "the bootstrap hook's manifest", exact(HOOK_MD)),
        Change(
            hook / "handler.ts",
            "the hook: the brief on agent:bootstrap, the checkpoint before compaction, retention at the end",
            exact(HANDLER.format(command=json.dumps(w.hook), args=json.dumps(args))),
        ),
        Change(
            base / "workspace" / "AGENTS.md",
            "the nexus rules block",
            block_merge(rules.text(w.agent, injected=True)),
        ),
    ]


def _openclaw_json(exe: str, args: list[str], w: Wiring) -> Any:
    env = {**w.env, "HOME": str(w.home)}
    return subprocess.Popen(
        [exe, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=w.home
    )


def _parsed(proc: subprocess.Popen[str]) -> dict[str, Any]:
    try:
        out, _ = proc.communicate(timeout=120)
        data = json.loads(out)
    except (ValueError, subprocess.TimeoutExpired):
        proc.kill()
        return {}
    return data if isinstance(data, dict) else {}


def check(w: Wiring) -> list[tuple[str, str]]:
    """OpenClaw's own view, beyond the files: it is installed, it loads the nexus hook (``openclaw
    hooks list``), and its Gateway, the only place hooks run, answers (``openclaw gateway status``).
    Each problem: what is missing, and the one command that adds it."""
    exe = shutil.which("openclaw", path=w.env.get("PATH"))
    if exe is None:
        return [("OpenClaw is not on PATH", "npm install -g openclaw")]
    hooks = _openclaw_json(exe, ["hooks", "list", "--json"], w)
    status = _openclaw_json(exe, ["gateway", "status", "--json"], w)
    listed = [
        h for h in _parsed(hooks).get("hooks") or [] if isinstance(h, dict) and h.get("name") == HOOK_NAME
    ]
    problems = []
    if (
        not listed
        or not (listed[0].get("eligible") and listed[0].get("loadable"))
        or listed[0].get("disabled")
    ):
        why = "not listed" if not listed else json.dumps(listed[0].get("missing") or {}, sort_keys=True)
        problems.append(
            (
                f"OpenClaw does not load the {HOOK_NAME} hook ({why})",
                f"nexus setup openclaw --agent {w.agent}",
            )
        )
    elif set(EVENTS) - set(listed[0].get("events") or []):
        problems.append(
            (
                f"OpenClaw's {HOOK_NAME} hook misses events {sorted(set(EVENTS) - set(listed[0]['events']))}",
                f"nexus setup openclaw --agent {w.agent}",
            )
        )
    rpc = _parsed(status).get("rpc") or {}
    if not rpc.get("ok"):
        problems.append(
            (
                "the OpenClaw Gateway does not answer: hooks (the brief, the checkpoint, retention) run only "
                f"there ({rpc.get('error') or 'no answer'})",
                "openclaw gateway run",
            )
        )
    return problems
