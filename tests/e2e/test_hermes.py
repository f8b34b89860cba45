"""Hermes Agent 0.19.0 plays a whole session with nexus: wired by ``nexus setup hermes`` (the user's
scope: Hermes reads no project configuration), run as ``hermes chat -Q -q`` turn by turn on one
session (``--resume``), against a scripted model on 127.0.0.1 that records what reached it.

The six moments: the brief in the first request; a new entry between two prompts in the next prompt
only, and nothing added when nothing is new; a provider tool call leaving a signed entry with ``nexus
verify`` clean; an acknowledgement; a compaction saving the checkpoint, with the rebuilt brief carrying
it; the session's end retaining its decision in the bank, pending approval."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nexus.ledger import log
from nexus.memory import bank
from nexus.project import checkpoints

from .model_chat import ModelServer, Reply
from .runtime_hermes import Hermes, hermes_command

pytestmark = pytest.mark.e2e

DISTINCT = "zanzibar"  # a word only lyra's earlier entry has
NEWS = "obsidian walrus"  # only in lyra's entry written between two prompts


def _summary_request(body: dict[str, Any]) -> bool:
    """Hermes' own compaction request (its summariser), which is not a turn of the session."""
    return not body.get("tools") and "summarization agent" in json.dumps(body.get("messages", [])[-1:])


def _nexus(
    env: Any, hermes: Hermes, *args: str, nexus_on_path: bool = True
) -> subprocess.CompletedProcess[str]:
    """A ``nexus`` command as the user runs it, in that user's environment."""
    return subprocess.run(
        [sys.executable, "-m", "nexus", "--vault", str(env.vault.root), *args],
        capture_output=True,
        text=True,
        env={**hermes.env(nexus_on_path=nexus_on_path), "NEXUS_HOME": str(env.keys_home)},
        cwd=hermes.project,
        timeout=60,
    )


def _setup(env: Any, hermes: Hermes, *args: str) -> subprocess.CompletedProcess[str]:
    return _nexus(env, hermes, "setup", "hermes", *args)


@pytest.fixture
def hermes(tmp_path: Path) -> Hermes:
    hermes_command()  # a missing runtime fails here, in one line
    h = Hermes(tmp_path / "hermes")
    for d in (h.home, h.hermes_home, h.root / "tmp", h.project):
        d.mkdir(parents=True)
    return h


def test_a_whole_hermes_session_with_nexus(env: Any, hermes: Hermes) -> None:
    earlier = env.append("lyra", f"the {DISTINCT} lexer is ready", channel="parser").located.entry.id
    wired = _setup(env, hermes, "--agent", "ella")
    assert wired.returncode == 0, wired.stderr
    assert str(hermes.hermes_home / "plugins" / "nexus" / "__init__.py") in wired.stdout
    check = _nexus(env, hermes, "setup", "--check", "hermes", "--agent", "ella")
    assert check.returncode == 0, check.stdout

    with ModelServer() as model:
        hermes.configure(model.base_url)
        # turn 1: the brief arrives; the model logs an entry and acknowledges lyra's
        model.add(
            Reply(
                tools=[
                    (
                        "nexus_log_append",
                        {"channel": "parser", "type": "note", "summary": "parser port started"},
                    ),
                    ("nexus_acknowledge", {"ids": [earlier], "summary": "lexer noted"}),
                ]
            ),
            "Started.",
        )
        first = hermes.chat("Begin the port")
        assert first.answer == "Started."
        opening = model.chats()[0]
        assert DISTINCT in opening.text("system") and earlier in opening.text("system")
        assert {"nexus_log_append", "nexus_acknowledge", "nexus_checkpoint"} <= set(opening.tool_names)

        # between two prompts lyra writes: it reaches the next prompt, and only that one
        news = env.append("lyra", f"the {NEWS} question: which generator?", channel="parser").located.entry.id
        seen = len(model.chats())
        model.add("Noted.")
        second = hermes.chat("Carry on", resume=first.session_id)
        assert second.session_id == first.session_id
        assert NEWS in model.chats()[seen].last_user and news in model.chats()[seen].last_user

        # nothing new: the prompt goes as typed. Then a decision, and a context too big: Hermes compacts
        seen = len(model.chats())
        model.add(
            Reply(
                tools=[
                    (
                        "nexus_decide",
                        {
                            "title": "Hand-written lexer",
                            "decision": "No generator.",
                            "rationale": "Clearer errors.",
                        },
                    )
                ],
                prompt_tokens=190_000,
            ),
            Reply(text="## Summary\nThe port goes on.", when=_summary_request),
            "Decided.",
        )
        third = hermes.chat("Proceed", resume=first.session_id)
        assert third.answer.endswith("Decided.")  # after "⟳ compacting context…"
        turn = model.chats()[seen]
        assert turn.last_user == "Proceed", turn.last_user[-800:]
        assert NEWS not in turn.text()[turn.text().rfind("Proceed") :]
        after = [r for r in model.chats()[seen + 1 :] if r.body.get("tools")]
        assert any(_summary_request(r.body) for r in model.chats()[seen:]), "Hermes did not compact"
        rebuilt = after[0].text("system")
        assert "session compact" in rebuilt and "Context compacted (hermes)" in rebuilt

    # the tool calls left signed entries; the log verifies
    mine = [x.entry for x in log.tail(env.vault, 50) if x.entry.agent == "ella"]
    appended = [e for e in mine if e.summary == "parser port started"]
    assert len(appended) == 1 and appended[0].sig and appended[0].channel == "parser"
    acks = [e for e in mine if e.type == "ack"]
    assert [a.ack for a in acks] == [(earlier,)]
    assert env.run("verify").returncode == 0
    # the checkpoint the compaction saved
    cp = checkpoints.load(env.vault, "ella")
    assert cp is not None and "Context compacted (hermes)" in cp.notes
    # session end: the decision waits in ella's bank for a person's approval
    kept = bank.facts_of(env.vault, "ella")
    assert [(f.type, f.status) for f in kept] == [("decision", "pending")]
    assert "Hand-written lexer" in kept[0].content


def test_without_nexus_on_path_hermes_says_so_and_check_names_the_fix(env: Any, hermes: Hermes) -> None:
    """The plugin finds nexus as installed (on PATH): where it is not, Hermes runs without it and logs
    why, and ``nexus setup --check hermes`` fails naming the missing piece and the command that adds it."""
    assert _setup(env, hermes, "--agent", "ella").returncode == 0
    with ModelServer() as model:
        hermes.configure(model.base_url)
        model.add("Hello.")
        hermes.chat("Begin", nexus_on_path=False)
        assert "nexus brief for ella" not in model.chats()[0].text("system")
    assert "`nexus` is not on PATH" in hermes.log()
    check = _nexus(env, hermes, "setup", "--check", "hermes", "--agent", "ella", nexus_on_path=False)
    assert check.returncode != 0
    assert "`nexus` is not on PATH" in check.stdout and 'export PATH="' in check.stdout
    # a key the wiring does not reach: Hermes would run without nexus, and --check says why
    key = next(env.keys_home.rglob("ella.pem"))
    key.rename(key.with_name("elsewhere.pem"))
    check = _nexus(env, hermes, "setup", "--check", "hermes", "--agent", "ella")
    assert check.returncode != 0 and "no private key for 'ella'" in check.stdout, check.stdout
