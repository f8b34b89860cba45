"""What every benchmark shares: percentiles and timing a whole process.

Benchmarks run as scripts (``.venv/bin/python benchmarks/bench_X.py``), so this folder is on
``sys.path`` and they ``from harness import ...``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
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


def server_cpu_ms(runtime: Path) -> float:
    """The CPU so far (ms: user + system, their waited-for children's included) of the warm hook
    servers whose sockets are in ``runtime`` (an ``XDG_RUNTIME_DIR``): they are no child of the
    benchmark, so its ``getrusage`` never counts them (read from ``/proc``, in 10 ms ticks)."""
    total = 0.0
    for pid_file in runtime.glob("nexus/*.pid"):
        try:
            fields = Path(f"/proc/{int(pid_file.read_text())}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, ValueError):
            continue
        total += sum(int(v) for v in fields[11:15]) * 1000 / os.sysconf("SC_CLK_TCK")
    return total
