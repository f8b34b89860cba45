"""Progress with an estimate for long work (a full verify, an index build), on a terminal only.

A command passes ``bar(label)`` as the ``progress`` callback of a long operation. On a terminal (stderr)
the first call that comes after ``DELAY`` seconds of work opens a tqdm bar (rate and time left); work
that ends sooner shows nothing. When stderr is not a terminal, or the command prints JSON, the
callback is ``None``: nothing is printed and tqdm is never imported (it stays off every short command's
import path). A terminal that reports no size (a pseudo-terminal as a program opens it: 0 columns
and 0 rows) gets a bar ``WIDTH`` columns wide on a screen of ``HEIGHT`` rows; tqdm, left to read the
size itself, would draw nothing there.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

DELAY = 2.0  # seconds of work before a bar appears
WIDTH, HEIGHT = 80, 24  # the screen assumed on a terminal that reports no size

Progress = Callable[[int, int], None]  # (bytes done, bytes in all)


def bar(label: str, *, enabled: bool = True, stream: Any = None) -> Progress | None:
    """A ``(done, total)`` callback drawing a bar on ``stream`` (stderr) once the work has lasted
    ``DELAY`` seconds; None when ``stream`` is not a terminal or not ``enabled``."""
    out = stream if stream is not None else sys.stderr
    if not enabled or not getattr(out, "isatty", lambda: False)():
        return None
    started = time.monotonic()
    shown: list[Any] = []  # the tqdm bar once it exists

    def update(done: int, total: int) -> None:
        if not shown:
            if time.monotonic() - started < DELAY and done < total:
                return
            if done >= total and time.monotonic() - started < DELAY:
                return  # finished before anyone would have looked
            from tqdm import tqdm  # (imported only for a bar that is shown)

            sized = min(_size(out)) > 0
            shown.append(
                tqdm(
                    total=total,
                    desc=f"nexus: {label}",
                    unit="B",
                    unit_scale=True,
                    unit_divisor=1024,
                    file=out,
                    leave=False,
                    dynamic_ncols=sized,
                    ncols=None if sized else WIDTH,
                    nrows=None if sized else HEIGHT,
                )
            )
        b = shown[0]
        if b.total != total:
            b.total = total
        b.update(max(0, done - b.n))
        if done >= total:
            b.close()

    return update


def _size(out: Any) -> tuple[int, int]:
    """The columns and rows the terminal behind ``out`` reports (0: none, or unknown)."""
    try:
        size = os.get_terminal_size(out.fileno())
    except (AttributeError, OSError, ValueError):
        return 0, 0
    return size.columns, size.lines
