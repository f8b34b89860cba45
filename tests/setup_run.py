"""``nexus setup`` run in this process for a test's vault (``test_setup.py``, ``test_setup_codex.py``):
through ``cli.main`` as the test's own environment and folder have it (unlike ``Env.run``, which runs
in the vault's), its output read from ``capsys``."""

from __future__ import annotations

import pytest
from conftest import Env

from nexus.surfaces.cli import main


def setup(env: Env, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``nexus --vault VAULT setup ARGS``: the exit code, standard output and standard error."""
    capsys.readouterr()
    rc = main(["--vault", str(env.vault.root), "setup", *args])
    out, err = capsys.readouterr()
    return rc, out, err
