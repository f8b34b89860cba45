"""Codex 0.171.0 for the end-to-end tests: where the pinned program is, an isolated home, the scripted
model as its provider, and two ways to drive it — ``codex exec`` (one prompt, as a user runs it) and
``codex app-server`` (a whole session over JSON-RPC: turns, compaction, resume, as its TUI and IDE
clients drive it)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .model_openai import ScriptedModel

VERSION = "0.171.0"
ROOT = Path(__file__).resolve().parents[2]


def runtimes_home() -> Path:
    return Path(os.environ.get("NEXUS_RUNTIMES") or Path.home() / ".cache" / "nexus-runtimes")


def codex_bin() -> Path:
    """The pinned Codex, installed by ``scripts/runtimes/codex.sh``; a missing one fails (never skips)."""
    path = runtimes_home() / f"codex-{VERSION}" / "node_modules" / ".bin" / "codex"
    if not path.exists():
        raise AssertionError(
            f"Codex {VERSION} is not installed: run scripts/runtimes/codex.sh ({path} missing)"
        )
    return path


def provider_args(model: ScriptedModel, slug: str = "gpt-scripted") -> list[str]:
    """``-c`` overrides that make the scripted model Codex's provider (nothing written to its config);
    ``slug``: the model Codex thinks it talks to (one it knows decides which tools it offers)."""
    provider = (
        f'model_providers.scripted={{name="scripted", base_url="{model.base_url}", '
        'wire_api="responses", env_key="SCRIPTED_API_KEY"}'
    )
    return ["-c", "model_provider=scripted", "-c", provider, "-m", slug]


def environ(home: Path, bin_dir: Path) -> dict[str, str]:
    """An isolated environment: its own HOME (so ``~/.codex``), the nexus commands on PATH, no vault or
    key folder inherited (setup wrote them explicitly)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXUS_", "CODEX_", "OPENAI_", "PYTEST"))}
    env.update(
        HOME=str(home),
        SCRIPTED_API_KEY="dummy",
        PATH=f"{bin_dir}:{codex_bin().parent}:/usr/local/bin:/usr/bin:/bin",
        NO_COLOR="1",
        RUST_LOG="error",
    )
    return env


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
    model: ScriptedModel,
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


@dataclass
class AppServer:
    """``codex app-server`` over stdio (JSON lines): requests answered in order, notifications kept."""

    cwd: Path
    env: dict[str, str]
    model: ScriptedModel
    notifications: list[dict[str, Any]] = field(default_factory=list)
    _proc: subprocess.Popen[str] | None = None
    _replies: dict[int, queue.Queue[dict[str, Any]]] = field(default_factory=dict)
    _next: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _changed: threading.Condition = field(default_factory=threading.Condition)
    _reader: threading.Thread | None = None

    def __enter__(self) -> AppServer:
        self._proc = subprocess.Popen(
            [str(codex_bin()), "app-server", *provider_args(self.model)[:4]],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.request("initialize", {"clientInfo": {"name": "nexus-e2e", "version": "1"}})
        self._send({"method": "initialized"})
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None
        if self._proc.stdin:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=10)
        if self._proc.stdout:
            self._proc.stdout.close()

    def _send(self, msg: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(msg) + "\n")
        self._proc.stdin.flush()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "id" in msg and "method" not in msg:
                self._replies.setdefault(int(msg["id"]), queue.Queue()).put(msg)
            elif "id" in msg:  # a request from the server (an approval): decline it
                self._send({"id": msg["id"], "result": {"decision": "decline"}})
            with self._changed:
                if "method" in msg and "id" not in msg:
                    self.notifications.append(msg)
                self._changed.notify_all()

    def request(self, method: str, params: dict[str, Any], timeout: float = 90) -> dict[str, Any]:
        with self._lock:
            rid = self._next
            self._next += 1
            box = self._replies.setdefault(rid, queue.Queue())
        self._send({"id": rid, "method": method, "params": params})
        reply = box.get(timeout=timeout)
        if "error" in reply:
            raise AssertionError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    def wait_for(self, method: str, since: int, timeout: float = 90) -> dict[str, Any]:
        """The first notification ``method`` at or after index ``since``."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for note in self.notifications[since:]:
                    if note.get("method") == method:
                        return note
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = sorted({n.get("method", "") for n in self.notifications[since:]})
                    raise AssertionError(f"no {method} within {timeout}s (saw {seen})")
                self._changed.wait(left)

    def turn(self, thread: str, text: str) -> list[dict[str, Any]]:
        """One prompt, to the end of its turn; the notifications it caused."""
        since = len(self.notifications)
        self.request("turn/start", {"threadId": thread, "input": [{"type": "text", "text": text}]})
        self.wait_for("turn/completed", since)
        return self.notifications[since:]
