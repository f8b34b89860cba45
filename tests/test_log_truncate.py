"""Truncating a segment at every byte offset of its last entry never crashes a reader, and the next
append quarantines whatever was torn."""

from __future__ import annotations

from dataclasses import replace

from conftest import Env

from nexus.audit.verify_state import verify
from nexus.ledger import log
from nexus.storage import segments


def test_truncate_at_every_byte_of_the_last_entry(env: Env) -> None:
    env.append("ella", "first", body="one")
    env.append("lyra", "second", body="two\n\nwith a blank line")
    ((_, path),) = log.segment_files(env.vault)
    before = path.read_bytes()
    heads_before = {p: p.read_bytes() for p in env.vault.agents_dir.glob("*/head.json")}
    env.append("ella", "third", body="three " * 20 + "\n%% nexus:end {} %%\nlast line")
    whole = path.read_bytes()
    assert len(whole) - len(before) > 200
    tail_json = env.vault.state / "tail.json"
    kept_ids = [loc.entry.id for loc in log.iter_entries(env.vault)][:2]
    outcomes = set()
    for cut in range(len(before), len(whole) + 1):
        data = whole[:cut]
        path.write_bytes(data)
        tail_json.unlink(missing_ok=True)  # a torn write was never acknowledged: nothing recorded it
        for head_file, head_before in heads_before.items():  # (nor the signed heads, written only
            head_file.write_bytes(head_before)  # after the fsync; each cut is a scenario of its own)

        scan = segments.scan(data, "log/x.md")
        assert [loc.entry.id for loc in scan.entries][:2] == kept_ids
        assert scan.broken == []
        complete = len(scan.entries) == 3
        if complete:
            assert scan.torn is None
        # every reader copes
        assert [loc.entry.id for loc in log.unread(env.vault, "sam", advance=False)][:2] == kept_ids
        assert [loc.entry.id for loc in log.tail(env.vault, 5)][:2] == kept_ids
        report = verify(env.vault)
        kinds = {p.kind for p in report.errors}
        assert kinds <= {"torn-tail"}, (cut, [str(p) for p in report.problems])
        assert report.problems == [] or [p.kind for p in report.problems] in (["torn-tail"], ["stray-text"])
        outcomes.add("complete" if complete else ("torn" if kinds else "clean-cut"))

        # the next append (a fresh writer, as a new process would be) repairs and goes on
        result = log.LogWriter(env.vault).append(
            env.signer("lyra"), channel="c", type="note", summary=f"after cut {cut}"
        )
        assert bool(result.quarantined) == (scan.torn is not None)
        after = verify(env.vault)
        assert after.ok, (cut, [str(p) for p in after.problems])
        ids = [loc.entry.id for loc in log.iter_entries(env.vault)]
        assert ids[:2] == kept_ids and ids[-1] == result.located.entry.id
    assert {"complete", "torn"} <= outcomes
    # every torn tail went to quarantine, none was silently dropped
    assert len(list((env.vault.state / "quarantine").iterdir())) > 100


def test_scan_edge_cases() -> None:
    from nexus.records import Entry
    from nexus.storage import entries as ent

    e = Entry(
        id=ent.encode_id(1_796_000_000_000, 7),
        ts="2026-11-30T05:00:00Z",
        agent="ella",
        channel="c",
        type="note",
        summary="s",
        body="b",
        ack=(),
        seen=None,
        seq=1,
        prev=None,
        key="0" * 16,
        sig="x",
    )
    text = ent.render(e).encode()
    # a segment without the marker line: the first begin line ends the preamble
    pre = b"---\nsegment: x\n---\n# title\n\nsome words\n\n"
    scan = segments.scan(pre + text, "log/x.md")
    assert [loc.entry for loc in scan.entries] == [e] and scan.stray == []
    assert scan.entries[0].line_start == 8
    # no marker and no entry at all: all preamble, nothing to report
    scan = segments.scan(pre, "log/x.md")
    assert scan.entries == [] and scan.stray == [] and scan.torn is None
    # a person's unterminated line after the last entry is stray text, not a torn tail
    scan = segments.scan(pre + text + b"a person's note", "log/x.md")
    assert scan.torn is None and [s.text for s in scan.stray] == ["a person's note"]
    # ... but an unterminated line that starts like framing is torn
    for partial in (b"%", b"%%", b"%% nexus:beg", b"%% nexus:begin " + e.id.encode()):
        scan = segments.scan(pre + text + partial, "log/x.md")
        assert scan.torn is not None and scan.torn.size == len(partial), partial
        assert scan.end_offset == len(pre + text)
    # CRLF everywhere, and a lone CR at a line end
    scan = segments.scan((pre + text).replace(b"\n", b"\r\n"), "log/x.md")
    assert [loc.entry for loc in scan.entries] == [e]
    # invalid UTF-8 inside an entry: read (as U+FFFD), never raised
    bad = text.replace(b"\nb\n", b"\n\xff\xfe\n")
    scan = segments.scan(pre + bad, "log/x.md")
    assert scan.entries[0].entry.body == "\ufffd\ufffd"
    # an entry cut short by the next begin line is broken, the next one still reads
    cut = text.split(b"%% nexus:end")[0]
    scan = segments.scan(pre + cut + text, "log/x.md")
    assert len(scan.broken) == 1 and scan.broken[0].entry_id == e.id and len(scan.entries) == 1
    # format 2 (a header line opens the entry): cut at any byte it is a torn tail, never a person's text
    import base64

    e2 = replace(e, key="", sig=base64.b64encode(bytes(64)).decode(), v=2)
    text2 = ent.render(e2).encode()
    assert [loc.entry for loc in segments.scan(pre + text + text2, "log/x.md").entries] == [e, e2]
    for at in range(1, len(text2) - 2):
        scan = segments.scan(pre + text + text2[:at], "log/x.md")
        assert scan.torn is not None and scan.torn.offset == len(pre + text), (at, text2[:at])
        assert scan.stray == [] and [loc.entry for loc in scan.entries] == [e]
    # ... while a person's unterminated bold text is theirs
    scan = segments.scan(pre + text + b"**bold** words", "log/x.md")
    assert scan.torn is None and [s.text for s in scan.stray] == ["**bold** words"]
    # a format 2 entry cut short by the next header is broken, the next one still reads
    scan = segments.scan(pre + text2.split(b"\n%%")[0] + b"\n\n" + text2, "log/x.md")
    assert len(scan.broken) == 1 and scan.broken[0].entry_id == e2.id and scan.entries[0].entry == e2
