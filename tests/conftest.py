"""Shared fixtures: a fresh vault with agents, and a runner for real `nexus` processes."""

from __future__ import annotations

import getpass
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from nexus.keys import identity
from nexus.keys.identity import Signer
from nexus.ledger import log
from nexus.storage import entries, ids
from nexus.storage.vault import Vault, init

ROOT = Path(__file__).resolve().parent.parent

# The warm hook server (nexus/surfaces/hook_server.py) only where a test is about it: every process the
# suite starts inherits the switch, and the run's mark: a socket folder of the run's own (as
# XDG_RUNTIME_DIR, so a test that leaves out NEXUS_* still starts no server outside it), by which the
# end of the run finds any server the suite started and left alive (pytest_sessionfinish: it fails
# the run). xdist's workers inherit the controller's.
os.environ["NEXUS_HOOK_SERVER"] = "off"
if "NEXUS_TEST_RUN" not in os.environ:
    os.environ["NEXUS_TEST_RUN"] = tempfile.mkdtemp(prefix="nx-run-", dir="/tmp")
os.environ["XDG_RUNTIME_DIR"] = os.environ["NEXUS_TEST_RUN"]
HOOK_SERVER = "nexus.surfaces.hook_server"
# where pytest makes the tests' folders: a server this interpreter runs for a vault in there is one a
# test started, even through a runtime that passed it none of the suite's environment
PYTEST_TEMP = f"{Path(tempfile.gettempdir()).resolve()}/pytest-of-{getpass.getuser()}/".encode()


