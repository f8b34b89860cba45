"""The warm hook server: ``nexus-hook`` (``hook_client.py``) answered by one process that has nexus
imported (``hook_server.py``). Real processes throughout: the console script, the server it starts
detached, signals. Each test has its own socket folder (``XDG_RUNTIME_DIR``) and stops what it started.

Whether a hook was served is read from the client's own imports (``python -X importtime``): a served
hook imports nothing of nexus but the client module; one run in its own process imports the hooks."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Env, hook_servers, stop_hook_servers

from nexus.storage import ids
from nexus.surfaces import hook_client, hooks

IMPORTED = re.compile(r"^import time:.*\|\s*(\S+)\n", re.M)
MASKS = (  # what differs between two runs of the same hooks: the clock and the ids it seeds
    (re.compile(ids.ID_PATTERN), "<id>"),
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d)?(\.\d+)?Z|\b\d\d:\d\dZ"), "<time>"),
    (re.compile(r"\b1\d{12,18}\b"), "<clock>"),  # (milli- and nanoseconds since 1970)
    (re.compile(r"%% \d+ [\w-]+ %%"), "%% <signature> %%"),
    (re.compile(r"\b[0-9a-f]{64}\b"), "<hash>"),  # (of entries: their times differ)
    (re.compile(r'"sig": ?"[^"]+"'), '"sig": <sig>'),
)


@pytest.fixture
def folder() -> Iterator[Path]:
    """A socket folder of this test's own (short: socket paths hold about 107 bytes)."""
    base = Path(tempfile.mkdtemp(prefix="nx-", dir="/tmp"))
    try:
        yield base
    finally:
        stop_hook_servers(base)
        shutil.rmtree(base, ignore_errors=True)


def environ(env: Env, folder: Path, **extra: str) -> dict[str, str]:
    run_env = {k: v for k, v in env.environ.items() if k != "NEXUS_HOOK_SERVER"}
    run_env.update(XDG_RUNTIME_DIR=str(folder), **extra)
    run_env.pop("PYTHONDONTWRITEBYTECODE", None)
    return run_env


def hook(
    env: Env, folder: Path, event: str, data: dict[str, Any], *extra: str, **environment: str
) -> tuple[subprocess.CompletedProcess[str], bool]:
    """``nexus-hook EVENT`` as a runtime starts it, and whether the server answered it."""
    where = ["--vault", str(env.vault.root), "--home", str(env.keys_home)]
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "nexus.surfaces.hook_client",
            event,
            "--agent",
            "ella",
            *where,
            *extra,
        ],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        env=environ(env, folder, **environment),
        timeout=120,
        cwd=folder,  # (not the checkout: -m imports nexus from the working folder first)
    )
    assert proc.returncode == 0, proc.stderr
    imported = set(IMPORTED.findall(proc.stderr))
    proc.stderr = "".join(
        line for line in proc.stderr.splitlines(True) if not line.startswith("import time:")
    )
    return proc, "nexus.surfaces.hooks" not in imported


