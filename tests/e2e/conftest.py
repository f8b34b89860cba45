"""The end-to-end harness: real agent runtimes (installed pinned by ``scripts/runtimes/install-all``)
driven by a scripted model on 127.0.0.1 (``scripted.py``; one module per provider API, e.g.
``model_anthropic.py``), wired by the real ``nexus setup``.

A module per runtime (``test_claude_code.py``…) marks its tests ``@pytest.mark.e2e`` and finds its
binary with :func:`runtime_binary`: a runtime that is not installed FAILS the test with one line
(never a skip). :func:`runtime_env` is the environment a person's shell would give the runtime:
their own home folder (a fresh one per test), no ``NEXUS_*`` (the wiring must carry the vault and
the keys), ``PATH`` with this installation's ``nexus`` first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Read once, before any test moves HOME: where scripts/runtimes/*.sh install.
RUNTIMES = Path(os.environ.get("NEXUS_RUNTIMES") or Path.home() / ".cache" / "nexus-runtimes")
BIN = Path(sys.executable).parent  # this installation's `nexus`, `nexus-hook`


def runtime_binary(name: str, version: str, relative: str) -> Path:
    """The installed runtime's executable, or the test fails with one line saying how to install it."""
    path = RUNTIMES / f"{name}-{version}" / relative
    if not path.exists():
        pytest.fail(
            f"{name} {version} is not installed ({path} is missing): run scripts/runtimes/install-all",
            pytrace=False,
        )
    return path


def runtime_env(home: Path, **extra: str) -> dict[str, str]:
    """A person's environment for the runtime: HOME, PATH (nexus first), locale; nothing of nexus's."""
    env = {
        "HOME": str(home),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "USER": os.environ.get("USER", "nexus"),
        "TMPDIR": str(home / "tmp"),
    }
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    env.update(extra)
    return env


def nexus(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run this installation's ``nexus`` as a person would (a real process)."""
    return subprocess.run(
        [str(BIN / "nexus"), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )
