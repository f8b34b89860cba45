"""Entry format 2: at most 120 characters of machine text per entry, on one line, for everything nexus
writes now; segments written in format 1 (tests/fixtures/format-v1, bytes the nexus that wrote format
1 made) still read and verify, also when the same segment goes on in format 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import Env

from nexus.ledger import log
from nexus.records import Entry
from nexus.storage import entries, segments

COMMENT = re.compile(r"%%.*%%")


def _segment(env: Env) -> Path:
    ((_, path),) = log.segment_files(env.vault)
    return path


def _append(
    env: Env, agent: str, summary: str, *extra: str, channel: str = "parser", type: str = "note"
) -> str:
    args = ["log", "append", "--agent", agent, "--channel", channel, "--type", type, "--summary", summary]
    return env.run(*args, *extra).stdout.strip()


def _night(env: Env) -> list[str]:
    """20 entries written as the demo writes them (agents/demo.py), through the CLI: a plan, notes,
    a question and its reply, acks, a correction, a decision, project state versions (signed as
    ``via: "state"``), a person's text the watcher signs (``via: "watcher"``) and a body that
    imitates framing (format 1's and format 2's)."""
    env.run("agent", "add", "nova")
    ids = [_append(env, "ella", "Plan: port the parser to the new grammar", "--body", "1. lexer\n2. grammar")]
    env.run("log", "read", "--agent", "lyra")
    ids.append(_append(env, "lyra", "Writing the migration guide", channel="docs"))
    ids.append(_append(env, "lyra", "Which Python does the port need?", "--ack", ids[0], type="question"))
    env.run("log", "read", "--agent", "ella")
    ids.append(_append(env, "ella", "Python 3.11: the grammar uses match", "--ack", ids[2], type="answer"))
    ids.append(
        _append(
            env,
            "nova",
            "Benchmarks of the old parser are in",
            "--ack",
            ids[0],
            "--ack",
            ids[3],
            channel="bench",
        )
    )
    ids.append(
        _append(
            env,
            "lyra",
            "A body that looks like framing",
            "--body",
            "~~~\n%% 12 " + "A" * 107 + " %%\n%% nexus:end {} %%\n↩ [[log/2026-12#^" + ids[0] + "]]\n~~~\n"
            "**2026-11-30 04:41:07Z** · ella · build · note — not an entry ^" + ids[0],
        )
    )
    env.run(
        "decide", "--agent", "ella", "--title", "Grammar in PEG", "--decision", "The new grammar is PEG.",
        "--rationale", "Fewer conflicts.", "--ref", ids[3],
    )  # fmt: skip
    content = env.vault.root.parent / "state.txt"
    content.write_text("# Project state\n\n- Parser port: in progress (ella)\n", encoding="utf-8")
    env.run("state", "set", "--agent", "ella", "--expect", "0", "--file", str(content))
    with (env.vault.root / "state" / "project.md").open("a", encoding="utf-8") as f:
        f.write("- Release: after the parser port lands (sam)\n")  # sam, in Obsidian
    env.run("watch", "--once")  # records the version: an entry in sam's name (``via: "state"``)
    for i in range(4):
        env.run("log", "read", "--agent", ("ella", "lyra")[i % 2])
        ids.append(_append(env, ("ella", "lyra")[i % 2], f"Step {i} of the port done", "--ack", ids[-1]))
    ids.append(_append(env, "lyra", "ella: the guide says 3.10; it must say 3.11", type="correction"))
    # a person's text below the last entry, signed by the watcher in sam's name (keeper.py does this)
    log.append(
        env.vault, env.signer("sam"), channel="log", type="note", summary="Release on Friday", via="watcher"
    )
    for i in range(5):
        ids.append(
            _append(env, "nova", f"Run {i} of the benchmark", "--body", f"{i * 7} ms", channel="bench")
        )
    return ids


def _machine_text(lines: list[str]) -> list[str]:
    """The entry's Obsidian comments outside its body: what a person reads in editing view."""
    first, last = lines[0], lines[-1]
    return [line for line in (first, last) if COMMENT.fullmatch(line)]


def test_twenty_demo_entries_carry_at_most_120_characters_of_machine_text_beside_format_1(
    v1_env: Env,
) -> None:
    env = v1_env
    path = _segment(env)
    v1_bytes = path.read_bytes()
    old = list(log.iter_entries(env.vault))
    assert {loc.entry.v for loc in old} == {1} and len(old) == 6
    assert env.run("verify").returncode == 0
    _night(env)
    assert len(log.segment_files(env.vault)) == 1  # one segment: format 1 entries, then format 2
    data = path.read_bytes()
    assert data.startswith(v1_bytes)  # the format 1 entries are untouched
    scan = segments.scan(data, "log/2026-12.md")
    assert not scan.stray and not scan.broken and scan.torn is None
    new = [loc for loc in scan.entries if loc.entry.v == 2]
    assert len(new) == 20 and [loc.entry.v for loc in scan.entries] == [1] * 6 + [2] * len(new)
    text = data.decode("utf-8")
    widths = []
    for loc in new:
        lines = text.encode()[loc.offset : loc.end_offset].decode().rstrip("\n").split("\n")
        machine = _machine_text(lines)
        assert len(machine) == 1 and machine[0] == lines[-1], lines  # one comment, one line: the last
        assert len(machine[0]) <= entries.MAX_MACHINE_CHARS, machine
        assert not any(COMMENT.search(line) for line in lines[:-1] if not line.startswith("\\")), lines
        widths.append(len(machine[0]))
    assert max(widths) <= 120
    for loc in scan.entries[:6]:  # format 1: a begin line and an end line of JSON, over 120 together
        lines = text.encode()[loc.offset : loc.end_offset].decode().rstrip("\n").split("\n")
        assert sum(len(m) for m in _machine_text(lines)) > 200
    kinds = {(loc.entry.via, bool(loc.entry.ack), loc.entry.seen is not None) for loc in new}
    assert ("watcher", False, True) in kinds or ("watcher", False, False) in kinds
    assert "state" in {loc.entry.via for loc in new} and any(loc.entry.ack for loc in new)
    for args in (("verify", "--json"), ("verify", "--full", "--json")):
        report = env.run(*args).json()
        assert report["ok"] and not report["problems"], report
        assert report["entries"] == len(scan.entries)
    # every reader shows them as their authors' words, acks parsed back from the visible links
    shown = env.run("log", "tail", "-n", "40", "--json").json()
    assert len(shown) == len(scan.entries) and not [e for e in shown if "UNVERIFIED" in json.dumps(e)]
    by_id = {e.id: e for e in (loc.entry for loc in scan.entries)}
    acked = [e for e in by_id.values() if e.v == 2 and len(e.ack) == 2]
    assert acked and all(a in by_id for a in acked[0].ack)
    line = next(x for x in text.split("\n") if x.startswith("↩ ") and acked[0].ack[1] in x)
    assert line == f"↩ [[log/2026-12#^{acked[0].ack[0]}]] · [[log/2026-12#^{acked[0].ack[1]}]]"


def test_a_segment_written_in_format_1_reads_and_verifies_as_it_did(v1_env: Env) -> None:
    env = v1_env
    before = {p: p.read_bytes() for p in env.vault.root.rglob("*.md")}
    report = env.run("verify", "--full", "--json").json()
    assert report["ok"] and report["entries"] == 6 and not report["problems"], report
    read = env.run("log", "read", "--agent", "nova", "--json", check=False)
    assert read.returncode != 0  # (no such agent: nothing written)
    got = env.run("log", "tail", "-n", "10", "--json").json()
    assert [e["summary"] for e in got] == [
        "lexer done; grammar next",
        "does the lexer keep comments?",
        "yes, as trivia tokens",
        "a body that imitates framing",
        "ship it on Friday",
        "grammar in PEG",
    ]
    framing = next(e for e in got if e["summary"] == "a body that imitates framing")
    assert "%% 12 AAAA %%" in framing["body"]  # format 1 never escaped that: it reads exactly as before
    assert got[4]["via"] == "watcher" and got[2]["ack"] == [got[1]["id"]] and got[2]["seen"] == got[1]["id"]
    assert {p: p.read_bytes() for p in env.vault.root.rglob("*.md")} == before  # reading wrote nothing
    located = list(log.iter_entries(env.vault))
    for loc in located:  # parsed and rendered again: the very bytes the nexus of format 1 wrote
        raw = (env.vault.root / loc.file).read_bytes()[loc.offset : loc.end_offset].decode()
        assert entries.render(loc.entry) == raw + ("\n" if not raw.endswith("\n\n") else "")


