"""opencode 1.18.33 for the end-to-end tests: where the pinned program is, an isolated home whose
global config makes the scripted model (OpenAI-compatible chat completions) its provider, and
``opencode serve`` driven over its HTTP API (sessions, prompts, compaction), as its TUI drives it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .model_openai import Reply, ScriptedModel, Text

VERSION = "1.18.33"
PROVIDER, MODEL = "scripted", "m1"


def opencode_bin() -> Path:
    """The pinned opencode, installed by ``scripts/runtimes/opencode.sh``; missing, it fails."""
    root = Path(os.environ.get("NEXUS_RUNTIMES") or Path.home() / ".cache" / "nexus-runtimes")
    path = root / f"opencode-{VERSION}" / "node_modules" / ".bin" / "opencode"
    if not path.exists():
        raise AssertionError(f"opencode {VERSION} is not installed: run scripts/runtimes/opencode.sh")
    return path


def side_requests(body: dict[str, Any]) -> Reply | None:
    """opencode's requests without tools (a session title, a compaction's summary) are answered apart,
    so the script is spent on the turns only."""
    return None if body.get("tools") else Text("Kestrel parser work")


def prepare_home(home: Path, model: ScriptedModel) -> None:
    folder = home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Scripted",
        "options": {"baseURL": model.base_url, "apiKey": "dummy"},
        "models": {MODEL: {"name": MODEL}},
    }
    path = folder / "opencode.json"
    config = json.loads(path.read_text()) if path.exists() else {}  # user scope: nexus's server is there
    config.update(provider={PROVIDER: provider}, model=f"{PROVIDER}/{MODEL}")
    path.write_text(json.dumps(config))


def environ(home: Path, project: Path, bin_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXUS_", "OPENCODE_", "XDG_", "PYTEST"))}
    env.update(
        HOME=str(home),
        PWD=str(project),  # opencode takes the project from $PWD
        PATH=f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_SHARE="1",
    )
    return env


@dataclass
class Server:
    """``opencode serve`` on a free loopback port, ended with its process group."""

    project: Path
    env: dict[str, str]
    _proc: subprocess.Popen[str] | None = None
    base: str = ""

    def __enter__(self) -> Server:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self._proc = subprocess.Popen(
            [str(opencode_bin()), "serve", "--port", str(port), "--hostname", "127.0.0.1"],
            cwd=self.project,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        assert self._proc.stdout is not None
        deadline = time.monotonic() + 120
        for line in self._proc.stdout:
            if "listening" in line:
                break
            if time.monotonic() > deadline:
                raise AssertionError("opencode serve did not start")
        self.base = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None
        try:
            os.killpg(self._proc.pid, signal.SIGTERM)
            self._proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
        if self._proc.stdout:
            self._proc.stdout.close()

    def post(self, path: str, body: dict[str, Any], timeout: float = 180) -> Any:
        data = json.dumps(body).encode()
        req = urllib.request.Request(
            self.base + path, data=data, headers={"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(req, timeout=timeout) as reply:
            raw = reply.read()
        return json.loads(raw) if raw else None

    def session(self) -> str:
        return str(self.post("/session", {})["id"])

    def prompt(self, session: str, text: str) -> Any:
        return self.post(f"/session/{session}/message", {"parts": [{"type": "text", "text": text}]})

    def compact(self, session: str) -> Any:
        return self.post(f"/session/{session}/summarize", {"providerID": PROVIDER, "modelID": MODEL})
