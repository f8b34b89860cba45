"""Checkpoints: save/show/resume, history, probable crashes, and SIGKILL at random points (200 times)."""

from __future__ import annotations

import calendar
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from conftest import Env

from nexus.errors import InputError
from nexus.project import checkpoints
from nexus.surfaces import cli


def _save(env: Env, agent: str, step: str, *extra: str, check: bool = True, process: bool = False) -> object:
    return env.run(
        "checkpoint",
        "save",
        "--agent",
        agent,
        "--task",
        "Port the parser",
        "--step",
        step,
        "--next",
        f"after {step}",
        *extra,
        check=check,
        process=process,
    )


def test_save_show_history_and_resume(env: Env, tmp_path: object) -> None:
    notes = env.vault.root.parent / "notes.md"
    notes.write_text("Open question: keep the old AST?\n", encoding="utf-8")
    _save(
        env,
        "ella",
        "lexer ported",
        "--files",
        "parser/lexer.py",
        "parser/tokens.py",
        "--notes-file",
        str(notes),
    )
    env.run("log", "read", "--agent", "lyra")
    env.append("lyra", "the grammar changed under you")
    _save(env, "ella", "grammar ported")
    shown = env.run("checkpoint", "show", "--agent", "ella", "--history", "--json").json()
    assert shown["step"] == "grammar ported" and shown["seq"] == 2 and not shown["probable_crash"]
    assert [h["step"] for h in shown["history"]] == ["lexer ported", "grammar ported"]
    assert shown["history"][0]["files"] == ["parser/lexer.py", "parser/tokens.py"]
    assert shown["history"][0]["notes"] == "Open question: keep the old AST?\n"
    got = env.run("checkpoint", "resume", "--agent", "ella", "--json").json()
    assert got["checkpoint"]["next"] == "after grammar ported"
    types = [e["type"] for e in env.run("log", "tail", "-n", "10", "--json").json() if e["agent"] == "ella"]
    assert types == ["checkpoint", "resume"]  # first save logged (new task); progress not; resume logged
    # the note a person reads
    text = (env.vault.root / "agents" / "ella" / "checkpoint.md").read_text(encoding="utf-8")
    assert "> **Next:** after grammar ported" in text and "[[agents/ella/checkpoint-history]]" in text


def test_resume_returns_entries_written_since_the_checkpoint(env: Env) -> None:
    before = env.append("lyra", "before the checkpoint").located.entry.id
    time.sleep(1.1)  # checkpoint times have one-second precision: keep "before" strictly earlier
    _save(env, "ella", "step one")
    after = env.append("lyra", "after the checkpoint").located.entry.id
    got = env.run("checkpoint", "resume", "--agent", "ella", "--no-log", "--json").json()
    ids = [e["id"] for e in got["since"]]
    assert after in ids and before not in ids and got["resume_entry"] is None


def test_status_changes_are_logged_and_flags(env: Env) -> None:
    _save(env, "ella", "started")
    _save(env, "ella", "still going")
    _save(env, "ella", "waiting on a person", "--status", "blocked")
    _save(env, "ella", "finished", "--status", "done")
    summaries = [e["summary"] for e in env.run("log", "tail", "-n", "10", "--json").json()]
    assert [s.split(":")[0] for s in summaries] == [
        "checkpoint in-progress",
        "checkpoint blocked",
        "checkpoint done",
    ]
    done = env.run("checkpoint", "show", "--agent", "ella", "--stale-minutes", "0", "--json").json()
    assert done["probable_crash"] is False  # done is never a crash