def _kinds(env: Env) -> list[tuple[str, str | None]]:
    run = env.run("verify", "--json", check=False)
    assert "Traceback" not in run.stderr, run.stderr
    return [(p["kind"], p["entry_id"]) for p in run.json()["problems"]]


def _edit(path: Path, old: bytes, new: bytes, after: int = 0) -> None:
    data = path.read_bytes()
    at = data.index(old, after)
    path.write_bytes(data[:at] + new + data[at + len(old) :])


@pytest.fixture
def night(env: Env) -> tuple[Env, list[Entry]]:
    for agent, summary in (("ella", "one"), ("lyra", "two"), ("ella", "three"), ("lyra", "four")):
        env.run("log", "read", "--agent", agent)
        _append(env, agent, summary, "--body", f"body of {summary}")
    env.run("log", "read", "--agent", "ella")
    last = list(log.iter_entries(env.vault))
    _append(env, "ella", "five", "--ack", last[1].entry.id, "--ack", last[3].entry.id)
    _append(env, "ella", "six", "--body", "~~~\n%% 1 x %%\n~~~")
    found = [loc.entry for loc in log.iter_entries(env.vault)]
    assert all(e.v == 2 for e in found) and found[4].seen is not None and found[4].ack
    assert env.run("verify").returncode == 0
    return env, found


@pytest.mark.parametrize(
    "what", ["summary", "body", "ack", "seen", "seq", "flag", "spare-bits", "ack-month", "escape"]
)
def test_a_changed_byte_of_a_format_2_entry_is_found(night: tuple[Env, list[Entry]], what: str) -> None:
    env, found = night
    path = _segment(env)
    target = found[4]  # ella's "five": seen, two acks
    start = path.read_bytes().index(f" ^{target.id}".encode())
    token = entries.machine_token(target.sig, target.seen)
    if what == "summary":
        _edit(path, b"five", b"fivE", start - 20)
    elif what == "body":
        target = found[2]
        _edit(path, b"body of three", b"body of threE")
    elif what == "ack":  # an acknowledged id swapped for another entry's (a link that still resolves)
        _edit(path, f"#^{found[1].id}]]".encode(), f"#^{found[0].id}]]".encode(), start)
    elif what == "seen":  # the last 21 characters of the token hold the seen id
        flipped = token[:100] + ("A" if token[100] != "A" else "B") + token[101:]
        _edit(path, token.encode(), flipped.encode())
    elif what == "seq":
        _edit(path, f"%% {target.seq} {token}".encode(), f"%% {target.seq + 1} {token}".encode())
    elif what == "flag":  # claimed as a person's text the watcher signed
        _edit(path, f"%% {target.seq} {token}".encode(), f"%%w{target.seq} {token}".encode())
    elif what == "spare-bits":  # the same signature and seen, written otherwise: only the encoding
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        other = token[:-1] + alphabet[alphabet.index(token[-1]) ^ 1]
        _edit(path, token.encode(), other.encode())
    elif what == "ack-month":  # a link to the right id in another month's note: not what nexus writes
        month = entries.segment_name(found[1].ts)
        _edit(path, f"[[log/{month}#^{found[1].id}]]".encode(), f"[[log/1999-01#^{found[1].id}]]".encode())
    else:  # a body line that imitates an end line, its escape taken out: the entry ends early
        target = found[5]
        _edit(path, b"\n\\%% 1 x %%\n", b"\n%% 1 x %%\n")
    kinds = _kinds(env)
    assert any(i == target.id for _k, i in kinds), (what, kinds)
    assert env.run("verify", check=False).returncode == 1
    expected = {
        "summary": "edited",
        "body": "edited",
        "ack": "edited",
        "seen": "edited",
        "seq": "edited",
        "flag": "edited",
        "spare-bits": "non-canonical",
        "ack-month": "non-canonical",
        "escape": "framing",
    }.get(what)
    if expected is not None:
        assert (expected, target.id) in kinds, kinds
    tail = env.run("log", "tail", "-n", "10").stdout  # never shown as its author's words
    assert all("UNVERIFIED" in b for b in tail.split("\n\n") if target.id in b), tail
