"""`nexus-hook`: what agent runtimes run before a turn. It injects the brief and ALWAYS exits 0,
because Claude Code and Codex treat exit code 2 as "block the agent"."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import Env


def _hook(
    env: Env, *args: str, stdin: str = "", extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    run_env = env.environ
    run_env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-W", "error", "-m", "nexus.hooks", *args],
        input=stdin, capture_output=True, text=True, env=run_env, timeout=60,
    )


def test_session_start_injects_the_brief_with_what_others_wrote(env: Env) -> None:
    entry = env.append("ella", "Parser port started", channel="parser")
    event = json.dumps({"hook_event_name": "SessionStart", "session_id": "abc"})
    proc = _hook(env, "session-start", "--agent", "lyra", stdin=event)
    assert proc.returncode == 0, proc.stderr
    assert "nexus brief for lyra" in proc.stdout
    assert entry.located.entry.id in proc.stdout
    assert len(proc.stdout) <= 10_000 + 1


def test_the_agent_can_come_from_the_environment_and_the_budget_is_kept(env: Env) -> None:
    for i in range(60):
        env.append("ella", f"progress report number {i} " + "x" * 150)
    proc = _hook(env, "prompt", "--max-chars", "2000", extra_env={"NEXUS_AGENT": "lyra"})
    assert proc.returncode == 0, proc.stderr
    assert "nexus brief for lyra" in proc.stdout
    assert len(proc.stdout) <= 2001


def test_every_failure_exits_0_with_one_readable_line(env: Env) -> None:
    cases = [
        ("bogus-event", "--agent", "lyra"),
        ("prompt",),  # no agent
        ("prompt", "--agent"),  # a flag without its value
        ("prompt", "--agent", "nobody"),  # unknown agent
        ("prompt", "--agent", "../etc"),  # a path as a name
        ("prompt", "--agent", "lyra", "--vault", str(env.vault.root / "missing")),
        ("prompt", "--agent", "lyra", "--max-chars", "lots"),
    ]
    for args in cases:
        proc = _hook(env, *args, extra_env={"NEXUS_AGENT": ""})
        assert proc.returncode == 0, (args, proc.stderr)
        assert proc.stdout.startswith("nexus: the live context could not be loaded:"), (args, proc.stdout)
        assert "Traceback" not in proc.stdout + proc.stderr, args
