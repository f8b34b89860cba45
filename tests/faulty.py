"""Run `nexus` with one OS call failing, in this child process only (fault injection).

NEXUS_FAULT="OP:N:MODE:ERRNO": the N-th call of os.OP (write, fsync, replace, listdir…) and, with MODE
"persistent", every later one fails with ERRNO (EIO, ENOSPC); MODE "once" fails only the N-th; MODE
"child" fails the N-th and later calls in processes forked from this one only (a build helper). A
failing write first writes half of its bytes, as a full disk does.

Run as a script (``python tests/faulty.py ARGS``) it is a fresh interpreter; :func:`run` forks the
test's own process instead, so a test that fails each call in turn pays for the command, not for an
interpreter start and nexus's imports each time. Either way the fault lives in the child only, and
the child's exit (its code, its output, what it left on disk) is what the test reads.
"""

from __future__ import annotations

import atexit
import errno
import os
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Mapping
from pathlib import Path


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


def run(
    spec: str, argv: list[str], *, env: Mapping[str, str], cwd: Path, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``nexus ARGV`` with the fault ``spec`` in a child forked from this process, with ``env``, in
    ``cwd``, ``input`` on its standard input; its exit code and output, as a process's."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as inp:
        inp.write((input or "").encode())
        inp.flush()
        inp.seek(0)
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child)
            _child(spec, argv, env, cwd, (inp.fileno(), out.fileno(), err.fileno()))
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        code = os.waitstatus_to_exitcode(status)
        return subprocess.CompletedProcess(argv, code, out.read().decode(), err.read().decode())


def _child(spec: str, argv: list[str], env: Mapping[str, str], cwd: Path, fds: tuple[int, int, int]) -> None:
    """The forked child: standard streams on ``fds``, the fault installed, ``cli.main``; then exit as
    an interpreter does (its exit handlers run: a writer flushes what it keeps), never returning into
    the test."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        sys.stdin = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        _install(spec)
        from nexus.surfaces.cli import main

        try:
            code = main(argv) or 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            if not isinstance(exit_.code, int | None):
                print(exit_.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    _install(os.environ["NEXUS_FAULT"])
    from nexus.surfaces.cli import main

    sys.exit(main(sys.argv[1:]))