def test_a_stale_in_progress_checkpoint_is_flagged_in_show_and_brief(env: Env) -> None:
    # a real session process killed with SIGKILL after its checkpoint
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess,sys,time; subprocess.run([sys.executable,'-m','nexus','checkpoint','save',"
            "'--agent','ella','--task','T','--step','half','--next','rest'],check=True,stdout=subprocess.DEVNULL);"
            " print('saved',flush=True);"
            " time.sleep(60)",
        ],
        env=env.environ,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "saved"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
    shown = env.run("checkpoint", "show", "--agent", "ella", "--stale-minutes", "0").stdout
    assert "probable crash" in shown
    fresh = env.run("checkpoint", "show", "--agent", "ella", "--json").json()
    assert fresh["probable_crash"] is False  # the default 30 minutes have not passed
    env2 = dict(env.environ, NEXUS_STALE_MINUTES="0")
    brief = subprocess.run(
        [sys.executable, "-m", "nexus", "brief", "--agent", "ella", "--peek"],
        env=env2,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "PROBABLE CRASH" in brief and "nexus checkpoint resume --agent ella" in brief


def test_bad_input_changes_nothing(env: Env) -> None:
    for args, needle in (
        (("--agent", "nobody", "--task", "T", "--step", "S", "--next", "N"), "unknown agent"),
        (("--agent", "ella", "--task", "", "--step", "S", "--next", "N"), "task is empty"),
        (("--agent", "ella", "--task", "T %% x", "--step", "S", "--next", "N"), "%%"),
        (("--agent", "ella", "--task", "T", "--step", "S\u202e", "--next", "N"), "U+202E"),
        (
            ("--agent", "ella", "--task", "T", "--step", "S", "--next", "N", "--status", "later"),
            "invalid choice",
        ),
    ):
        result = env.run("checkpoint", "save", *args, check=False)
        assert result.returncode != 0 and needle in result.stderr, result.stderr
    assert not (env.vault.root / "agents" / "ella" / "checkpoint.md").exists()
    assert not (env.vault.root / "agents" / "ella" / "checkpoint-history.md").exists()


def test_save_imports_no_yaml_and_no_crypto(env: Env) -> None:
    _save(env, "ella", "first")  # the first save of a task is logged (signed); later ones are not
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "nexus",
            "checkpoint",
            "save",
            "--agent",
            "ella",
            "--task",
            "Port the parser",
            "--step",
            "second",
            "--next",
            "third",
        ],
        env=env.environ,
        capture_output=True,
        text=True,
        check=True,
    )
    modules = {
        line.split("|")[-1].strip().split(".")[0]
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "json" in modules  # the probe sees imports at all
    assert not modules & {"yaml", "frontmatter", "cryptography", "whoosh", "watchdog", "markdown_it", "mcp"}


def _forked_save(step: str, files: str) -> int:
    """A writer killed mid-save: a child of this process (no interpreter start-up, so the kill lands
    in the save and not in imports) running ``nexus checkpoint save`` through the CLI's ``main``."""
    argv = ["checkpoint", "save", "--agent", "ella", "--task", "Port the parser"]
    argv += ["--step", step, "--next", f"after {step}", "--files", files]
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            code = cli.main(argv) or 0
        finally:
            os._exit(code)
    return pid


def test_sigkill_during_save_200_times_leaves_old_or_new(env: Env) -> None:
    """A save killed at a random moment leaves checkpoint.md parsing as the old or the new version."""
    rng = random.Random(4)
    path = env.vault.root / "agents" / "ella" / "checkpoint.md"
    _save(env, "ella", "step-0")
    _save(env, "ella", "step-real", process=True)  # a whole save in a process of its own, not killed
    # how long a whole save takes here, to spread the kills over its lifetime
    t0 = time.perf_counter()
    _, status = os.waitpid(_forked_save("step-calibrate", "f0.py"), 0)
    duration = time.perf_counter() - t0
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    current = checkpoints.load(env.vault, "ella")
    assert current is not None and current.step == "step-calibrate"
    outcomes = {"old": 0, "new": 0}
    for i in range(1, 201):
        step = f"step-{i}"
        pid = _forked_save(step, f"f{i}.py")
        time.sleep(rng.uniform(0.0, 1.1) * duration)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        now = checkpoints.parse(path.read_text(encoding="utf-8"), "checkpoint.md")  # always parses
        assert current is not None
        old_fields = {k: v for k, v in current.to_json().items() if k != "saved"}
        new_fields = {k: v for k, v in now.to_json().items() if k != "saved"}
        if new_fields == old_fields:
            outcomes["old"] += 1
        else:
            assert now.step == step and now.next == f"after {step}" and now.files == (f"f{i}.py",)
            assert now.seq > current.seq
            outcomes["new"] += 1
            current = now
    # both outcomes happened: the kills landed before and after the rename
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes
    # the history survived every kill: it parses, and it holds every version the note ever showed
    history = checkpoints.history(env.vault, "ella")
    seqs = [h.seq for h in history]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert current is not None and current.seq in seqs
    # and the next save works normally
    _save(env, "ella", "after the storm")
    final = checkpoints.load(env.vault, "ella")
    assert final is not None and final.step == "after the storm" and final.seq == max(seqs) + 1
    # temp files left by killed writers are swept by the next save
    assert not [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_checkpoint_time_counts_as_calendar_timegm() -> None:
    """``epoch`` counts days itself (the session start does not import ``calendar``): the same seconds
    as ``calendar.timegm`` on every day of four centuries' leap rules, and one line on a bad month."""
    for year in (1970, 1999, 2000, 2024, 2026, 2100, 2400):
        for month in range(1, 13):
            for day in (1, 15, 28, calendar.monthrange(year, month)[1]):
                ts = f"{year:04d}-{month:02d}-{day:02d}T23:59:58Z"
                assert checkpoints.epoch(ts) == calendar.timegm((year, month, day, 23, 59, 58, 0, 0, 0)), ts
    with pytest.raises(InputError, match="bad time"):
        checkpoints.epoch("2026-13-01T00:00:00Z")
