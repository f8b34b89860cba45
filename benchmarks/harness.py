"""What every benchmark shares: percentiles and timing a whole process.

Benchmarks run as scripts (``.venv/bin/python benchmarks/bench_X.py``), so this folder is on
``sys.path`` and they ``from harness import ...``.
"""

from __future__ import annotations

import subprocess
import time


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(cmd: list[str], env: dict[str, str]) -> float:
    """Milliseconds one run of ``cmd`` takes as a whole process (it must succeed)."""
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1000
