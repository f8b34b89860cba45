"""`nexus-hook`: what Claude Code and Codex run on their hook events. Each event is fed the runtime's
documented stdin JSON from a folder outside the vault (the vault and keys passed on the command line,
as `nexus setup` writes them), and stdout is parsed the way that runtime parses it. It ALWAYS exits 0,
because both runtimes treat exit code 2 as "block the agent"."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Env, spy_reads

from nexus.keys import identity
from nexus.ledger import log
from nexus.memory import bank
from nexus.project import checkpoints
from nexus.team.session import record_path

EVENT_NAMES = {
    "session-start": "SessionStart",
    "prompt": "UserPromptSubmit",
    "pre-compact": "PreCompact",
    "stop": "Stop",
    "session-end": "SessionEnd",
}


def _hook(
    env: Env,
    *args: str,
    stdin: str = "",
    cwd: Path | None = None,
    extra_env: dict[str, str] | None = None,
    wired: bool = True,
    importtime: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``nexus-hook ARGS`` in a process of its own, wired to this vault and keys (``wired``);
    ``importtime``: under ``-X importtime``, the modules it imported listed on stderr."""
    run_env = env.environ
    run_env.pop("NEXUS_VAULT", None)
    run_env.pop("NEXUS_HOME", None)
    run_env.update(extra_env or {})
    where = ["--vault", str(env.vault.root), "--home", str(env.keys_home)] if wired else []
    traced = ["-X", "importtime"] if importtime else []
    return subprocess.run(
        [sys.executable, "-W", "error", *traced, "-m", "nexus.surfaces.hooks", *args, *where],
        input=stdin,
        capture_output=True,
        text=True,
        env=run_env,
        timeout=60,
        cwd=cwd,
    )


def _stdin(runtime: str, event: str, outside: Path, session: str = "s-1", **fields: Any) -> str:
    """The event JSON each runtime documents for its hooks."""
    data: dict[str, Any] = {
        "session_id": session,
        "transcript_path": str(outside / "t.jsonl"),
        "cwd": str(outside),
        "hook_event_name": EVENT_NAMES[event],
    }
    if runtime == "claude-code":
        data["permission_mode"] = "default"
    else:  # codex adds the model and the turn
        data.update(model="gpt-5-codex", turn_id="turn-1")
    data.update(fields)
    return json.dumps(data)


