"""Progress on long work (issue 15): a tqdm bar with an estimate on a terminal once the work has lasted
two seconds; nothing at all (and no tqdm import) when stderr is not a terminal or --json is given."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from conftest import Env

from nexus.storage import progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_with_an_estimate_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "DELAY", 0.0)
    out = _Terminal()
    update = progress.bar("verifying the log", stream=out)
    assert update is not None
    for done in (0, 40 << 20, 80 << 20, 100 << 20):
        update(done, 100 << 20)
    text = out.getvalue()
    # tqdm's line: the label, the share done, bytes, and elapsed<remaining (the estimate)
    assert "nexus: verifying the log:" in text and "%|" in text and "/100M [00:00<" in text


def test_nothing_when_not_a_terminal_or_for_json_or_when_quick() -> None:
    assert progress.bar("x", stream=io.StringIO()) is None
    assert progress.bar("x", stream=_Terminal(), enabled=False) is None
    out = _Terminal()
    update = progress.bar("x", stream=out)  # (DELAY is 2 s: this work ends well before)
    assert update is not None
    update(0, 10)
    update(10, 10)
    assert out.getvalue() == ""


def test_commands_do_not_import_tqdm_off_a_terminal(env: Env) -> None:
    env.append("ella", "one")
    code = (
        "import sys; from nexus.surfaces import cli; rc = cli.main(sys.argv[1:]); "
        "sys.stderr.write(f'tqdm={\"tqdm\" in sys.modules}')"
    )
    for args in (["verify", "--full"], ["handoff", "--json"]):
        run = subprocess.run(
            [sys.executable, "-W", "error", "-c", code, *args],
            env=env.environ,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.stderr == "tqdm=False", run.stderr


@pytest.mark.parametrize("rows_columns", [(0, 0), (40, 120)])
def test_verify_full_shows_a_bar_on_a_pty_of_any_size(env: Env, rows_columns: tuple[int, int]) -> None:
    """A pseudo-terminal as a program opens it reports 0 rows and 0 columns: tqdm alone drew nothing
    there. A real ``nexus verify --full`` process (its bar's delay set to 0 in that process) on a real
    pty, of unknown size and of 120 columns."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    for i in range(20):
        env.append("ella", f"entry {i}")
    master, slave = pty.openpty()
    if rows_columns != (0, 0):
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *rows_columns, 0, 0))
    size = struct.unpack("HHHH", fcntl.ioctl(slave, termios.TIOCGWINSZ, b"\0" * 8))
    assert size[:2] == rows_columns  # ((0, 0): unknown)
    code = (
        "import sys; from nexus.storage import progress; progress.DELAY = 0.0; "
        "from nexus.surfaces.cli import main; sys.exit(main(['verify', '--full']))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-W", "error", "-c", code],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env.environ,
    )
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # (EIO: the process closed the pty)
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert proc.wait(timeout=60) == 0
    assert proc.stdout is not None
    with proc.stdout:
        assert b"clean" in proc.stdout.read()
    assert b"nexus: verifying the log:" in shown and b"%|" in shown, shown
