"""What every benchmark shares: percentiles and timing a whole process.

Benchmarks run as scripts (``.venv/bin/python benchmarks/bench_X.py``), so this folder is on
``sys.path`` and they ``from harness import ...``.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(cmd: list[str], env: dict[str, str]) -> float:
    """Milliseconds one run of ``cmd`` takes as a whole process (it must succeed)."""
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1000


def children_cpu_ms() -> float:
    """CPU (user + system, ms) of every child process waited for so far, their own children included
    once waited for: the difference across one run is what that run cost in CPU, whatever the load."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def measured(cmd: list[str], **kwargs: Any) -> tuple[float, float, subprocess.CompletedProcess[Any]]:
    """One run of ``cmd`` (``subprocess.run`` arguments in ``kwargs``): wall ms, CPU ms, the result."""
    cpu, t0 = children_cpu_ms(), time.perf_counter()
    done = subprocess.run(cmd, **kwargs)
    return (time.perf_counter() - t0) * 1000, children_cpu_ms() - cpu, done


def installed_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` as an installed nexus runs: its bytecode written and reused (PYTHONDONTWRITEBYTECODE,
    set in some shells and CI jobs, would make every hook compile nexus's sources at each start)."""
    return {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}


def python_floor() -> dict[str, str]:
    """The environment the floor (`python -c pass`) runs in: this one, as installed."""
    return installed_env(dict(os.environ))


def server_cpu_ms(runtime: Path, since: dict[int, float] | None = None) -> dict[int, float]:
    """The CPU so far (ms: user + system, their waited-for children's included) of each warm hook
    server whose socket is in ``runtime`` (an ``XDG_RUNTIME_DIR``), by pid: they are no child of the
    benchmark, so its ``getrusage`` never counts them (read from ``/proc``, in 10 ms ticks). With
    ``since`` (an earlier reading), what each used since then (a server started since: all of it)."""
    used: dict[int, float] = {}
    for pid_file in runtime.glob("nexus/*.pid"):
        try:
            pid = int(pid_file.read_text())
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, ValueError):
            continue
        used[pid] = sum(int(v) for v in fields[11:15]) * 1000 / os.sysconf("SC_CLK_TCK")
    if since is not None:
        used = {pid: ms - since.get(pid, 0.0) for pid, ms in used.items()}
    return used


SERVER = ("off", "cold", "warm")  # the warm hook server: switched off, not running yet, running


def servers(folder: Path) -> list[int]:
    """The pids of the warm hook servers whose sockets are in ``folder`` (still running)."""
    pids = []
    for pid_file in folder.glob("nexus/*.pid"):
        with contextlib.suppress(OSError, ValueError):
            pid = int(pid_file.read_text())
            os.kill(pid, 0)
            pids.append(pid)
    return pids


def server_mode(mode: str, folder: Path) -> None:
    """The warm hook server for the runtimes started next (their environment is this process's
    ``NEXUS_HOOK_SERVER`` and ``XDG_RUNTIME_DIR``, as the e2e tests pass them): ``off``; ``cold``,
    every server stopped first; ``warm``, left running."""
    if mode == "off":
        os.environ["NEXUS_HOOK_SERVER"] = "off"
        return
    os.environ.pop("NEXUS_HOOK_SERVER", None)
    if mode == "cold":
        for pid in servers(folder):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while servers(folder) and time.monotonic() < deadline:
            time.sleep(0.02)


@contextlib.contextmanager
def hook_server_folder() -> Iterator[Path]:
    """A socket folder of this run's own for the warm hook servers the runtimes start (short paths:
    a socket path holds about 107 bytes), as ``XDG_RUNTIME_DIR``; every server in it stopped and the
    folder removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix="nx-", dir="/tmp"))
    os.environ["XDG_RUNTIME_DIR"] = str(folder)
    try:
        yield folder
    finally:
        server_mode("cold", folder)  # (stops them)
        shutil.rmtree(folder, ignore_errors=True)
