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

from .conftest import inherited_env, runtime_binary
from .model_openai import OpenAIModel, Text

VERSION = "1.18.33"
PROVIDER, MODEL = "scripted", "m1"


def opencode_bin() -> Path:
    """The pinned opencode, installed by ``scripts/runtimes/opencode.sh``; missing, it fails."""
    return runtime_binary("opencode", VERSION, "node_modules/.bin/opencode")


class OpencodeModel(OpenAIModel):
    """opencode's requests without tools (a session title, a compaction's summary) are answered apart,
    so the script is spent on the turns only."""

    aside = Text("Kestrel parser work")

    def scripted(self, path: str, body: Any) -> bool:
        return super().scripted(path, body) and isinstance(body, dict) and bool(body.get("tools"))


def prepare_home(home: Path, model: OpenAIModel) -> None:
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


def environ(home: Path, project: Path) -> dict[str, str]:
    return inherited_env(
        home,
        "OPENCODE_",
        "XDG_",
        PWD=str(project),  # opencode takes the project from $PWD
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_SHARE="1",
    )


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
