"""Issue 13, item 11: renaming notes in Obsidian (links updated automatically) with `nexus watch`
running. Signed entries and decision notes whose links Obsidian rewrote still verify (reported as a
rename, never as an edit), no history-edit notice is written, and the register never loses a decision."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from conftest import Env, wait_for_rescans


def _obsidian_rename(root: Path, old: str, new: str) -> None:
    """What Obsidian does on a rename with "Automatically update internal links" on: move the note,
    then rewrite every link to it in every note (the whole file, in place), keeping #anchors and
    |aliases."""
    os.rename(root / f"{old}.md", root / f"{new}.md")
    pattern = re.compile(r"\[\[" + re.escape(old) + r"(?=[#|\]])")
    for path in root.rglob("*.md"):
        if ".nexus" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        changed = pattern.sub(lambda _m: f"[[{new}", text)
        if changed != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(changed)


class _Events:
    """The watcher's --json events, read by a thread so a wait never blocks past its deadline."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.items: list[dict[str, object]] = []
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.items.append(json.loads(line))

    def wait(self, cond: Callable[[list[dict[str, object]]], bool], what: str, deadline: float = 60) -> None:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if cond(list(self.items)):
                return
            time.sleep(0.05)
        raise AssertionError(f"gave up waiting for {what}: {self.items}")


def test_renaming_notes_in_obsidian_keeps_signed_content_and_every_decision(env: Env) -> None:
    env.run(
        "decide",
        "--agent",
        "ella",
        "--title",
        "API tokens live in the OS keychain",
        "--decision",
        "Store tokens in the keychain.",
        "--rationale",
        "Files leak.",
    )
    (env.vault.root / "notes").mkdir()
    (env.vault.root / "notes" / "tokens.md").write_text("# Tokens\n\nWhere they live.\n", encoding="utf-8")
    env.run(
        "log",
        "append",
        "--agent",
        "lyra",
        "--channel",
        "security",
        "--type",
        "note",
        "--summary",
        "Read the token notes",
        "--body",
        "See [[notes/tokens]] and [[notes/tokens#Tokens|this]].",
    )
    proc = subprocess.Popen(
        [sys.executable, "-W", "error", "-m", "nexus", "watch", "--rescan", "1", "--json"],
        env=env.environ,
        cwd=str(env.vault.root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    events = _Events(proc)
    try:
        events.wait(lambda ev: any(e["event"] == "ready" for e in ev), "the watcher to be ready")
        env.run(
            "decide",
            "--agent",
            "lyra",
            "--title",
            "Tokens: keychain locally, CI secret store on CI",
            "--decision",
            "Keychain locally, secret store on CI.",
            "--rationale",
            "CI has no keychain.",
            "--supersedes",
            "D-0001",
        )
        d1 = next(p for p in (env.vault.root / "decisions").iterdir() if p.name.startswith("D-0001-"))
        wait_for_rescans(env.vault)  # a whole rescan: the watcher has shadowed every entry
        _obsidian_rename(env.vault.root, f"decisions/{d1.stem}", "decisions/D-0001 API tokens")
        _obsidian_rename(env.vault.root, "notes/tokens", "notes/secrets")

        def settled(ev: list[dict[str, object]]) -> bool:
            renamed = {e["id"] for e in ev if e["event"] == "renamed-link"}
            return len(renamed) >= 3 or any(e["event"] in ("history-edit", "error") for e in ev)

        events.wait(settled, "the watcher to see the three rewritten entries")
        wait_for_rescans(env.vault)  # one more whole rescan: nothing else may follow
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        events.thread.join(timeout=10)
    out = "\n".join(json.dumps(e) for e in events.items)
    assert '"history-edit"' not in out and '"error"' not in out, out + err
    seen = [e for e in events.items if e["event"] == "renamed-link"]
    # D-0001's own decision entry, D-0002's (it links D-0001) and lyra's note were rewritten by the rename.
    assert len({e["id"] for e in seen}) == 3
    segment = next((env.vault.root / "log").glob("*.md")).read_text(encoding="utf-8")
    assert "[[decisions/D-0001 API tokens|D-0001]]" in segment and "[[notes/secrets]]" in segment
    assert "history edit" not in segment
    report = env.run("verify", "--json", check=False).json()
    errors = [p for p in report["problems"] if p["kind"] not in ("renamed", "stray-text", "notice")]
    assert report["ok"] is True and not errors, report
    kinds = [p["kind"] for p in report["problems"]]
    assert kinds.count("renamed") >= 4  # three entries, D-0002's note (its Sources link) and D-0001's name
    # Search says the same as verify and the readers: the rewritten entry is still lyra's, verified.
    hits = env.run("search", "secrets", "--json").json()
    entry_hits = [h for h in hits if h["kind"] == "entry" and h["title"] == "Read the token notes"]
    assert entry_hits and all(h["verified"] is True for h in entry_hits), hits
    decisions = {d["id"]: d for d in env.run("decisions", "--all", "--json").json()}
    assert set(decisions) == {"D-0001", "D-0002"}
    assert decisions["D-0001"]["path"] == "decisions/D-0001 API tokens.md"
    assert decisions["D-0001"]["superseded_by"] == "D-0002"
    # The register keeps working after the rename: a third decision supersedes D-0002.
    env.run(
        "decide",
        "--agent",
        "ella",
        "--title",
        "Tokens in the secret store everywhere",
        "--decision",
        "Secret store.",
        "--rationale",
        "One way.",
        "--supersedes",
        "D-0002",
    )
    assert {d["id"] for d in env.run("decisions", "--all", "--json").json()} == {"D-0001", "D-0002", "D-0003"}


def test_a_link_pointed_elsewhere_by_hand_is_still_an_edit(env: Env) -> None:
    (env.vault.root / "notes").mkdir()
    for name in ("a", "b"):
        (env.vault.root / "notes" / f"{name}.md").write_text(f"# {name}\n", encoding="utf-8")
    env.run(
        "log",
        "append",
        "--agent",
        "lyra",
        "--channel",
        "x",
        "--type",
        "note",
        "--summary",
        "see a",
        "--body",
        "Read [[notes/a]].",
    )
    seg = next((env.vault.root / "log").glob("*.md"))
    seg.write_text(seg.read_text(encoding="utf-8").replace("[[notes/a]]", "[[notes/b]]"), encoding="utf-8")
    report = env.run("verify", "--json", check=False).json()
    assert report["ok"] is False and [p["kind"] for p in report["problems"]] == ["edited"]
    hits = [h for h in env.run("search", "Read", "--json").json() if h["kind"] == "entry"]
    assert hits and all(h["verified"] is False for h in hits), hits
    # A rename recorded afterwards that does not explain this edit changes nothing either.
    from nexus.ledger import renames

    renames.record(env.vault, "notes/c", "notes/b")
    hits = [h for h in env.run("search", "Read", "--json").json() if h["kind"] == "entry"]
    assert hits and all(h["verified"] is False for h in hits), hits
