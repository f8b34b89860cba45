"""Gemini CLI 0.61.0 for the end-to-end tests: where the pinned program is, an isolated home whose
settings choose the API key as the way in, the scripted model as its endpoint, and two ways to drive it
— headless (`gemini -p`, one prompt, as a user runs it) and ACP (`gemini --acp`, the Agent Client
Protocol over stdio that editors use: one session, several prompts)."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .conftest import inherited_env, runtime_binary
from .jsonrpc import Peer
from .model_gemini import GeminiModel

VERSION = "0.61.0"
MODEL = "gemini-2.5-pro"  # named: with the default (auto) model Gemini CLI first asks a router model


def gemini_bin() -> Path:
    """The pinned Gemini CLI, installed by ``scripts/runtimes/gemini-cli.sh``; missing, it fails."""
    return runtime_binary("gemini-cli", VERSION, "node_modules/.bin/gemini")


def prepare_home(home: Path) -> None:
    """What a user who signed in with an API key has: ``security.auth.selectedType``."""
    folder = home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (folder / "settings.json").write_text(json.dumps(settings))


def environ(home: Path, model: GeminiModel) -> dict[str, str]:
    return inherited_env(
        home, "GEMINI_", "GOOGLE_", GEMINI_API_KEY="dummy", GOOGLE_GEMINI_BASE_URL=model.url, NO_COLOR="1"
    )


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


class Acp(Peer):
    """``gemini --acp``: JSON-RPC 2.0 lines over stdio; the agent's permission requests are allowed."""

    version = "2.0"
    group = True  # the launcher re-spawns itself: the whole group is ended

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        super().__init__([str(gemini_bin()), "--acp", "-m", MODEL], cwd, env)

    def open(self) -> None:
        self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})

    def answer(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Allow once (the first option offered)."""
        options = (msg.get("params") or {}).get("options") or [{}]
        return {"outcome": {"outcome": "selected", "optionId": options[0].get("optionId", "allow")}}

    def prompt(self, session: str, text: str) -> dict[str, Any]:
        return self.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        )
