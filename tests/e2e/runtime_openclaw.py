"""OpenClaw 2026.9.6 as installed by ``scripts/runtimes/openclaw.sh`` (with the Node 24 it needs), run as a
user runs it: one Gateway (``openclaw gateway run``: internal hooks load only there), then ``openclaw
agent --agent main --message … --json`` turn by turn on the main session, in an isolated HOME and
TMPDIR, with the scripted model as its provider. OpenClaw also writes ``/tmp/openclaw*`` whatever
TMPDIR says: what a run adds there is removed afterwards, and what was there before is left alone."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json5
import pytest

from .conftest import SUITE

VERSION = "2026.9.6"
RUNTIMES = Path(os.environ.get("NEXUS_RUNTIMES") or Path.home() / ".cache" / "nexus-runtimes")
OPENCLAW = RUNTIMES / f"openclaw-{VERSION}" / "bin" / "openclaw"
SESSION = "agent:main:main"
READY_WAIT = 180.0  # seconds; the Gateway is ready in 16-30 s on this machine


def openclaw_command() -> Path:
    """The pinned ``openclaw``; a missing one fails the test with one line (never a skip)."""
    if not OPENCLAW.is_file():
        pytest.fail(f"OpenClaw {VERSION} is missing from {RUNTIMES}: run scripts/runtimes/openclaw.sh")
    return OPENCLAW


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def shared_tmp() -> set[Path]:
    """What OpenClaw keeps under /tmp regardless of TMPDIR."""
    out: set[Path] = set()
    for top in Path("/tmp").glob("openclaw*"):
        out.add(top)
        if top.is_dir():
            out.update(top.rglob("*"))
    return out


def remove_new(before: set[Path]) -> None:
    """Remove what appeared under /tmp/openclaw* since ``before`` (files first, then empty folders)."""
    added = sorted(shared_tmp() - before, key=lambda p: len(p.parts), reverse=True)
    for p in added:
        try:
            if p.is_dir() and not p.is_symlink():
                p.rmdir()
            else:
                p.unlink()
        except OSError:
            pass


@dataclass
class Agent:
    answer: str
    session_id: str
    seconds: float
    raw: dict[str, Any]


@dataclass
class OpenClaw:
    root: Path
    token: str = "nexus-e2e-token"
    port: int = field(default_factory=_free_port)
    gateway: subprocess.Popen[bytes] | None = None

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def config(self) -> Path:
        return self.home / ".openclaw" / "openclaw.json"

    def env(self) -> dict[str, str]:
        keep = ("LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "SHELL", "PATH", *SUITE)
        env = {k: v for k, v in os.environ.items() if k in keep}
        env.update(HOME=str(self.home), TMPDIR=str(self.root / "tmp"), NO_COLOR="1")
        return env

    def configure(self, model_url: str) -> None:
        """The Gateway and the scripted model as provider, merged into what ``nexus setup`` wrote."""
        for d in (self.home / ".openclaw", self.root / "tmp"):
            d.mkdir(parents=True, exist_ok=True)
        data: dict[str, Any] = json5.loads(self.config.read_text()) if self.config.is_file() else {}
        data["gateway"] = {
            "mode": "local",
            "port": self.port,
            "bind": "loopback",
            "auth": {"mode": "token", "token": self.token},
        }
        data["models"] = {
            "providers": {
                "scripted": {
                    "baseUrl": model_url,
                    "apiKey": "dummy",
                    "api": "openai-completions",
                    "models": [
                        {
                            "id": "scripted-model",
                            "name": "Scripted",
                            "contextWindow": 200000,
                            "maxTokens": 4096,
                        }
                    ],
                }
            }
        }
        data["agents"] = {"defaults": {"model": {"primary": "scripted/scripted-model"}}}
        self.config.write_text(json.dumps(data, indent=2))

    def start(self) -> float:
        """Start the Gateway and wait until it says it is ready; the seconds it took."""
        started = time.monotonic()
        with open(self.root / "gateway.log", "wb") as log:  # the child keeps its own copy
            self.gateway = subprocess.Popen(
                [str(openclaw_command()), "gateway", "run"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env(),
                cwd=self.root,
                start_new_session=True,
            )
        while time.monotonic() - started < READY_WAIT:
            if self.gateway.poll() is not None:
                raise AssertionError(
                    f"the OpenClaw Gateway exited {self.gateway.returncode}:\n{self.log()[-3000:]}"
                )
            if "[gateway] ready" in self.log().replace("\x1b[39m", "").replace("\x1b[36m", ""):
                return time.monotonic() - started
            time.sleep(0.5)
        raise AssertionError(
            f"the OpenClaw Gateway was not ready in {READY_WAIT:.0f} s:\n{self.log()[-3000:]}"
        )

    def stop(self) -> None:
        if self.gateway is None or self.gateway.poll() is not None:
            return
        os.killpg(self.gateway.pid, signal.SIGTERM)
        try:
            self.gateway.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.gateway.pid, signal.SIGKILL)
            self.gateway.wait(timeout=10)

    def log(self) -> str:
        path = self.root / "gateway.log"
        return path.read_text(errors="replace") if path.is_file() else ""

    def cli(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(openclaw_command()), *args],
            capture_output=True,
            text=True,
            env=self.env(),
            cwd=self.root,
            timeout=timeout,
        )

    def agent(self, message: str) -> Agent:
        started = time.monotonic()
        proc = self.cli("agent", "--agent", "main", "--message", message, "--json")
        seconds = time.monotonic() - started
        assert proc.returncode == 0, f"openclaw agent exited {proc.returncode}:\n{proc.stderr[-3000:]}"
        raw = json.loads(proc.stdout)
        result = raw.get("result") or {}
        text = "\n".join(str(p.get("text") or "") for p in result.get("payloads") or [])
        return Agent(
            text, str(((result.get("meta") or {}).get("agentMeta") or {}).get("sessionId")), seconds, raw
        )

    def gateway_call(self, method: str, params: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return self.cli("gateway", "call", method, "--params", json.dumps(params), "--json")
