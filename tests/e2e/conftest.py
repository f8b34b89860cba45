"""The end-to-end harness: real agent runtimes (installed pinned by ``scripts/runtimes/install-all``)
driven by a scripted model on 127.0.0.1 (``scripted.py``; one module per provider API, e.g.
``model_anthropic.py``), wired by the real ``nexus setup``.

A module per runtime (``test_claude_code.py``…) marks its tests ``@pytest.mark.e2e`` and finds its
binary with :func:`runtime_binary`: a runtime that is not installed FAILS the test with one line
(never a skip). :func:`runtime_env` is the environment a person's shell would give the runtime:
their own home folder (a fresh one per test), no ``NEXUS_*`` (the wiring must carry the vault and
the keys), ``PATH`` with this installation's ``nexus`` first. :func:`inherited_env` is the test's own
environment less nexus's and the runtime's variables, with its own home (the runtimes driven through
``runtime_*.py``). :func:`nexus_as` runs ``nexus`` on a test's vault as that person, the runtime on
``PATH`` (``setup --check`` asks the installed runtime); :func:`wired` makes that person's home and a
project, wired by ``nexus setup`` for the agent ``lyra``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Env, stop_hook_servers

# Read once, before any test moves HOME: where scripts/runtimes/*.sh install.
RUNTIMES = Path(os.environ.get("NEXUS_RUNTIMES") or Path.home() / ".cache" / "nexus-runtimes")
BIN = Path(sys.executable).parent  # this installation's `nexus`, `nexus-hook`
ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
# How many tools the MCP server offers an agent (what a runtime's first request must list).
AGENT_TOOLS = len(json.loads((ROOT / "nexus/surfaces/mcp_tools.json").read_text())["agent_tools"])


def runtime_binary(name: str, version: str, relative: str) -> Path:
    """The installed runtime's executable, or the test fails with one line saying how to install it."""
    path = RUNTIMES / f"{name}-{version}" / relative
    if not path.exists():
        pytest.fail(
            f"{name} {version} is not installed ({path} is missing): run scripts/runtimes/install-all",
            pytrace=False,
        )
    return path


# the suite's own: the warm hook server's switch and where its sockets go (a test turns it on with
# the fixture ``hook_server``), and the run's mark that finds the servers left behind (../conftest.py)
SUITE = ("NEXUS_HOOK_SERVER", "NEXUS_TEST_RUN", "XDG_RUNTIME_DIR")


def _suite() -> dict[str, str]:
    return {k: os.environ[k] for k in SUITE if k in os.environ}


@pytest.fixture
def hook_server(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The warm hook server on for the runtimes this test starts, its sockets in a folder of its own
    (short: a socket path holds about 107 bytes); every server started there is stopped at the end."""
    folder = Path(tempfile.mkdtemp(prefix="nx-", dir="/tmp"))
    monkeypatch.delenv("NEXUS_HOOK_SERVER")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    try:
        yield folder / "nexus"
    finally:
        stop_hook_servers(folder)
        shutil.rmtree(folder, ignore_errors=True)


def runtime_env(home: Path, **extra: str) -> dict[str, str]:
    """A person's environment for the runtime: HOME, PATH (nexus first), locale; nothing of nexus's
    (but the suite's own switches, ``SUITE``)."""
    env = {
        **_suite(),
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


def inherited_env(home: Path, *drop: str, path: tuple[Path, ...] = (), **extra: str) -> dict[str, str]:
    """This process's environment without ``NEXUS_*``, ``PYTEST*`` and the prefixes ``drop`` (the
    runtime's own), with ``HOME`` and a ``PATH`` of this installation's nexus, ``path``, the system's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXUS_", "PYTEST", *drop))}
    env.update(_suite())
    env.update(HOME=str(home), PATH=":".join([str(BIN), *map(str, path), SYSTEM_PATH]), **extra)
    return env


def nexus_as(
    env: Env, home: Path, cwd: Path, runtime: Path, *args: str, **extra: str
) -> subprocess.CompletedProcess[str]:
    """``python -W error -m nexus --vault VAULT ARGS`` in ``cwd`` for the person whose home is ``home``,
    the runtime's folder (``runtime``, its executable) first on ``PATH``."""
    path = f"{runtime.parent}:{env.environ['PATH']}"
    return subprocess.run(
        [sys.executable, "-W", "error", "-m", "nexus", "--vault", str(env.vault.root), *args],
        cwd=cwd,
        env={**env.environ, "HOME": str(home), "PATH": path, **extra},
        capture_output=True,
        text=True,
        timeout=120,
    )


def wired(
    env: Env, tmp_path: Path, runtime: Path, name: str, scope: str, **extra: str
) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """A person's home and a git project under ``tmp_path``, wired by ``nexus setup NAME --agent lyra
    --scope SCOPE`` (which must succeed): the home, the project and what setup said."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir(exist_ok=True)
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    done = nexus_as(env, home, project, runtime, "setup", name, "--agent", "lyra", "--scope", scope, **extra)
    assert done.returncode == 0, done.stderr
    return home, project, done
