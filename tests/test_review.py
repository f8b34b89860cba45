"""Ticking a checkbox in memory/REVIEW.md promotes the fact: the real watcher, real file edits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from nexus.memory import bank, facts


def _wait_for(what: str, cond: Callable[[], bool], deadline: float = 60.0) -> None:
    """Poll until ``cond()`` holds; fails (not a timing assertion: the bound is generous)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


@pytest.fixture
def watcher(env: Env) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-W", "error", "-m", "nexus", "watch", "--rescan", "1", "--json"],
        env=env.environ,
        cwd=str(env.vault.root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the watcher prints a "ready" event after its first full pass
    assert '"ready"' in line, line + (proc.stderr.read() if proc.stderr else "")
    yield proc
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert '"event": "error"' not in out, out


def _tick(path: Path, fact_id: str, *, atomic: bool) -> None:
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    hit = [i for i, line in enumerate(lines) if line.endswith(f"^{fact_id}")]
    assert len(hit) == 1
    lines[hit[0]] = lines[hit[0]].replace("- [ ]", "- [x]", 1)
    new = "\n".join(lines)
    if atomic:  # like an editor that saves through a temporary file and a rename
        tmp = path.with_name(".REVIEW.md.tmp")
        tmp.write_text(new, encoding="utf-8")
        os.replace(tmp, path)
    else:  # an in-place save
        with open(path, "r+", encoding="utf-8") as f:
            f.write(new)
            f.truncate()


@pytest.mark.parametrize("atomic", [False, True], ids=["in-place-save", "atomic-save"])
def test_ticking_a_checkbox_promotes_the_fact(env: Env, watcher: subprocess.Popen[str], atomic: bool) -> None:
    keep = bank.retain(env.vault, "ella", type="decision", content="Search uses Whoosh; FTS5 is the anchor")
    other = bank.retain(env.vault, "lyra", type="preference", content="Sam wants answers under 5 lines")
    review = env.vault.root / "memory" / "REVIEW.md"
    assert "- [ ] **decision** · ella — Search uses Whoosh" in review.read_text(encoding="utf-8")
    _tick(review, keep.id, atomic=atomic)
    _wait_for("the ticked fact to be approved", lambda: bank.find(env.vault, keep.id).status == "approved")
    done = bank.find(env.vault, keep.id)
    assert done.reviewed_by == "sam" == env.vault.human()
    assert done.reviewed_at and done.fact
    fact = facts.get(env.vault, done.fact)
    assert fact.approved_by == "sam" and fact.approved_at == done.reviewed_at
    assert fact.type == "project" and "Whoosh" in fact.description
    assert fact.source == f"[[agents/ella/bank#^{keep.id}]]"
    index = (env.vault.root / "memory" / "MEMORY-INDEX.md").read_text(encoding="utf-8")
    assert f"[[memory/{fact.name}|{fact.name}]]" in index
    # the unticked one stays pending; the approved one leaves the review note
    assert bank.find(env.vault, other.id).status == "pending"
    _wait_for("the review note to be rewritten", lambda: f"^{keep.id}" not in review.read_text("utf-8"))
    assert f"^{other.id}" in review.read_text(encoding="utf-8")


def test_stale_editor_buffer_with_an_old_tick_changes_nothing(
    env: Env, watcher: subprocess.Popen[str]
) -> None:
    f = bank.retain(env.vault, "ella", type="fact", content="The CI box has two cores")
    review = env.vault.root / "memory" / "REVIEW.md"
    stale = review.read_text(encoding="utf-8").replace("- [ ]", "- [x]")
    bank.approve(env.vault, f.id, "sam")
    n_facts = len(facts.all_facts(env.vault))
    review.write_text(stale, encoding="utf-8")  # an editor saves its old buffer with the tick
    _wait_for("the note to be rewritten", lambda: f"^{f.id}" not in review.read_text("utf-8"))
    assert len(facts.all_facts(env.vault)) == n_facts  # promoted once, not twice


def test_apply_review_note_without_a_human_identity(env: Env) -> None:
    f = bank.retain(env.vault, "ella", type="fact", content="Deploys happen on Tuesdays")
    review = env.vault.root / "memory" / "REVIEW.md"
    review.write_text(review.read_text(encoding="utf-8").replace("- [ ]", "- [x]"), encoding="utf-8")
    marker = env.vault.root / "nexus.md"
    marker.write_text(
        marker.read_text(encoding="utf-8").replace("human: sam", "human: null"), encoding="utf-8"
    )
    outcome = bank.apply_review_note(env.vault)
    assert not outcome.approved and "no human identity" in outcome.problems[0]
    assert bank.find(env.vault, f.id).status == "pending"


def test_a_rewrite_of_the_note_keeps_a_persons_tick(env: Env) -> None:
    """An agent retaining a fact rewrites the note; a box ticked meanwhile must stay ticked."""
    f = bank.retain(env.vault, "ella", type="fact", content="Deploys happen on Tuesdays")
    review = env.vault.root / "memory" / "REVIEW.md"
    _tick(review, f.id, atomic=False)
    bank.retain(env.vault, "lyra", type="fact", content="Staging is at staging.example")
    text = review.read_text(encoding="utf-8")
    assert "- [x] **fact** · ella — Deploys happen on Tuesdays" in text
    assert "- [ ] **fact** · lyra" in text
    assert [a.id for a in bank.apply_review_note(env.vault).approved] == [f.id]


def test_a_tick_saved_in_place_while_the_watcher_reacts_is_never_lost(
    env: Env, watcher: subprocess.Popen[str]
) -> None:
    """Issue 13, item 10: an editor saving in place truncates the note, then writes it (Node's
    ``fs.writeFile``, as Obsidian uses). The watcher, woken by the truncate, used to read the empty
    note and rename a fresh one over it from the banks: the person's write then landed in the replaced
    file, the tick reverted, the fact stayed pending (5 ticks lost in 10 with a 5-25 ms pause before
    the write). Played many times with real timing: truncate, a pause, the write; a plain
    ``write_text`` save; an atomic save."""
    import random

    review = env.vault.root / "memory" / "REVIEW.md"
    rng = random.Random(13)
    ids = []
    for i in range(12):
        f = bank.retain(env.vault, "ella", type="fact", content=f"Fact number {i} worth keeping")
        ids.append(f.id)
        time.sleep(rng.random() * 0.05)  # the watcher is busy with the retain's rewrite, or not
        text = review.read_text(encoding="utf-8")
        line = f"**fact** · ella — Fact number {i} "
        new = text.replace(f"- [ ] {line}", f"- [x] {line}")
        assert new != text
        how = i % 3
        if how == 0:  # truncate, a pause, then the write
            with open(review, "w", encoding="utf-8") as fh:
                fh.flush()
                time.sleep(0.005 + rng.random() * 0.02)
                fh.write(new)
        elif how == 1:
            review.write_text(new, encoding="utf-8")
        else:
            _tick(review, f.id, atomic=True)
        _wait_for(f"{f.id} to be approved", _approved(env, f.id))
    assert all(bank.find(env.vault, fid).reviewed_by == "sam" for fid in ids)
    _wait_for("the note to list nothing", lambda: "_Nothing waits for review._" in review.read_text("utf-8"))


def _approved(env: Env, fid: str) -> Callable[[], bool]:
    return lambda: bank.find(env.vault, fid).status == "approved"


def _finish(fh: Any, text: str) -> None:
    fh.write(text)
    fh.close()


def test_a_rewrite_waits_for_a_half_written_note(env: Env) -> None:
    """Without a watcher: the note caught empty (a save between truncate and write) is not rewritten
    from the banks while the save completes; the tick written a moment later is kept."""
    import threading

    f = bank.retain(env.vault, "ella", type="fact", content="Deploys happen on Tuesdays")
    review = env.vault.root / "memory" / "REVIEW.md"
    ticked = review.read_text(encoding="utf-8").replace("- [ ]", "- [x]")
    fh = open(review, "w", encoding="utf-8")  # noqa: SIM115 - the save is finished by the thread
    finish = threading.Timer(0.2, lambda: _finish(fh, ticked))
    finish.start()
    bank.rebuild_review(env.vault)  # an agent's retain rewriting the note at that moment
    finish.join()
    assert review.read_text(encoding="utf-8") == ticked
    assert [a.id for a in bank.apply_review_note(env.vault).approved] == [f.id]
