"""Gemini CLI 0.61.0 for the end-to-end tests: where the pinned program is, an isolated home whose
settings choose the API key as the way in, the scripted model as its endpoint, and two ways to drive it
— headless (`gemini -p`, one prompt, as a user runs it) and ACP (`gemini --acp`, the Agent Client
Protocol over stdio that editors use: one session, several prompts)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .model_gemini import GeminiModel

VERSION = "0.61.0"
MODEL = "gemini-2.5-pro"  # named: with the default (auto) model Gemini CLI first asks a router model


def gemini_bin() -> Path:
    """The pinned Gemini CLI, installed by ``scripts/runtimes/gemini-cli.sh``; missing, it fails."""
    root = Path(os.environ.get("NEXUS_RUNTIMES") or Path.home() / ".cache" / "nexus-runtimes")
    path = root / f"gemini-cli-{VERSION}" / "node_modules" / ".bin" / "gemini"
    if not path.exists():
        raise AssertionError(f"Gemini CLI {VERSION} is not installed: run scripts/runtimes/gemini-cli.sh")
    return path


def prepare_home(home: Path) -> None:
    """What a user who signed in with an API key has: ``security.auth.selectedType``."""
    folder = home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (folder / "settings.json").write_text(json.dumps(settings))


def environ(home: Path, bin_dir: Path, model: GeminiModel) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("NEXUS_", "GEMINI_", "GOOGLE_", "PYTEST"))
    }
    env.update(
        HOME=str(home),
        GEMINI_API_KEY="dummy",
        GOOGLE_GEMINI_BASE_URL=model.base_url,
        PATH=f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        NO_COLOR="1",
    )
    return env


@dataclass
class Headless:
    returncode: int
    output: dict[str, Any]
    stderr: str
    seconds: float


def run_headless(cwd: Path, env: dict[str, str], prompt: str, *extra: str, timeout: float = 180) -> Headless:
    args = [str(gemini_bin()), "-p", prompt, "-m", MODEL, "-o", "json", *extra]
    start = time.monotonic()
    proc = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    try:
        output = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except ValueError:
        output = {"raw": proc.stdout}
    return Headless(proc.returncode, output, proc.stderr, time.monotonic() - start)


@dataclass
class Acp:
    """``gemini --acp``: JSON-RPC lines over stdio; requests from the agent (permissions) are allowed."""

    cwd: Path
    env: dict[str, str]
    notes: list[dict[str, Any]] = field(default_factory=list)
    _proc: subprocess.Popen[str] | None = None
    _replies: dict[int, queue.Queue[dict[str, Any]]] = field(default_factory=dict)
    _next: int = 0
    _reader: threading.Thread | None = None

    def __enter__(self) -> Acp:
        self._proc = subprocess.Popen(
            [str(gemini_bin()), "--acp", "-m", MODEL],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,  # the launcher re-spawns itself: the whole group is ended
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGTERM)
        try:
            self._proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
        if self._proc.stdin:
            self._proc.stdin.close()
        if self._reader is not None:
            self._reader.join(timeout=10)
        if self._proc.stdout:
            self._proc.stdout.close()

    def _send(self, msg: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
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
            elif "id" in msg:  # the agent asks permission: allow once
                options = (msg.get("params") or {}).get("options") or [{}]
                choice = {"outcome": "selected", "optionId": options[0].get("optionId", "allow")}
                self._send({"id": msg["id"], "result": {"outcome": choice}})
            else:
                self.notes.append(msg)

    def request(self, method: str, params: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
        rid = self._next
        self._next += 1
        box = self._replies.setdefault(rid, queue.Queue())
        self._send({"id": rid, "method": method, "params": params})
        reply = box.get(timeout=timeout)
        if "error" in reply:
            raise AssertionError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    def prompt(self, session: str, text: str) -> dict[str, Any]:
        return self.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        )
