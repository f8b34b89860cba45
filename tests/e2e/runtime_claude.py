"""Claude Code 2.1.332 for the end-to-end tests: where the pinned program is, the environment that
points it at the scripted model, ``nexus setup`` as a person runs it, and ``claude -p`` driven as one
session of stream-json prompts."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from conftest import Env

from .conftest import nexus, runtime_binary, runtime_env
from .model_anthropic import AnthropicModel

VERSION = "2.1.332"


def claude() -> Path:
    """The pinned Claude Code, installed by ``scripts/runtimes/install-all``; missing, it fails."""
    return runtime_binary("claude-code", VERSION, "node_modules/.bin/claude")


def setup(env: Env, home: Path, project: Path, *args: str) -> str:
    """``nexus setup claude-code --agent ella`` (the test's keys folder) for the person whose home is
    ``home``, in ``project``, as they would run it; it must succeed: what it said."""
    proc = nexus(
        runtime_env(home),
        "--vault",
        str(env.vault.root),
        "setup",
        "claude-code",
        "--agent",
        "ella",
        "--keys-home",
        str(env.keys_home),
        *args,
        cwd=project,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def model_env(home: Path, model: AnthropicModel) -> dict[str, str]:
    """A person's environment (``conftest.runtime_env``) with the scripted model as the API."""
    return runtime_env(
        home,
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY="sk-ant-test",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
    )


class Session:
    """`claude -p` reading stream-json prompts: one session, a prompt at a time."""

    def __init__(self, cwd: Path, env: dict[str, str], debug: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [
                str(claude()),
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
                *extra,
                "--debug-file",
                str(debug),
            ],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.results: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []

    def prompt(self, text: str, timeout: float = 120) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        message = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"claude exited: {self.proc.stderr.read() if self.proc.stderr else ''}")
            data: dict[str, Any] = json.loads(line)
            self.messages.append(data)
            if data.get("type") == "result":
                self.results.append(data)
                return data
        raise AssertionError(f"no result for {text!r} within {timeout} s")

    def close(self, timeout: float = 120) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.proc.stdout.close()
            self.proc.stderr.close()