def hook_servers(marked: str | None = None, folder: str | None = None, tests: bool = False) -> list[int]:
    """The pids of live warm hook servers whose environment holds ``NEXUS_TEST_RUN=marked``, whose
    socket is in ``folder``, or (``tests``) that this interpreter runs for a vault in a test's folder."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if HOOK_SERVER.encode() not in cmdline or state == "Z":
            continue
        args = cmdline.split(b"\0")
        ours = marked is not None and f"NEXUS_TEST_RUN={marked}".encode() in environ
        inside = folder is not None and any(a.startswith(folder.encode()) for a in args)
        tested = tests and args[0] == sys.executable.encode() and any(a.startswith(PYTEST_TEMP) for a in args)
        if ours or inside or tested:
            found.append(int(proc.name))
    return found


def stop_hook_servers(folder: str | Path, timeout: float = 10) -> list[int]:
    """Stop (SIGTERM, then SIGKILL after ``timeout``) every warm hook server whose socket is in
    ``folder``, and wait until each is gone; the pids that were running."""
    pids = hook_servers(folder=str(folder))
    for pid in pids:
        os.kill(pid, 15)
    deadline = time.monotonic() + timeout
    while (alive := hook_servers(folder=str(folder))) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in alive:
        os.kill(pid, 9)
    return pids


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No warm hook server started by this run is left alive (each test stops its own): one still
    running fails the run, and is stopped."""
    if hasattr(session.config, "workerinput"):
        return  # (an xdist worker: the controller looks once every worker is done)
    run = os.environ["NEXUS_TEST_RUN"]
    left = hook_servers(run, folder=run, tests=True)
    for pid in left:
        os.kill(pid, 9)
    shutil.rmtree(run, ignore_errors=True)
    if left:
        sys.stderr.write(f"\nthe tests left warm hook servers running (pids {left}): stopped\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@dataclass
class Env:
    """A vault, the folder holding its private keys, and helpers to act in it."""

    vault: Vault
    keys_home: Path

    @property
    def environ(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(NEXUS_VAULT=str(self.vault.root), NEXUS_HOME=str(self.keys_home))
        env.pop("NO_COLOR", None)
        return env

    def run(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 60,
        process: bool = False,
    ) -> Run:
        """Run the CLI with ARGS against this vault, as ``nexus ARGS`` typed in the vault's folder.

        By default in this process, through the same ``cli.main`` (argument parsing, handlers, error
        lines and exit codes) with this vault's environment, working folder, standard input and
        captured output: a CLI check does not pay a Python start-up and nexus's imports each time.
        ``process=True`` starts a real ``python -m nexus`` instead, where the process boundary is what
        is tested (start-up, signals, the interpreter's own handling of output)."""
        if process:
            proc = subprocess.run(
                [sys.executable, "-W", "error", "-m", "nexus", *args],
                input=input,
                capture_output=True,
                text=True,
                env=self.environ,
                timeout=timeout,
                cwd=str(self.vault.root),
            )
            result = Run(proc.returncode, proc.stdout, proc.stderr)
        else:
            result = run_in_process(list(args), env=self.environ, cwd=self.vault.root, input=input)
        if check and result.returncode != 0:
            raise AssertionError(f"nexus {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    def signer(self, name: str) -> Signer:
        return identity.load_signer(self.vault, self.keys_home, name)

    def append(self, agent: str, summary: str = "hello", **kw: Any) -> Any:
        kw.setdefault("channel", "general")
        kw.setdefault("type", "note")
        return log.append(self.vault, self.signer(agent), summary=summary, **kw)


def run_in_process(argv: list[str], *, env: dict[str, str], cwd: Path, input: str | None = None) -> Run:
    """``nexus ARGV`` through ``cli.main`` in this process: the environment, working folder and standard
    streams swapped for the call and put back after it (a test's own monkeypatches stay as they were)."""
    from nexus.surfaces import cli

    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved = (sys.stdin, sys.stdout, sys.stderr)
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", newline="")
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", newline="")
    stdin = io.TextIOWrapper(io.BytesIO((input or "").encode()), encoding="utf-8", errors="surrogateescape")
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        try:
            code = cli.main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            if not isinstance(exit_.code, int | None):
                stderr.write(f"{exit_.code}\n")
        stdout.flush()
        stderr.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return Run(int(code or 0), out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8"))


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    """A fresh vault with agents ella and lyra and the human sam."""
    keys = tmp_path / "keys-home"
    monkeypatch.setenv("NEXUS_HOME", str(keys))
    vault, _ = init(tmp_path / "vault")
    monkeypatch.setenv("NEXUS_VAULT", str(vault.root))
    for name in ("ella", "lyra"):
        identity.add(vault, keys, name)
    identity.add(vault, keys, "sam", human=True)
    yield Env(vault, keys)


FORMAT_V1 = Path(__file__).resolve().parent / "fixtures" / "format-v1"


@pytest.fixture
def v1_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    """A vault whose segment was written in entry format 1 (tests/fixtures/format-v1: ella, lyra and
    the human sam, with their keys), copied; nexus appends to it in the format it writes now."""
    shutil.copytree(FORMAT_V1 / "vault", tmp_path / "vault")
    shutil.copytree(FORMAT_V1 / "home", tmp_path / "home")
    for pem in (tmp_path / "home").rglob("*.pem"):
        os.chmod(pem, 0o600)
    monkeypatch.setenv("NEXUS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NEXUS_VAULT", str(tmp_path / "vault"))
    # New entries (in this process) are stamped just after the fixture's last one, so they continue
    # its segment (log/2026-12.md) in the format nexus writes now, whatever the date is.
    last = max(
        entries.ID_RE.findall((FORMAT_V1 / "vault" / "log" / "2026-12.md").read_text(encoding="utf-8"))
    )
    at = entries.decode_id_ms(last) / 1000 + 1
    clock = types.SimpleNamespace(time=lambda: at, strftime=time.strftime, gmtime=time.gmtime)
    monkeypatch.setattr(ids, "time", clock)
    yield Env(Vault(tmp_path / "vault"), tmp_path / "home")


def wait_for_rescans(vault: Vault, count: int = 2, timeout: float = 60) -> None:
    """Wait until the running watcher has made ``count`` more full rescans (its heartbeat's pass
    count), so one whole rescan began after whatever the caller did before calling."""
    import time

    from nexus.team import heartbeat

    target = heartbeat.passes(vault) + count
    deadline = time.monotonic() + timeout
    while heartbeat.passes(vault) < target:
        if time.monotonic() > deadline:
            raise AssertionError(f"the watcher made no {count} rescans in {timeout:.0f} s")
        time.sleep(0.02)


def spy_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the entries read back from the log by ref (``coordination.materialize``) from now on,
    until ``monkeypatch.undo()``."""
    from nexus.team import coordination, coordination_state

    read_back: list[str] = []
    real = coordination.materialize

    def spy(vault: Any, ref: coordination_state.Ref, checker: Any = None) -> Any:
        read_back.append(ref.id)
        return real(vault, ref, checker)

    monkeypatch.setattr(coordination, "materialize", spy)
    return read_back


def edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` (same length) keeping the file's size and mtime: a freshness check
    (size and mtime) cannot see it; only the bytes read back can."""
    assert len(old) == len(new)
    st = path.stat()
    data = path.read_bytes()
    assert data.count(old) == 1
    path.write_bytes(data.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def edit_entry_in_place(
    vault: Vault, located: Any, what: str, text: tuple[bytes, bytes]
) -> tuple[bytes, bytes]:
    """Change an entry's ``text`` (old, new) or, ``what="signature"``, one character of its signature,
    in place (see :func:`edit_in_place`); returns the segment's bytes before, and what was written."""
    seg = vault.root / located.file
    original = seg.read_bytes()
    if what == "text":
        old, new = text
    else:
        e = located.entry
        sig = (e.sig if e.v == 1 else entries.machine_token(e.sig, e.seen)).encode()
        old, new = sig, sig[:10] + (b"A" if sig[10:11] != b"A" else b"B") + sig[11:]
    edit_in_place(seg, old, new)
    return original, new


def old_settings_form(text: str, written: str) -> str:
    """``nexus.md`` as vaults made before the vault id moved to the note's meta comment: the id a
    frontmatter property, written as given (``written``: quoted or not)."""
    import re

    text = re.sub(r'\n%% nexus:meta \{[^\n]*"vault_id":"[^"]*"[^\n]*\} %%\n', "\n", text)
    return text.replace("---\n", f"---\nnexus: 1\nvault_id: {written}\n", 1)


class _EndToEndTogether(LoadScopeScheduling):  # type: ignore[misc]  # (xdist has no types)
    """``--dist loadgroup`` as scripts/test runs it: each test is its own unit of work, handed to
    the next idle worker, except the end-to-end runtime sessions (``tests/e2e/``), which form one
    unit: they run one after another on one worker while the others run the rest. OpenClaw keeps
    state under /tmp whatever TMPDIR says (its test checks it left nothing there), and two runtimes
    with their model servers at once only slow each other down on a small machine.

    (pytest-xdist's own loadgroup reads ``xdist_group`` marks by renaming the collected items, which
    pytest 9 no longer lets it do; the scope is therefore decided here, from the test's path.)"""

    def _split_scope(self, nodeid: str) -> str:
        return "e2e" if nodeid.startswith("tests/e2e/") else nodeid


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadScopeScheduling | None:
    if config.getvalue("dist") != "loadgroup":
        return None
    return _EndToEndTogether(config, log)