def server(folder: Path, timeout: float = 60) -> int:
    """The pid of the one server listening in ``folder`` (waiting for it to start)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = list((folder / "nexus").glob("*.pid")) if (folder / "nexus").is_dir() else []
        if pids and list((folder / "nexus").glob("*.sock")):
            pid = int(pids[0].read_text())
            if pid in hook_servers(folder=str(folder)):
                return pid
        time.sleep(0.05)
    raise AssertionError(f"no hook server started in {folder}")


def gone(pid: int, folder: Path, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while pid in hook_servers(folder=str(folder)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


QUIET = {"tool_name": "Read", "tool_input": {"file_path": "x"}}  # pre-tool with nothing to say


def masked(text: str, *paths: tuple[str, str]) -> str:
    for old, new in paths:
        text = text.replace(old, new)
    for pattern, mark in MASKS:
        text = pattern.sub(mark, text)
    return text


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): masked(p.read_text(errors="replace"))
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix not in (".lock",) and "index" not in p.parts
    }


def test_served_hooks_print_what_in_process_hooks_print_and_leave_the_same_vault(
    env: Env, folder: Path, tmp_path: Path
) -> None:
    """Every event, on two copies of one vault: served on one, in its own process on the other, one
    after the other. Outputs and vaults are the same but for the clock (times and the ids it seeds)."""
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    env.run("claim", "docs/**", "--agent", "lyra", "--reason", "rewrite", "--project", str(project))
    other = Env(env.vault.__class__(tmp_path / "copy"), env.keys_home)
    shutil.copytree(env.vault.root, other.vault.root)
    off = {"NEXUS_HOOK_SERVER": "off"}
    hook(env, folder, "pre-tool", {"cwd": str(project), **QUIET})  # starts the server (a quiet event)
    hook(other, folder, "pre-tool", {"cwd": str(project), **QUIET}, **off)
    server(folder)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"type": "user", "message": {"role": "user", "content": "the lexer"}}\n')
    events: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
        ("session-start", {"source": "startup"}, ()),
        ("prompt", {"prompt": "go on"}, ()),  # nothing new
        ("prompt", {"prompt": "go on"}, ()),  # one new entry (appended before, below)
        ("pre-tool", {"tool_name": "Edit", "tool_input": {"file_path": str(project / "docs/a.md")}}, ()),
        ("stop", {"stop_hook_active": False}, ("--block-without-entry",)),
        ("pre-compact", {"trigger": "manual", "transcript_path": str(transcript)}, ()),
        ("stop", {}, ("--retain",)),
        ("session-end", {}, ()),
        ("prompt", {}, ("--agent", "nobody")),  # a failure: one line
    ]
    said, outs = [], []
    for n, (event, data, extra) in enumerate(events):
        if n == 2:
            for which in (env, other):
                which.append("lyra", "the parser is PEG")
        data = {"session_id": "s-1", "cwd": str(project), **data}
        served, was_served = hook(env, folder, event, data, *extra)
        alone, was_alone = hook(other, folder, event, data, *extra, **off)
        assert was_served and not was_alone, event
        outs.append(served.stdout)
        paths = (str(other.vault.root), str(env.vault.root))
        assert masked(served.stdout) == masked(alone.stdout, paths), event
        assert masked(served.stderr) == masked(alone.stderr, paths), event
        said.append(bool(served.stdout))
    # the brief, the news, the claim's refusal, the block, the failure: and the rest said nothing
    assert said == [True, False, True, True, True, False, False, False, True]
    assert "lyra" in outs[3] and "nobody" in outs[8]
    mine, theirs = tree(env.vault.root), tree(other.vault.root)
    assert mine == theirs


def test_the_first_hook_starts_the_server_and_waits_for_it_and_the_second_finds_it(
    env: Env, folder: Path
) -> None:
    first, was = hook(env, folder, "session-start", {"session_id": "a"})
    assert was and "hookSpecificOutput" in first.stdout  # no server yet: it started one, and waited
    pid = server(folder)
    second, was = hook(env, folder, "session-start", {"session_id": "b"})
    assert was and "hookSpecificOutput" in second.stdout
    assert server(folder) == pid and hook_servers(folder=str(folder)) == [pid]
    sock = next((folder / "nexus").glob("*.sock"))
    assert (folder / "nexus").stat().st_mode & 0o777 == 0o700 and sock.stat().st_mode & 0o777 == 0o600


def test_it_stops_after_the_idle_time(env: Env, folder: Path) -> None:
    hook(env, folder, "pre-tool", QUIET, NEXUS_HOOK_SERVER_IDLE="0.05")  # 3 seconds
    pid = server(folder)
    assert gone(pid, folder)
    assert not list((folder / "nexus").glob("*.sock")) and not list((folder / "nexus").glob("*.pid"))


def test_it_stops_when_its_vault_is_gone(env: Env, folder: Path) -> None:
    hook(env, folder, "pre-tool", QUIET)
    pid = server(folder)
    shutil.rmtree(env.vault.root)
    assert gone(pid, folder)


def test_it_stops_on_sigterm_and_after_sigkill_the_next_hook_starts_another(env: Env, folder: Path) -> None:
    hook(env, folder, "pre-tool", QUIET)
    first = server(folder)
    os.kill(first, signal.SIGTERM)
    assert gone(first, folder) and not list((folder / "nexus").glob("*.sock"))
    hook(env, folder, "pre-tool", QUIET)
    second = server(folder)
    os.kill(second, signal.SIGKILL)
    assert gone(second, folder)
    assert list((folder / "nexus").glob("*.sock"))  # left behind: the next server replaces it
    proc, was = hook(env, folder, "session-start", {"session_id": "a"})
    assert was and "hookSpecificOutput" in proc.stdout  # (by the server it started)
    third = server(folder)
    assert third not in (first, second)
    _, was = hook(env, folder, "session-start", {"session_id": "b"})
    assert was and server(folder) == third


def test_a_change_of_nexus_code_retires_the_server(env: Env, folder: Path, tmp_path: Path) -> None:
    """A copy of nexus (on PYTHONPATH): once one of its modules changes, the server running the old
    code answers no more; the hook runs in its own process and a new server starts."""
    code = tmp_path / "code"
    shutil.copytree(ROOT / "nexus", code / "nexus", ignore=shutil.ignore_patterns("__pycache__"))
    path = {"PYTHONPATH": str(code)}
    hook(env, folder, "pre-tool", QUIET, **path)
    old = server(folder)
    _, was = hook(env, folder, "pre-tool", QUIET, **path)
    assert was
    module = code / "nexus" / "team" / "brief.py"
    module.write_text(module.read_text() + "\n")
    proc, was = hook(env, folder, "session-start", {"session_id": "a"}, **path)
    assert was and "hookSpecificOutput" in proc.stdout  # (by a server of the new code it started)
    assert gone(old, folder)
    new = server(folder)
    assert new != old
    _, was = hook(env, folder, "pre-tool", QUIET, **path)
    assert was and server(folder) == new


def test_clients_at_once_start_one_server(env: Env, folder: Path) -> None:
    run_env = environ(env, folder)
    argv = [str(Path(sys.executable).parent / "nexus-hook"), "pre-tool", "--agent", "ella"]
    argv += ["--vault", str(env.vault.root), "--home", str(env.keys_home)]
    procs = [
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=run_env)
        for _ in range(4)
    ]
    for proc in procs:
        proc.communicate(json.dumps(QUIET).encode(), timeout=120)
    pid = server(folder)
    time.sleep(2)  # (any second server would be up by now)
    assert hook_servers(folder=str(folder)) == [pid]


def test_a_socket_folder_others_can_enter_is_not_used(env: Env, folder: Path) -> None:
    (folder / "nexus").mkdir(mode=0o755)
    (folder / "nexus").chmod(0o755)
    for session in ("a", "b"):
        proc, was = hook(env, folder, "session-start", {"session_id": session})
        assert not was and "hookSpecificOutput" in proc.stdout
    time.sleep(2)  # (a server started would be up by now)
    assert hook_servers(folder=str(folder)) == [] and not list((folder / "nexus").iterdir())


def _client(env: Env, folder: Path, event: str, *extra: str) -> subprocess.Popen[str]:
    """``nexus-hook EVENT`` for session a, started (its event JSON sent and its input closed)."""
    base = ["--agent", "ella", "--vault", str(env.vault.root), "--home", str(env.keys_home), *extra]
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "nexus-hook"), event, *base],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=environ(env, folder),
        text=True,
    )
    proc.stdin.write(json.dumps({"session_id": "a"}))  # type: ignore[union-attr]
    proc.stdin.close()  # type: ignore[union-attr]
    return proc


def _said(proc: subprocess.Popen[str]) -> Any:
    with proc, proc.stdout:  # type: ignore[union-attr]
        return json.loads(proc.stdout.read() or "null")  # type: ignore[union-attr]


def _children(pid: int) -> list[int]:
    found = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(x) for x in found.read_text().split()] if found.exists() else []


def test_calls_a_server_never_took_are_run_by_the_next(env: Env, folder: Path) -> None:
    """The server stopped (SIGSTOP) while two requests wait, unread, then killed: neither call was
    taken, so both are run (by the next server), a writer included (it did nothing yet)."""
    hook(env, folder, "session-start", {"session_id": "a"})
    hook(env, folder, "pre-tool", QUIET)
    pid = server(folder)
    env.append("lyra", "the lexer is done")  # news for session a's next prompt
    os.kill(pid, signal.SIGSTOP)
    stop, prompt = _client(env, folder, "stop", "--block-without-entry"), _client(env, folder, "prompt")
    time.sleep(3)  # both have connected and sent (the server, stopped, reads nothing)
    os.kill(pid, signal.SIGKILL)
    blocked, brief = _said(stop), _said(prompt)
    assert blocked["decision"] == "block"  # (the writer's own answer: it ran)
    assert "the lexer is done" in brief["hookSpecificOutput"]["additionalContext"]


def test_a_writer_whose_server_dies_mid_call_says_so_and_a_prompt_runs_again(env: Env, folder: Path) -> None:
    """The server took a stop (its child blocked reading the session's record, a FIFO here) and was
    killed with the child: the stop says it failed rather than risk running twice; a prompt the
    server took and lost is run again in the client's own process."""
    from nexus.team import session

    hook(env, folder, "session-start", {"session_id": "a"})
    pid = server(folder)
    env.append("lyra", "the lexer is done")
    record = session.record_path(env.vault, "ella", "a")
    saved = record.read_bytes()
    for event, extra in (("stop", ("--retain",)), ("prompt", ())):
        record.unlink()
        os.mkfifo(record)
        proc = _client(env, folder, event, *extra)
        deadline = time.monotonic() + 60
        while not _children(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        child = _children(pid)
        assert child, "the server took no call"
        record.unlink()
        record.write_bytes(saved)
        for victim in (*child, pid):
            os.kill(victim, signal.SIGKILL)
        said = _said(proc)
        if event == "stop":
            assert said == {"systemMessage": "nexus: stop failed: the hook server stopped during the call"}
            assert gone(pid, folder)
            hook(env, folder, "pre-tool", QUIET)  # (the next server)
            pid = server(folder)
        else:
            assert "the lexer is done" in said["hookSpecificOutput"]["additionalContext"]


def test_the_client_knows_every_hook_event() -> None:
    """The client, which imports nothing of nexus, names the same events as the hooks."""
    assert sorted(hook_client.EVENTS) == sorted(hooks.EVENTS)


def test_nexus_mcp_starts_the_server_its_sessions_hooks_use(env: Env, folder: Path) -> None:
    """``nexus mcp`` starts its vault's hook server after its first answer, before any hook runs; the
    session's hooks are answered by that server."""
    run_env = environ(env, folder, NEXUS_VAULT=str(env.vault.root), NEXUS_HOME=str(env.keys_home))
    mcp = subprocess.Popen(
        [str(Path(sys.executable).parent / "nexus"), "mcp", "--agent", "ella"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=run_env,
        cwd=folder,
    )
    assert mcp.stdin is not None and mcp.stdout is not None
    with mcp:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        request = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        mcp.stdin.write(json.dumps(request).encode() + b"\n")
        mcp.stdin.flush()
        assert json.loads(mcp.stdout.readline())["result"]["serverInfo"]
        pid = server(folder)
        proc, was = hook(env, folder, "session-start", {"session_id": "a"})
        assert was and "hookSpecificOutput" in proc.stdout
        assert hook_servers(folder=str(folder)) == [pid]
        mcp.stdin.close()


WARM_CHECK = """
import atexit, json, sys
from nexus.surfaces import hook_server, hooks
vault, keys, cwd = sys.argv[1:4]
hook_server.warm()
before = set(sys.modules)
for event, data, *extra in json.loads(sys.stdin.read()):
    if event == "append":
        from nexus.keys import identity
        from nexus.ledger import log
        from nexus.storage.vault import Vault

        v = Vault(__import__("pathlib").Path(vault))
        log.append(v, identity.load_signer(v, __import__("pathlib").Path(keys), "lyra"), **data)
        before = set(sys.modules)
        continue
    argv = [event, "--agent", "ella", "--vault", vault, "--home", keys, *extra]
    out, err = hooks.answer(argv, json.dumps({"session_id": "w", "cwd": cwd, **data}), {}, cwd)
    assert not err, err
    atexit._run_exitfuncs()
print(json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith("nexus"))))
"""


def test_after_warm_no_hook_imports_anything_of_nexus(env: Env, tmp_path: Path) -> None:
    """The server's ``warm`` imports what every hook imports as it runs (``hook_server.WARM``): a
    whole session of hooks after it, in a fresh interpreter, imports no nexus module."""
    session = [
        ["session-start", {"source": "startup"}],
        ["prompt", {"prompt": "go"}],
        ["append", {"channel": "build", "type": "decision", "summary": "use the lexer"}],
        ["prompt", {"prompt": "and now"}],
        ["pre-tool", {"tool_name": "Edit", "tool_input": {"file_path": str(tmp_path / "a.py")}}],
        ["stop", {}, "--retain"],
        ["pre-compact", {"trigger": "auto"}],
        ["session-start", {"source": "compact"}],
        ["session-end", {}],
    ]
    done = subprocess.run(
        [sys.executable, "-c", WARM_CHECK, str(env.vault.root), str(env.keys_home), str(tmp_path)],
        input=json.dumps(session),
        capture_output=True,
        text=True,
        env=env.environ,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout) == []
