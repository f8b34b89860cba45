"""Hermes Agent 0.19.0 as installed by ``scripts/runtimes/hermes.sh``, run as a user runs it: ``hermes
chat -Q -q PROMPT`` (one turn; ``--resume ID`` continues the session), in an isolated HOME,
HERMES_HOME and TMPDIR, pointed at a scripted model on 127.0.0.1, with nexus's commands on PATH as an
installed nexus has them."""

from __future__ import annotations

import os
import re
import subprocess
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

VERSION = "0.19.0"
RUNTIMES = Path(os.environ.get("NEXUS_RUNTIMES") or Path.home() / ".cache" / "nexus-runtimes")
HERMES = RUNTIMES / f"hermes-{VERSION}" / "bin" / "hermes"


def hermes_command() -> Path:
    """The pinned ``hermes``; a missing one fails the test with one line (never a skip)."""
    if not HERMES.is_file():
        pytest.fail(f"Hermes Agent {VERSION} is missing from {RUNTIMES}: run scripts/runtimes/hermes.sh")
    return HERMES


@dataclass
class Turn:
    answer: str
    session_id: str
    stderr: str
    seconds: float


@dataclass
class Hermes:
    """One user's Hermes: its folders and environment."""

    root: Path  # holds home/, hermes-home/, tmp/ and the project folder work/

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def hermes_home(self) -> Path:
        return self.root / "hermes-home"

    @property
    def project(self) -> Path:
        return self.root / "work"

    def env(self, *, nexus_on_path: bool = True) -> dict[str, str]:
        keep = ("LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "SHELL")
        env = {k: v for k, v in os.environ.items() if k in keep}
        path = os.environ.get("PATH", "/usr/bin:/bin")
        if nexus_on_path:
            path = sysconfig.get_path("scripts") + os.pathsep + path
        env.update(
            HOME=str(self.home),
            HERMES_HOME=str(self.hermes_home),
            TMPDIR=str(self.root / "tmp"),
            PATH=path,
            NO_COLOR="1",
        )
        return env

    def configure(self, model_url: str) -> None:
        """The scripted model as Hermes' provider, plus what keeps a test run quiet and small; merged
        into whatever ``nexus setup hermes`` wrote."""
        for d in (self.home, self.hermes_home, self.root / "tmp", self.project):
            d.mkdir(parents=True, exist_ok=True)
        path = self.hermes_home / "config.yaml"
        data = (yaml.safe_load(path.read_text()) if path.is_file() else None) or {}
        data["model"] = {"provider": "custom", "base_url": model_url, "default": "scripted-model"}
        data["security"] = {"tirith_enabled": False}
        data["compression"] = {"enabled": True, "protect_first_n": 0, "protect_last_n": 1}
        path.write_text(yaml.safe_dump(data, sort_keys=False))

    def chat(self, prompt: str, *, resume: str | None = None, nexus_on_path: bool = True) -> Turn:
        command = [str(hermes_command()), "chat", "-Q", "-q", prompt]
        if resume:
            command += ["--resume", resume]
        started = time.monotonic()
        proc = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=self.env(nexus_on_path=nexus_on_path),
            cwd=self.project,
            timeout=180,
        )
        seconds = time.monotonic() - started
        assert proc.returncode == 0, f"hermes exited {proc.returncode}:\n{proc.stderr[-3000:]}"
        found = re.search(r"session_id: (\S+)", proc.stderr + proc.stdout)
        assert found, f"hermes printed no session id:\n{proc.stderr[-2000:]}"
        return Turn(proc.stdout.strip(), found.group(1), proc.stderr, seconds)

    def log(self) -> str:
        """Hermes' own log of this user's runs (what a person reads when something is off)."""
        files = sorted((self.hermes_home / "logs").glob("*.log"))
        return "\n".join(f.read_text(errors="replace") for f in files)
