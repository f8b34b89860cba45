"""Truncating a segment at every byte offset of its last entry never crashes a reader, and the next
append quarantines whatever was torn."""

from __future__ import annotations

from conftest import Env

from nexus import log, segments
from nexus.verify import verify


def test_truncate_at_every_byte_of_the_last_entry(env: Env) -> None:
    env.append("ella", "first", body="one")
    env.append("lyra", "second", body="two\n\nwith a blank line")
    (_, path), = log.segment_files(env.vault)
    before = path.read_bytes()
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
        result = log.LogWriter(env.vault).append(env.signer("lyra"), channel="c", type="note",
                                                 summary=f"after cut {cut}")
        assert bool(result.quarantined) == (scan.torn is not None)
        after = verify(env.vault)
        assert after.ok, (cut, [str(p) for p in after.problems])
        ids = [loc.entry.id for loc in log.iter_entries(env.vault)]
        assert ids[:2] == kept_ids and ids[-1] == result.located.entry.id
    assert {"complete", "torn"} <= outcomes
    # every torn tail went to quarantine, none was silently dropped
    assert len(list((env.vault.state / "quarantine").iterdir())) > 100
