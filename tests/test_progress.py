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
