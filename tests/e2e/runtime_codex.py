"""Codex 0.171.0 for the end-to-end tests: where the pinned program is, an isolated home, the scripted
model as its provider, and two ways to drive it — ``codex exec`` (one prompt, as a user runs it) and
``codex app-server`` (a whole session over JSON-RPC: turns, compaction, resume, as its TUI and IDE
clients drive it)."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .conftest import inherited_env, runtime_binary
from .jsonrpc import Peer
from .model_openai import OpenAIModel

VERSION = "0.171.0"


def codex_bin() -> Path:
    """The pinned Codex, installed by ``scripts/runtimes/codex.sh``; a missing one fails (never skips)."""
    return runtime_binary("codex", VERSION, "node_modules/.bin/codex")


def provider_args(model: OpenAIModel, slug: str = "gpt-scripted") -> list[str]:
    """``-c`` overrides that make the scripted model Codex's provider (nothing written to its config);
    ``slug``: the model Codex thinks it talks to (one it knows decides which tools it offers)."""
    provider = (
        f'model_providers.scripted={{name="scripted", base_url="{model.base_url}", '
        'wire_api="responses", env_key="SCRIPTED_API_KEY"}'
    )
    return ["-c", "model_provider=scripted", "-c", provider, "-m", slug]


def environ(home: Path) -> dict[str, str]:
    """An isolated environment: its own HOME (so ``~/.codex``), the nexus commands on PATH, no vault or
    key folder inherited (setup wrote them explicitly)."""
    return inherited_env(
        home,
        "CODEX_",
        "OPENAI_",
        path=(codex_bin().parent,),
        SCRIPTED_API_KEY="dummy",
        NO_COLOR="1",
        RUST_LOG="error",
    )


@dataclass
class Exec:
    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    seconds: float

    def messages(self) -> list[str]:
        return [
            e["item"].get("text", "")
            for e in self.events
            if e.get("type") == "item.completed" and e["item"].get("type") == "agent_message"
        ]

    def errors(self) -> list[str]:
        return [
            e["item"].get("message", "")
            for e in self.events
            if e.get("type") == "item.completed" and e["item"].get("type") == "error"
        ]

    def tool_calls(self) -> list[dict[str, Any]]:
        return [
            e["item"]
            for e in self.events
            if e.get("type") == "item.completed" and e["item"].get("type") == "mcp_tool_call"
        ]


def run_exec(
    model: OpenAIModel,
    cwd: Path,
    env: dict[str, str],
    prompt: str,
    *extra: str,
    timeout: float = 120,
    slug: str = "gpt-scripted",
) -> Exec:
    """``codex exec --json PROMPT`` in ``cwd``."""
    args = [
        str(codex_bin()),
        "exec",
        "--json",
        "--skip-git-repo-check",
        *provider_args(model, slug),
        *extra,
        prompt,
    ]
    start = time.monotonic()
    proc = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return Exec(proc.returncode, events, proc.stderr, time.monotonic() - start)


class AppServer(Peer):
    """``codex app-server`` over stdio (JSON lines): its approval requests declined."""

    def __init__(self, cwd: Path, env: dict[str, str], model: OpenAIModel) -> None:
        super().__init__([str(codex_bin()), "app-server", *provider_args(model)[:4]], cwd, env)

    def open(self) -> None:
        self.request("initialize", {"clientInfo": {"name": "nexus-e2e", "version": "1"}})
        self.send({"method": "initialized"})

    def answer(self, msg: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "decline"}

    def turn(self, thread: str, text: str) -> list[dict[str, Any]]:
        """One prompt, to the end of its turn; the notifications it caused."""
        since = len(self.notifications)
        self.request("turn/start", {"threadId": thread, "input": [{"type": "text", "text": text}]})
        self.wait_for("turn/completed", since)
        return self.notifications[since:]