def _parse(runtime: str, event: str, proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """What the runtime takes from a hook's exit 0 stdout: context added, a block and its reason."""
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    if not out:
        return {"context": "", "block": None}
    try:
        data = json.loads(out)
    except ValueError:
        # Claude Code adds plain stdout as context for SessionStart and UserPromptSubmit only; Codex
        # expects JSON.
        assert runtime == "claude-code" and event in ("session-start", "prompt"), out
        return {"context": out, "block": None}
    assert isinstance(data, dict)
    specific = data.get("hookSpecificOutput") or {}
    if specific:
        assert specific["hookEventName"] == EVENT_NAMES[event]
        assert event in ("session-start", "prompt"), "only these events take additionalContext"
    block = data.get("reason") if data.get("decision") == "block" else None
    return {
        "context": specific.get("additionalContext", ""),
        "block": block,
        "system": data.get("systemMessage"),
    }


@pytest.mark.parametrize("runtime", ["claude-code", "codex"])
def test_every_event_from_outside_the_vault(env: Env, tmp_path: Path, runtime: str) -> None:
    outside = tmp_path / "project"
    outside.mkdir()
    first = env.append("ella", "parser port started", channel="parser").located.entry.id

    def hook(event: str, *extra: str, **fields: Any) -> dict[str, Any]:
        proc = _hook(
            env,
            event,
            "--agent",
            "lyra",
            *extra,
            stdin=_stdin(runtime, event, outside, **fields),
            cwd=outside,
        )
        return _parse(runtime, event, proc)

    # SessionStart: the whole brief, with what the others wrote
    started = hook("session-start", source="startup")
    assert "nexus brief for lyra" in started["context"] and first in started["context"]
    assert len(started["context"]) <= 10_000
    # UserPromptSubmit: nothing new -> nothing at all
    assert hook("prompt", prompt="carry on") == {"context": "", "block": None}
    # something new -> exactly that, complete (summary, body, what is owed)
    question = env.append("ella", "which queue library?", type="question", body="redis or nats").located
    note = env.append("ella", "benchmarks are in", body="p50 12 ms").located
    delta = hook("prompt", prompt="and now?")["context"]
    assert question.entry.id in delta and note.entry.id in delta and "redis or nats" in delta
    assert "p50 12 ms" in delta and "acknowledgement" in delta
    assert delta.count(question.entry.id) == 1  # owed and unread: shown once
    assert "Identity" not in delta and first not in delta  # nothing already told
    assert hook("prompt", prompt="again") == {"context": "", "block": None}
    # a decision by another agent is new too
    env.run(
        "decide",
        "--agent",
        "ella",
        "--title",
        "Use NATS",
        "--decision",
        "NATS for the queue.",
        "--rationale",
        "Already deployed.",
    )
    assert "Use NATS" in hook("prompt", prompt="port the queue to NATS")["context"]
    # Stop: never blocks by default
    assert hook("stop", stop_hook_active=False) == {"context": "", "block": None}
    # opt-in: blocks once, with a reason, when lyra wrote nothing this turn; never when stop_hook_active
    blocked = hook("stop", "--block-without-entry", stop_hook_active=False)
    assert blocked["block"] and "log entry" in blocked["block"]
    assert hook("stop", "--block-without-entry", stop_hook_active=True)["block"] is None
    env.append("lyra", "NATS it is", type="decision", ack=(question.entry.id,))
    assert hook("stop", "--block-without-entry", stop_hook_active=False)["block"] is None
    # PreCompact: the checkpoint is saved; SessionStart after compact carries it
    assert hook("pre-compact", trigger="auto")["context"] == ""
    cp = checkpoints.load(env.vault, "lyra")
    assert cp is not None and cp.task == "port the queue to NATS" and "compacted (auto)" in cp.notes
    resumed = hook("session-start", source="compact")["context"]
    assert "Your last checkpoint" in resumed and "port the queue to NATS" in resumed
    if runtime == "claude-code":  # SessionEnd: the session's decisions go to the bank, pending review
        assert hook("session-end", reason="exit")["context"] == ""
        from nexus.memory import bank

        kept = [f for f in bank.facts_of(env.vault, "lyra") if f.status == "pending"]
        assert [f.content.split("\n")[0] for f in kept] == ["NATS it is"]
        hook("session-end", reason="exit")
        assert len(bank.facts_of(env.vault, "lyra")) == 1  # once


def test_two_sessions_are_told_separately(env: Env, tmp_path: Path) -> None:
    q = env.append("ella", "review my PR?", type="question").located.entry.id
    for sid in ("a", "b"):
        got = _parse(
            "claude-code",
            "session-start",
            _hook(env, "session-start", "--agent", "lyra", stdin=json.dumps({"session_id": sid})),
        )
        assert q in got["context"]
    # owed stays owed, but each session has been told: neither repeats it
    for sid in ("a", "b"):
        assert _hook(env, "prompt", "--agent", "lyra", stdin=json.dumps({"session_id": sid})).stdout == ""
    assert log.read_cursor(env.vault, "lyra").seen is not None


def test_a_prompt_in_a_session_nexus_saw_no_start_of_is_its_start(env: Env) -> None:
    """A runtime wired without session-start for a new session (Gemini CLI: one hook fewer before the
    first model request) gets the whole brief from the first prompt; the next, nothing new, is quiet."""
    env.append("ella", "the lexer is done")
    first = _hook(env, "prompt", "--agent", "lyra", stdin=json.dumps({"session_id": "g", "prompt": "go"}))
    got = _parse("claude-code", "prompt", first)
    assert got["context"].startswith("# nexus brief for lyra") and "the lexer is done" in got["context"]
    again = _hook(env, "prompt", "--agent", "lyra", stdin=json.dumps({"session_id": "g", "prompt": "on"}))
    assert again.returncode == 0 and again.stdout == ""
    env.append("ella", "the parser is next")
    news = _parse(
        "claude-code",
        "prompt",
        _hook(env, "prompt", "--agent", "lyra", stdin=json.dumps({"session_id": "g"})),
    )
    assert news["context"].startswith("# nexus: new since your last turn") and "parser" in news["context"]


def test_the_agent_can_come_from_the_environment_and_the_budget_is_kept(env: Env) -> None:
    for i in range(60):
        env.append("ella", f"progress report number {i} " + "x" * 150)
    proc = _hook(env, "session-start", "--max-chars", "2000", extra_env={"NEXUS_AGENT": "lyra"})
    text = _parse("codex", "session-start", proc)["context"]
    assert "nexus brief for lyra" in text and len(text) <= 2000


def test_every_failure_exits_0_with_one_readable_line(env: Env, tmp_path: Path) -> None:
    cases = [
        ("bogus-event", "--agent", "lyra"),
        ("prompt",),  # no agent
        ("prompt", "--agent"),  # a flag without its value
        ("prompt", "--agent", "nobody"),  # unknown agent
        ("session-start", "--agent", "../etc"),  # a path as a name
        ("prompt", "--agent", "lyra", "--vault", str(env.vault.root / "missing")),
        ("prompt", "--agent", "lyra", "--max-chars", "lots"),
        ("pre-compact", "--agent", "nobody"),
    ]
    for args in cases:
        proc = _hook(env, *args, extra_env={"NEXUS_AGENT": ""}, cwd=tmp_path, wired=False, stdin="{not json")
        assert proc.returncode == 0, (args, proc.stderr)
        assert len(proc.stdout.strip().split("\n")) == 1 and len(proc.stderr.strip().split("\n")) == 1, args
        data = json.loads(proc.stdout)
        line = data.get("systemMessage") or data["hookSpecificOutput"]["additionalContext"]
        assert line.startswith("nexus: ") and "\n" not in line, (args, line)
        assert "Traceback" not in proc.stdout + proc.stderr, args
    assert (
        "could not be loaded"
        in json.loads(_hook(env, "prompt", "--agent", "nobody").stdout)["hookSpecificOutput"][
            "additionalContext"
        ]
    )


def test_library_defaults_are_the_settings_defaults() -> None:
    """A library parameter with a default takes it from settings.DEFAULTS: the values live once."""
    import inspect

    from nexus import settings
    from nexus.team import acks, brief, handoff, races, session

    takes_settings: tuple[Callable[..., object], ...] = (brief.build, handoff.build)
    for fn in takes_settings:
        assert inspect.signature(fn).parameters["settings"].default is settings.DEFAULTS, fn
    per_turn: tuple[Callable[..., object], ...] = (session.start, session.turn)
    for fn in per_turn:  # (None: the defaults, imported only then; the quiet per-turn hook needs none)
        assert inspect.signature(fn).parameters["settings"].default is None, fn
    takes_window: tuple[Callable[..., object], ...] = (
        acks.owed,
        acks.unacknowledged,
        races.find_races,
        races.agent_races,
    )
    for fn in takes_window:
        params = inspect.signature(fn).parameters
        window = params.get("race_window") or params["window_seconds"]
        assert window.default == settings.DEFAULTS.race_window_seconds, fn
        assert params["ack_types"].default == settings.DEFAULTS.ack_types, fn


def test_a_turn_after_hundreds_of_new_races_reads_only_what_it_shows(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two agents writing at once without reading make a race of every pair (O(n²)); the next turn
    lists what fits its share of the budget, counts the rest, and reads back only what it lists."""
    from nexus.settings import Settings
    from nexus.team import races, session

    session.start(env.vault, "ella", "s-1")
    for i in range(25):
        env.append("ella", f"ella's step {i}")
        env.append("lyra", f"lyra's step {i}")
    total = len(races.agent_races(env.vault, "ella"))
    assert total > 100
    read_back = spy_reads(monkeypatch)
    text = session.turn(env.vault, "ella", "s-1", Settings(brief_max_chars=4000))
    shown = text.count("- RACE:")
    assert f"## New races: {total}\n" in text and 0 < shown < total
    assert f"… {total - shown} more: run `nexus log owed --agent ella` and `nexus races --unresolved`" in text
    assert len(text) <= 4000
    assert len(read_back) <= 2 * (shown + 1)  # (the one that did not fit was read, then counted)
    monkeypatch.undo()
    assert session.turn(env.vault, "ella", "s-1") == ""  # told once, the omitted ones as a count


def test_a_stop_with_nothing_appended_since_the_turn_began_reads_nothing(env: Env, tmp_path: Path) -> None:
    """Codex's Stop retains (`--retain`) after every turn: after a turn in which nothing was appended it
    answers from a few stats, importing neither the workspace's settings nor the bank; after a turn
    with a decision it retains it."""
    outside = tmp_path / "outside"
    outside.mkdir()

    def run(event: str, *extra: str) -> subprocess.CompletedProcess[str]:
        data = {"session_id": "s-9", "cwd": str(outside), "prompt": "go"}
        return _hook(env, event, "--agent", "lyra", *extra, stdin=json.dumps(data), importtime=True)

    assert run("session-start").returncode == 0
    quiet = run("stop", "--retain")
    assert quiet.returncode == 0 and quiet.stdout == ""
    assert "nexus.workspace" not in quiet.stderr and "nexus.memory.bank" not in quiet.stderr
    env.run(
        "decide", "--agent", "lyra", "--title", "Queue", "--decision", "use a queue", "--rationale", "load"
    )
    loud = run("stop", "--retain")
    assert loud.returncode == 0 and loud.stdout == "" and "nexus.memory.bank" in loud.stderr
    assert [f.type for f in bank.facts_of(env.vault, "lyra")] == ["decision"]


def test_a_session_start_takes_checked_signatures_from_the_memo(env: Env, tmp_path: Path) -> None:
    """A signature checked once on this machine is taken from its memo of checked signatures
    (``--home``): a session start whose entries were all checked before never loads the signature
    library, and still shows them as their authors' words."""
    outside = tmp_path / "outside"
    outside.mkdir()
    identity.add(env.vault, env.keys_home, "maya")
    for i in range(3):
        env.append("ella", f"checked note {i}")

    def start(agent: str) -> subprocess.CompletedProcess[str]:
        data = {"session_id": f"s-{agent}", "cwd": str(outside), "source": "startup"}
        return _hook(env, "session-start", "--agent", agent, stdin=json.dumps(data), importtime=True)

    first = start("lyra")  # checks ella's three entries and remembers them
    assert first.returncode == 0 and "— checked note 2 [" in first.stdout
    other = start("maya")  # the same three, unread by maya
    assert other.returncode == 0, other.stderr
    assert all(f"— checked note {i} [" in other.stdout for i in range(3)), other.stdout
    assert "UNVERIFIED" not in other.stdout.upper()
    assert "cryptography" not in other.stderr


def test_a_quiet_prompt_names_its_record_without_loading_openssl(env: Env, tmp_path: Path) -> None:
    """A prompt with nothing new answers from a few stats and its session's record, whose name is a
    SHA-256 of agent and session: taken from CPython's own, the same digest as hashlib's, so the
    quiet turn never loads OpenSSL (hashlib, 5 to 30 ms in a fresh process)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    data = json.dumps({"session_id": "s-q", "cwd": str(outside), "prompt": "go"})
    assert _hook(env, "session-start", "--agent", "lyra", stdin=data).returncode == 0
    quiet = _hook(env, "prompt", "--agent", "lyra", stdin=data, importtime=True)
    assert quiet.returncode == 0 and quiet.stdout == "", quiet.stderr
    assert "nexus.team.session" in quiet.stderr and "_hashlib" not in quiet.stderr
    record = record_path(env.vault, "lyra", "s-q")
    assert record.is_file() and record.name == hashlib.sha256(b"lyra\0s-q").hexdigest()[:24] + ".json"
