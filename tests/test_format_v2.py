"""Entry format 2: at most 120 characters of machine text per entry, on one line, for everything nexus
writes now; segments written in format 1 (tests/fixtures/format-v1, bytes the nexus that wrote format
1 made) still read and verify, also when the same segment goes on in format 2."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from conftest import FORMAT_V1, Env

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


def test_an_entry_signed_with_another_identitys_key_is_forged(night: tuple[Env, list[Entry]]) -> None:
    """Format 2 names no key: the signature of lyra over an entry that claims ella is found as lyra's."""
    env, found = night
    fake = Entry(
        entries.new_id(after=found[-1].id),
        found[-1].ts,
        "ella",
        "parser",
        "note",
        "ella agrees to everything",
        None,
        (),
        None,
        found[-1].seq + 1,
        None,
        "",
        v=2,
    )
    fake = Entry(**{**fake.__dict__, "sig": env.signer("lyra").sign(entries.signing_bytes(fake))})
    with _segment(env).open("a", encoding="utf-8") as f:
        f.write(entries.render(fake))
    kinds = _kinds(env)
    assert kinds == [("forged", fake.id)], kinds
    problem = env.run("verify", "--json", check=False).json()["problems"][0]
    assert "signed with lyra's key" in problem["message"]
    # a signature no identity's key makes: its text cannot be its author's (edited, shown apart)
    garbage = Entry(**{**fake.__dict__, "id": entries.new_id(after=fake.id), "sig": "A" * 86 + "=="})
    with _segment(env).open("a", encoding="utf-8") as f:
        f.write(entries.render(garbage))
    assert ("edited", garbage.id) in _kinds(env)
    shown = env.run("log", "tail", "-n", "3").stdout
    assert all("UNVERIFIED" in b for b in shown.split("\n\n") if fake.id in b or garbage.id in b), shown


def test_a_deleted_format_2_entry_is_missing(night: tuple[Env, list[Entry]]) -> None:
    env, found = night
    path = _segment(env)
    data = path.read_bytes()
    three = found[2]  # ella's seq 2, with ella's seq 3 and 4 after it
    start = segments.entry_starts(data, three.id)[0]
    end = segments.entry_end(data, start) + 2  # (its end line and the blank line after it)
    path.write_bytes(data[:start] + data[end:])
    kinds = _kinds(env)
    assert ("missing", found[4].id) in kinds, kinds  # ella's seq 3 comes after seq 1
    # her last entry deleted too: the signed head and this machine's tail state still know it
    data = path.read_bytes()
    six = segments.entry_starts(data, found[5].id)[0]
    path.write_bytes(data[:six])
    last_kinds = {k for k, _i in _kinds(env)}
    assert {"missing", "truncated"} <= last_kinds, last_kinds


def test_the_machine_text_bound_and_the_round_trip_of_any_body() -> None:
    """At most 120 characters for every seq up to 999,999 (seen, a via flag), and every body, however
    much it imitates either format's framing, reads back as written (format 1's bodies too)."""
    sig = base64.b64encode(bytes(range(192, 256))).decode()
    widest = Entry("01KB7Q2V4J6M8P0R2T4W6Y8A0C", "2026-11-30T04:41:07Z", "ella", "c", "note", "s",
                   None, (), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ", 999_999, None, "", sig, "watcher", 2)  # fmt: skip
    line = entries.end_line(widest)
    assert len(line) == 120 and line.startswith("%%w999999 ") and entries.END_V2_RE.fullmatch(line)
    assert len(entries.end_line(Entry(**{**widest.__dict__, "seen": None}))) == 99
    bodies = [
        "%% 12 " + "A" * 107 + " %%",
        "\\%% 1 x %%",
        "↩ [[log/2026-11#^01KB7Q2V4J6M8P0R2T4W6Y8A0C]]",
        "\\\\↩ x",
        "**2026-11-30 04:41:07Z** · ella · c · note — s ^01KB7Q2V4J6M8P0R2T4W6Y8A0C",
        "%% nexus:begin 01KB7Q2V4J6M8P0R2T4W6Y8A0C %%",
        "",
        "\n\n",
        "last line ↩ [[log/2026-11#^01KB7Q2V4J6M8P0R2T4W6Y8A0C]]",
    ]
    for body in [*bodies, "\n".join(bodies), None]:
        for v in (1, 2):
            e = Entry(**{**widest.__dict__, "body": body, "v": v, "key": "k" if v == 1 else "", "via": None})
            for ack in ((), ("01KB7Q2V4J6M8P0R2T4W6Y8A0C", "01KB7P0Z8C2E4G6J8M0P2R4T6V")):
                text = entries.render(Entry(**{**e.__dict__, "ack": ack}))
                scan = segments.scan(text.encode(), "log/2026-11.md", offset=1)
                assert len(scan.entries) == 1 and not scan.stray and not scan.broken, (v, body, text)
                got = scan.entries[0]
                assert got.entry == Entry(**{**e.__dict__, "ack": ack}) and got.verdict is None, text
    # format 1's bodies keep their own escapes: a line format 2 escapes is plain text there
    assert entries.escape_body_line("%% 12 x %%", 1) == "%% 12 x %%"
    assert entries.escape_body_line("%% 12 x %%", 2) == "\\%% 12 x %%"


def test_the_fixture_was_written_in_format_1() -> None:
    data = (FORMAT_V1 / "vault" / "log" / "2026-12.md").read_bytes()
    assert data.count(b"\n%% nexus:begin ") == 6 and data.count(b"\n%% nexus:end {") == 6
