"""Run `nexus` with one OS call failing, in this child process only (fault injection).

NEXUS_FAULT="OP:N:MODE:ERRNO": the N-th call of os.OP (write, fsync, replace, listdir…) and, with MODE
"persistent", every later one fails with ERRNO (EIO, ENOSPC); MODE "once" fails only the N-th; MODE
"child" fails the N-th and later calls in processes forked from this one only (a build helper). A
failing write first writes half of its bytes, as a full disk does.
"""

from __future__ import annotations

import errno
import os
import sys


def _install(spec: str) -> None:
    op, nth_text, mode, code = spec.split(":")
    nth, number = int(nth_text), getattr(errno, code)
    real = getattr(os, op)
    calls = [0]
    armed = [mode != "child"]

    def arm() -> None:
        armed[0], calls[0] = True, 0

    if mode == "child":
        os.register_at_fork(after_in_child=arm)

    def faulty(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        if armed[0] and (calls[0] == nth or (mode in ("persistent", "child") and calls[0] > nth)):
            if op == "write" and len(args) == 2 and isinstance(args[1], (bytes, bytearray, memoryview)):
                data = memoryview(args[1])
                if len(data) > 1:
                    real(args[0], data[: len(data) // 2])
            raise OSError(number, os.strerror(number))
        return real(*args, **kwargs)

    setattr(os, op, faulty)


if __name__ == "__main__":
    _install(os.environ["NEXUS_FAULT"])
    from nexus.surfaces.cli import main

    sys.exit(main(sys.argv[1:]))
