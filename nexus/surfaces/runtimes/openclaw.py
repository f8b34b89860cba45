"""OpenClaw: the MCP server under ``mcp.servers`` in ``~/.openclaw/openclaw.json`` (JSON5; written back
as JSON, which JSON5 reads), a bootstrap hook ``~/.openclaw/hooks/nexus-brief/`` (``HOOK.md`` +
``handler.ts``) that injects the brief as a ``NEXUS.md`` bootstrap file on ``agent:bootstrap``, enabled
under ``hooks.internal``, and the rules block in the workspace's ``AGENTS.md``. OpenClaw keeps one
configuration per user: there is no project scope.
"""

from __future__ import annotations

import json
from typing import Any

from . import rules
from .configfiles import block_merge, exact, json_merge, table
from .wiring import Change, Wiring

SCOPES = ("user",)  # OpenClaw keeps one configuration per user (~/.openclaw)

HOOK_NAME = "nexus-brief"

HOOK_MD = """---
name: nexus-brief
description: "Inject the nexus brief (what the others wrote, what you owe, decisions, memory) at bootstrap"
metadata: {"openclaw": {"emoji": "🔗", "events": ["agent:bootstrap"]}}
---

# nexus-brief

On `agent:bootstrap`, runs `nexus-hook session-start` for the configured nexus agent and adds its
output to the bootstrap files as `NEXUS.md`. Written by `nexus setup openclaw`; a re-run rewrites it.
"""

# Plain JavaScript is valid TypeScript: the handler runs as OpenClaw loads it and under plain Node.
HANDLER = """// nexus-brief: written by `nexus setup openclaw` (a re-run rewrites it).
import {{ execFileSync }} from "node:child_process";

const COMMAND = {command};
const ARGS = {args};

/** @param {{any}} event */
const handler = async (event) => {{
  if (!event || event.type !== "agent" || event.action !== "bootstrap") return;
  const ctx = event.context || {{}};
  let text = "";
  try {{
    const stdin = JSON.stringify({{
      session_id: String(ctx.sessionId || event.sessionKey || "openclaw"),
      cwd: ctx.workspaceDir || process.cwd(),
      hook_event_name: "SessionStart",
      source: "startup",
    }});
    const out = execFileSync(COMMAND, ARGS, {{ input: stdin, encoding: "utf8", timeout: 15000 }});
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
    args = ["session-start", "--agent", w.agent, "--vault", str(w.vault), "--home", str(w.keys_home)]

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
            "the bootstrap hook (injects the brief on agent:bootstrap)",
            exact(HANDLER.format(command=json.dumps(w.hook), args=json.dumps(args))),
        ),
        Change(
            base / "workspace" / "AGENTS.md",
            "the nexus rules block",
            block_merge(rules.text(w.agent, injected=True)),
        ),
    ]
