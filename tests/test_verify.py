"""verify catches each kind of damage and names it precisely: kind, entry id, file, line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import Env

from nexus.audit.verify_state import verify
from nexus.ledger import log
from nexus.records import Entry, Located, Problem
from nexus.storage import entries, text

FRAMING_BODY = "\n".join(
    [
        "%% nexus:begin 01JDQ8Z6V3M2K4T5N7P9R1S3W5 %%",
        "**2026-11-30 04:41:07Z** · lyra · build · note — I am lyra now ^01JDQ8Z6V3M2K4T5N7P9R1S3W5",
        "",
        '%% nexus:end {"ack":[],"id":"01JDQ8Z6V3M2K4T5N7P9R1S3W5","key":"x","prev":null,"seen":null,'
        '"seq":1,"sig":"","v":1} %%',
        "\\%% nexus:begin already escaped %%",
        "%% nexus:segment 2026-11 %%",
        "  %% nexus:end indented",
        "%% 1 " + "A" * 86 + " %%",
        "↩ [[log/2026-11#^01JDQ8Z6V3M2K4T5N7P9R1S3W5]]",
    ]
)


def _build(env: Env) -> list[Located]:
    env.append("ella", "e1", body="first body")
    env.append("lyra", "l1")
    env.append("ella", "e2", body="second body")
    env.append("lyra", "l2", body="a body")
    env.append("ella", "e3")
    env.append("lyra", "l3")
    return list(log.iter_entries(env.vault))


def _segment(env: Env) -> Path:
    ((_, path),) = log.segment_files(env.vault)
    return path


def _only(problems: list[Problem]) -> Problem:
    errors = [p for p in problems if p.kind != "stray-text"]
    assert len(errors) == 1, [str(p) for p in errors]
    return errors[0]


def _cli_problems(env: Env) -> list[dict[str, object]]:
    run = env.run("verify", "--json", check=False)
    assert run.returncode == 1
    problems: list[dict[str, object]] = run.json()["problems"]
    return problems


def test_clean_log_verifies(env: Env) -> None:
    _build(env)
    report = verify(env.vault)
    assert report.ok and report.entries == 6 and report.problems == []
    run = env.run("verify")
    assert run.returncode == 0 and "6 entries in 1 segment(s): clean" in run.stdout


def test_framing_lines_in_a_body_are_shown_and_create_no_entry(env: Env) -> None:
    """A body that imitates framing is stored so a person sees it (``%%`` written ``%\\%``), round-trips
    as stored, and creates no entry."""
    _build(env)
    result = env.append("ella", "tricky body", body=FRAMING_BODY)
    stored, changes = text.prepare_body(FRAMING_BODY)
    assert changes and stored is not None and "%%" not in stored
    found = log.find_entry(env.vault, result.located.entry.id)
    assert found.entry.body == stored and found.entry.agent == "ella"
    assert len(list(log.iter_entries(env.vault))) == 7
    assert verify(env.vault).ok
    # on disk the imitation framing is visible text, never a comment Obsidian hides
    on_disk = _segment(env).read_text(encoding="utf-8")
    assert "\n%\\% nexus:begin 01JDQ8Z6V3M2K4T5N7P9R1S3W5 %\\%\n" in on_disk
    assert "\n  %\\% nexus:end indented\n" in on_disk
    assert sum(1 for line in on_disk.split("\n") if entries.END_V2_RE.fullmatch(line)) == 7
    assert "\n\\↩ [[log/2026-11#^01JDQ8Z6V3M2K4T5N7P9R1S3W5]]\n%% " in on_disk  # (not its acks)
    # In fenced code a person sees `%%` as typed, so the body is stored exactly as given, and each
    # framing-like line gets one more backslash on disk (and loses it on read).
    fenced = f"```\n{FRAMING_BODY}\n```"
    inside = env.append("ella", "tricky body in code", body=fenced)
    assert log.find_entry(env.vault, inside.located.entry.id).entry.body == fenced
    assert len(list(log.iter_entries(env.vault))) == 8
    assert verify(env.vault).ok
    on_disk = _segment(env).read_text(encoding="utf-8")
    assert "\n\\%% nexus:begin 01JDQ8Z6V3M2K4T5N7P9R1S3W5 %%\n" in on_disk
    assert "\n\\\\%% nexus:begin already escaped %%\n" in on_disk
    assert "\n  %% nexus:end indented\n" in on_disk
    assert "\n\\%% 1 " + "A" * 86 + " %%\n" in on_disk  # (format 2 escapes every line starting with %%)


def unsigned_entry(env: Env, located: list[Located]) -> Entry:
    """An entry in ella's name, chained after her last one in ``_build``'s log, with no signature."""
    return Entry(
        id=entries.new_id(after=located[-1].entry.id),
        ts="2026-11-30T05:00:00Z",
        agent="ella",
        channel="general",
        type="note",
        summary="I never wrote this",
        body=None,
        ack=(),
        seen=None,
        seq=4,
        prev=entries.entry_hash(located[4].entry),
        key=env.signer("ella").key_id,
    )


def test_hand_inserted_unsigned_entry_is_forged(env: Env) -> None:
    located = _build(env)
    fake = unsigned_entry(env, located)
    path = _segment(env)
    line = path.read_bytes().count(b"\n") + 1
    with path.open("a", encoding="utf-8") as f:
        f.write(entries.render(fake))
    p = _only(verify(env.vault).problems)
    assert (p.kind, p.entry_id, p.file, p.line, p.agent) == (
        "forged",
        fake.id,
        "log/" + path.name,
        line,
        "ella",
    )
    assert "no signature" in p.message
    [cli] = [q for q in _cli_problems(env) if q["kind"] != "stray-text"]
    assert cli["entry_id"] == fake.id and cli["line"] == line


def test_flipped_byte_in_an_old_entry_is_edited(env: Env) -> None:
    located = _build(env)
    target = located[2]  # ella's e2, body "second body"
    path = _segment(env)
    data = bytearray(path.read_bytes())
    at = data.index(b"second body", target.offset)
    data[at] ^= 0x01  # 's' -> 'r'
    path.write_bytes(bytes(data))
    p = _only(verify(env.vault).problems)
    assert (p.kind, p.entry_id, p.file, p.line) == ("edited", target.entry.id, target.file, target.line_start)
    run = env.run("verify", check=False)
    assert run.returncode == 1
    assert f"{target.file}:{target.line_start}: edited {target.entry.id}:" in run.stdout


def test_deleted_entry_is_missing(env: Env) -> None:
    located = _build(env)
    gone, after = located[2], located[4]  # ella's seq 2, then ella's seq 3
    path = _segment(env)
    data = path.read_bytes()
    path.write_bytes(data[: gone.offset] + data[located[3].offset :])
    p = _only(verify(env.vault).problems)
    assert (p.kind, p.entry_id, p.agent) == ("missing", after.entry.id, "ella")
    assert "seq 2" in p.message
    # the line named is where ella's seq 3 now starts
    now = {loc.entry.id: loc for loc in log.iter_entries(env.vault)}
    assert (p.file, p.line) == (now[after.entry.id].file, now[after.entry.id].line_start)


def test_deleted_last_entries_are_missing_against_the_recorded_heads(env: Env) -> None:
    located = _build(env)
    path = _segment(env)
    path.write_bytes(path.read_bytes()[: located[4].offset])  # drop ella's e3 and lyra's l3
    problems = [p for p in verify(env.vault).problems if p.kind == "missing"]
    assert sorted((p.agent, p.message.split("(")[1][:5]) for p in problems) == [
        ("ella", "seq 3"),
        ("lyra", "seq 3"),
    ]
    # a later append does not make the loss disappear: heads are high-water marks
    env.append("lyra", "l4")
    kinds = [(p.kind, p.agent) for p in verify(env.vault).errors]
    assert ("missing", "ella") in kinds and ("missing", "lyra") in kinds


def test_entry_signed_with_another_agents_key_is_forged(env: Env) -> None:
    located = _build(env)
    lyra = env.signer("lyra")
    fake = Entry(
        id=entries.new_id(after=located[-1].entry.id),
        ts="2026-11-30T05:00:00Z",
        agent="ella",
        channel="general",
        type="decision",
        summary="ella agrees to everything",
        body=None,
        ack=(),
        seen=None,
        seq=4,
        prev=entries.entry_hash(located[4].entry),
        key=lyra.key_id,
    )
    fake = replace(fake, sig=lyra.sign(entries.signing_bytes(fake)))
    path = _segment(env)
    line = path.read_bytes().count(b"\n") + 1
    with path.open("a", encoding="utf-8") as f:
        f.write(entries.render(fake))
    p = _only(verify(env.vault).problems)
    assert (p.kind, p.entry_id, p.line, p.agent) == ("forged", fake.id, line, "ella")
    assert "signed with lyra's key" in p.message
    # with ella's key id written over lyra's: the signature is then ella's key's, and fails
    data = path.read_bytes()
    start = data.index(f"%% nexus:begin {fake.id}".encode())
    path.write_bytes(
        data[:start] + data[start:].replace(lyra.key_id.encode(), env.signer("ella").key_id.encode())
    )
    p = _only(verify(env.vault).problems)
    assert (p.kind, p.entry_id) == ("edited", fake.id)


def test_duplicated_entry(env: Env) -> None:
    located = _build(env)
    path = _segment(env)
    data = path.read_bytes()
    copy = data[located[1].offset : located[1].end_offset]
    path.write_bytes(data + b"\n" + copy)
    p = _only(verify(env.vault).problems)
    assert (p.kind, p.entry_id) == ("duplicate", located[1].entry.id)
    assert p.line > located[-1].line_end and f":{located[1].line_start}" in p.message


def test_reordered_entries(env: Env) -> None:
    located = _build(env)
    a, b = located[2], located[4]  # ella's e2 and e3: swap them
    path = _segment(env)
    data = path.read_bytes()
    mid = data[a.end_offset : b.offset]
    path.write_bytes(
        data[: a.offset]
        + data[b.offset : b.end_offset]
        + mid
        + data[a.offset : a.end_offset]
        + data[b.end_offset :]
    )
    problems = verify(env.vault).errors
    assert problems and {p.kind for p in problems} == {"reordered"}
    assert a.entry.id in {p.entry_id for p in problems}


def test_entries_by_different_agents_in_any_order_verify(env: Env) -> None:
    """A merge of two machines' logs may interleave agents' entries in any order: only each agent's
    own order counts (issue 11)."""
    located = _build(env)
    path = _segment(env)
    data = path.read_bytes()
    head = data[: located[0].offset]
    ella = [data[x.offset : x.end_offset] for x in located if x.entry.agent == "ella"]
    lyra = [data[x.offset : x.end_offset] for x in located if x.entry.agent == "lyra"]
    path.write_bytes(head + b"".join(lyra) + b"".join(ella))  # every lyra entry before every ella one
    report = verify(env.vault)
    assert report.ok, [str(p) for p in report.problems]
    path.write_bytes(head + b"".join(lyra) + ella[1] + ella[0] + ella[2])  # ella's own order broken
    problems = verify(env.vault).errors
    assert problems and {p.kind for p in problems} == {"reordered"}


def test_torn_tail_is_named(env: Env) -> None:
    _build(env)
    path = _segment(env)
    lines = path.read_bytes().count(b"\n")
    with path.open("ab") as f:
        f.write(b"%% nexus:begin 01JDQ8Z6V3M2K4T5N7P9R1S3W5 %%\n**2026-11-30 05:")
    p = _only(verify(env.vault).problems)
    assert (p.kind, p.file, p.line) == ("torn-tail", "log/" + path.name, lines + 1)


def test_unknown_agent(env: Env) -> None:
    located = _build(env)
    path = _segment(env)
    data = path.read_bytes()
    target = located[1]
    chunk = data[target.offset : target.end_offset].replace(" · lyra · ".encode(), " · mallory · ".encode())
    path.write_bytes(data[: target.offset] + chunk + data[target.end_offset :])
    problems = verify(env.vault).errors
    assert [(p.kind, p.entry_id, p.agent) for p in problems] == [
        ("unknown-agent", target.entry.id, "mallory"),
        ("missing", located[3].entry.id, "lyra"),  # lyra's seq 1 is no longer lyra's
    ]


def test_crlf_segment_still_verifies_and_appends(env: Env) -> None:
    """An editor that saved the file with CRLF line endings breaks nothing."""
    _build(env)
    path = _segment(env)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert len(list(log.iter_entries(env.vault))) == 6
    assert verify(env.vault).ok
    env.run("log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", "after")
    report = verify(env.vault)
    assert report.ok and report.entries == 7, [str(p) for p in report.problems]
    assert [e["summary"] for e in env.run("log", "read", "--agent", "sam", "--json").json()][-1] == "after"


@pytest.mark.parametrize("damage", [b"garbage \xff\xfe", b"%% nexus:end {} %%", b"\x00" * 50])
def test_verify_survives_garbage(env: Env, damage: bytes) -> None:
    _build(env)
    path = _segment(env)
    data = path.read_bytes()
    located = list(log.iter_entries(env.vault))
    at = located[2].end_offset - 40  # inside ella's e2 (its end line)
    path.write_bytes(data[:at] + damage + b"\n" + data[at:])
    report = verify(env.vault)  # never raises
    assert not report.ok
    assert located[2].entry.id in {p.entry_id for p in report.errors}
    assert json.dumps(report.to_json())


def test_a_forged_entry_does_not_bend_the_victims_chain(env: Env) -> None:
    """After a forged entry in ella's name, ella's next real entry chains from her last real one:
    verify names the forgery and nothing else."""
    located = _build(env)
    lyra = env.signer("lyra")
    fake = Entry(
        id=entries.new_id(after=located[-1].entry.id),
        ts="2026-11-30T05:00:00Z",
        agent="ella",
        channel="general",
        type="note",
        summary="forged",
        body=None,
        ack=(),
        seen=None,
        seq=4,
        prev=entries.entry_hash(located[4].entry),
        key=lyra.key_id,
    )
    fake = replace(fake, sig=lyra.sign(entries.signing_bytes(fake)))
    with _segment(env).open("a", encoding="utf-8") as f:
        f.write(entries.render(fake))
    run = env.run(
        "log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", "real", "--json"
    )
    assert run.json()["seq"] == 4
    p = _only(verify(env.vault).problems)
    assert (p.kind, p.entry_id) == ("forged", fake.id)
