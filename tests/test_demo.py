"""The demo night (agents/demo.py) as a real run: its morning handoff holds every item, links resolve."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from test_handoff import assert_links_resolve

ROOT = Path(__file__).resolve().parent.parent


def test_demo_night_handoff_holds_every_item(tmp_path: Path) -> None:
    vault = tmp_path / "demo-vault"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_")}
    scratch = tmp_path / "tmp"  # the demo's temporary folders go here: it must leave none behind
    scratch.mkdir()
    env["TMPDIR"] = str(scratch)
    proc = subprocess.run(
        [sys.executable, "-W", "error", str(ROOT / "agents" / "demo.py"), str(vault)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        cwd=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    # the transcript shows the real commands being run
    for command in (
        "$ nexus decide",
        "$ nexus log append",
        "$ nexus log read",
        "$ nexus state set",
        "$ nexus checkpoint show",
        "$ nexus handoff",
        "killed with SIGKILL",
    ):
        assert command in out, command
    assert "the project state is at version 1, not 0" in out  # the stale edit was refused
    # the night reads true; the keys stay beside the vault (outside it), and the demo says how to use them
    assert os.listdir(scratch) == [] and sorted(os.listdir(tmp_path)) == ["demo-keys", "demo-vault", "tmp"]
    keys = tmp_path / "demo-keys"
    assert f"keys: {keys}" in out
    assert f"export NEXUS_VAULT={vault} NEXUS_HOME={keys}" in out
    after = subprocess.run(  # acting as one of its agents afterwards, as the demo says
        [
            sys.executable,
            "-m",
            "nexus",
            "log",
            "append",
            "--agent",
            "ella",
            "--channel",
            "parser",
            "--type",
            "note",
            "--summary",
            "Back in the morning",
        ],
        capture_output=True,
        text=True,
        env=dict(env, NEXUS_VAULT=str(vault), NEXUS_HOME=str(keys)),
        timeout=60,
    )
    assert after.returncode == 0, after.stderr
    headers = re.findall(r"── (\d\d:\d\d:\d\dZ) · ", out)
    assert len(headers) >= 9 and headers == sorted(headers)  # each scene headed with its real time
    assert not re.search(r"── \d\d:\d\d · ", out)  # no story clock the entries contradict
    assert "$ echo '- Release: after the parser port lands (sam)' >> state/project.md   # sam" in out
    for line in out.splitlines():  # every command shown is followed by its output or says why not
        assert not line.startswith("$ nexus decisions --json"), line
    killed = out[: out.index("killed with SIGKILL")]
    assert killed.splitlines()[-2].strip() == "[ella] checkpoint: grammar rules ported"
    handoffs = sorted((vault / "handoff").glob("*.md"))
    assert len(handoffs) == 1
    text = handoffs[0].read_text(encoding="utf-8")
    assert "# Morning handoff" in out  # printed as well as written
    # per-agent work, grouped and linked
    assert "### ella" in text and "### lyra" in text
    assert "progress: parser tests green (4/4)" in text
    # decisions made and superseded
    assert "D-0002" in text and "since superseded by D-0002" in text
    # corrections, and who has not acknowledged them
    assert "it must say 3.11 — **not acknowledged by ella**" in text
    assert "D-0001 breaks every CI job — acknowledged by all" in text
    # the race and its reconciliation; no spurious ones
    assert "## Races" in text and "- reconciled by lyra: Reconciled: lyra takes the flaky test" in text
    assert "- none unreconciled" in text
    # checkpoints: the crash and the resume, one still in progress
    assert "ella recovered after a crash" in text
    assert "in progress: lyra — Fix the flaky watcher test" in text
    assert "✓ done: ella" in text
    # state changes, including the person's edit in Obsidian and the refused stale edit
    assert "v3 by sam (a person, in Obsidian): edited by hand: Release: after the parser port lands" in text
    assert "refused a stale edit by lyra" in text
    # integrity (verify) and what waits for a person
    assert "integrity clean" in text
    assert "## Waiting for you" in text and "open question from lyra" in text
    assert (
        "1 fact(s) wait for your approval" in text
        and "lyra · failure: CI runners have no OS keychain" in text
    )
    assert_links_resolve(vault, text)
    # the vault itself is consistent: verify clean, and the register lists both decisions
    verify = subprocess.run(
        [sys.executable, "-m", "nexus", "--vault", str(vault), "verify", "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert verify.returncode == 0, verify.stdout
    assert json.loads(verify.stdout)["ok"]
    register = (vault / "Decisions.md").read_text(encoding="utf-8")
    assert "## Active (1)" in register and "## Superseded (1)" in register


def test_the_demo_puts_keys_in_nexus_home_when_set_else_beside_the_vault(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "agents"))
    try:
        import demo
    finally:
        sys.path.remove(str(ROOT / "agents"))
    assert demo.key_home({"NEXUS_HOME": str(tmp_path / "home")}, tmp_path / "v") == (tmp_path / "home", True)
    assert demo.key_home({}, tmp_path / "demo-vault") == (tmp_path / "demo-keys", False)
    assert demo.key_home({}, tmp_path / "night") == (tmp_path / "night-keys", False)
