"""opencode: the MCP server in ``opencode.json`` (``mcp.nexus``, a local server; its tools are
``nexus_<tool>``), the rules block in ``AGENTS.md``, and a plugin (``plugin/nexus.js``) for what hooks
give the other runtimes: opencode has no hook commands, but a plugin sees each session's prompts, its
system prompt, its compaction and its going idle. User scope: ``$XDG_CONFIG_HOME/opencode/`` (default
``~/.config/opencode/``); project scope: ``<project>/opencode.json``, ``<project>/.opencode/plugin/``
and ``<project>/AGENTS.md``.

The plugin runs ``nexus-hook`` as the other runtimes do: ``session-start`` on a session's first
prompt (the brief, kept in the system prompt of each of its model calls, since opencode rebuilds that
every call), ``prompt`` on each later one (what is new, added to the prompt), ``pre-compact`` before a
compaction and ``session-start`` (source ``compact``) after it, ``session-end`` when the session goes
idle (retaining is idempotent: each entry once).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from . import opencode_view, rules
from .configfiles import Edit, block_merge, exact, json_merge, read_text, table
from .wiring import Change, Finding, Wired, Wiring, wired_from_server

VERSION = "1.18.33"  # the version these files were checked against, end to end

PLUGIN = """\
// Written by `nexus setup opencode` (rewritten by each run): the nexus brief in the system prompt of
// each session, what is new since the last prompt added to each prompt, the checkpoint saved before a
// compaction, and the session's decisions retained when it goes idle. It runs `nexus-hook`.
import { spawn, spawnSync } from "node:child_process";

const HOOK = __HOOK__;
const briefs = new Map();
let latest = null;
let pending = Promise.resolve(); // a hook whose answer is not used, still running

function hook(event, data) {
  const [program, ...rest] = HOOK;
  const run = spawnSync(program, [event, ...rest], {
    input: JSON.stringify(data),
    encoding: "utf8",
    timeout: 30000,
  });
  try {
    const out = JSON.parse((run.stdout || "").trim() || "null");
    return (out && out.hookSpecificOutput && out.hookSpecificOutput.additionalContext) || "";
  } catch {
    return "";
  }
}

// a hook whose answer nobody reads, run beside the model's request (the next hook waits for it)
function hookBeside(event, data) {
  const [program, ...rest] = HOOK;
  pending = new Promise((done) => {
    const child = spawn(program, [event, ...rest], { stdio: ["pipe", "ignore", "ignore"] });
    const timer = setTimeout(() => child.kill(), 30000);
    child.on("error", done);
    child.on("close", () => {
      clearTimeout(timer);
      done();
    });
    child.stdin.end(JSON.stringify(data));
  });
}

export const NexusPlugin = async ({ directory }) => ({
  "chat.message": async (input, output) => {
    await pending;
    const sid = input.sessionID;
    latest = sid;
    const part = (output.parts || []).find((p) => p.type === "text");
    if (!briefs.has(sid)) {
      briefs.set(sid, hook("session-start", { session_id: sid, cwd: directory, source: "startup" }));
      // the first prompt's turn recorded (the brief just made holds everything new)
      hookBeside("prompt", { session_id: sid, cwd: directory, prompt: part ? part.text : "" });
      return;
    }
    const text = hook("prompt", { session_id: sid, cwd: directory, prompt: part ? part.text : "" });
    if (text && part) part.text += "\\n\\n" + text;
  },
  "experimental.chat.system.transform": async (input, output) => {
    const text = briefs.get((input && input.sessionID) || latest);
    if (text) output.system.push(text);
  },
  "experimental.session.compacting": async (input) => {
    await pending;
    hook("pre-compact", { session_id: input.sessionID, cwd: directory, trigger: "auto" });
  },
  event: async ({ event }) => {
    const sid = event.properties && event.properties.sessionID;
    if (!sid) return;
    if (event.type === "session.compacted") {
      await pending;
      briefs.set(sid, hook("session-start", { session_id: sid, cwd: directory, source: "compact" }));
    } else if (event.type === "session.idle") {
      await pending;
      hook("session-end", { session_id: sid, cwd: directory });
    }
  },
});
"""


def config_dir(w: Wiring) -> Path:
    base = Path(w.env["XDG_CONFIG_HOME"]) if w.env.get("XDG_CONFIG_HOME") else w.home / ".config"
    return base / "opencode"


def plugin_text(w: Wiring) -> str:
    argv = [w.hook, "--agent", w.agent, "--vault", str(w.vault), "--home", str(w.keys_home)]
    return PLUGIN.replace("__HOOK__", json.dumps(argv))


def _add_mcp(w: Wiring) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        server = w.mcp_server()
        args = server["args"]
        assert isinstance(args, list)
        table(data, "mcp")["nexus"] = {
            "type": "local",
            "command": [server["command"], *args],
            "environment": server["env"],
            "enabled": True,
        }

    return edit


def changes(w: Wiring) -> list[Change]:
    home = config_dir(w)
    if w.scope == "user":
        config, plugin, memo = home / "opencode.json", home / "plugin" / "nexus.js", home / "AGENTS.md"
    else:
        config = w.project / "opencode.json"
        plugin, memo = w.project / ".opencode" / "plugin" / "nexus.js", w.project / "AGENTS.md"
    return [
        Change(config, "MCP server `nexus`", json_merge(config, _add_mcp(w))),
        Change(plugin, "the nexus plugin: brief, what is new, checkpoint, retain", exact(plugin_text(w))),
        Change(memo, "the nexus rules block", block_merge(rules.text(w.agent, injected=True))),
    ]


def wired(scope: str, project: Path, home: Path, env: dict[str, str]) -> Wired | None:
    """The agent an existing wiring acts as: the `nexus` server of this scope's opencode.json."""
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    config = base / "opencode" / "opencode.json" if scope == "user" else project / "opencode.json"
    try:
        data = json.loads(read_text(config) or "{}")
    except ValueError:
        return None
    server = (data.get("mcp") or {}).get("nexus") if isinstance(data, dict) else None
    if not isinstance(server, dict) or not isinstance(server.get("command"), list) or not server["command"]:
        return None
    entry = {"args": server["command"][1:], "env": server.get("environment") or {}}
    return wired_from_server(entry, config)


def check(w: Wiring) -> list[Finding]:
    """opencode's own view (``opencode_view``)."""
    plugin = (
        config_dir(w) / "plugin" / "nexus.js"
        if w.scope == "user"
        else w.project / ".opencode/plugin/nexus.js"
    )
    return opencode_view.check(w, shutil.which(opencode_view.PROGRAM, path=w.env.get("PATH")), plugin)
