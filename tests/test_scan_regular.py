"""``segments.scan`` cuts regular entries out a whole entry at a time and reads anything else line by
line (issue 15: a full verify's cost per entry): whatever the bytes, it finds exactly what the line by
line reference (``segments.scan_lines``) finds, from a segment's start and from any offset."""

from __future__ import annotations

import pytest
from conftest import Env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nexus.keys import identity
from nexus.ledger import log
from nexus.storage import segments
from nexus.storage.vault import init

# what a person, an editor, a torn write or a damaged disk leaves in a segment
PIECES = st.sampled_from(
    [
        b"\n",
        b"\r\n",
        b"\r",
        b" \n",
        b"Sam: a note\n",
        b"Sam: no newline",
        b"%% nexus:begin 01JDQ8Z6V3M2K4T5N7P9R1S3W5 %%\n",
        b"%% nexus:begin not-an-id %%\n",
        b'%% nexus:end {"id":"x"} %%\n',
        b"%% nexus:end \n",
        b"%% nexus:segment 2026-12 %%\n",
        b"%% nexus:",
        b"\x00\x00\x00\x00",
        b"\xff\xfe",
        b"\xe2\x82",
        "é ünïcode ✓\n".encode(),
        b"**2026-12-01 00:00:00Z** \xc2\xb7 ella \xc2\xb7 general \xc2\xb7 note \xe2\x80\x94 x ^01JDQ\n",
        # format 2's framing: a header with a real id, an end line, acks, a header cut short
        "**2026-12-01 00:00:00Z** · ella · general · note — x ^01JDQ8Z6V3M2K4T5N7P9R1S3W5\n".encode(),
        b"%% 3 " + b"A" * 86 + b" %%\n",
        b"%% 3 AAAA %%\n",
        "↩ [[log/2026-12#^01JDQ8Z6V3M2K4T5N7P9R1S3W5]]\n".encode(),
        b"**2026-12-01 00:0",
        b"**",
    ]
)


@pytest.fixture(scope="module")
def segment(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real segment: entries with and without bodies, escaped body lines, acks, non-ASCII text."""
    tmp = tmp_path_factory.mktemp("segment")
    keys = tmp / "keys"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEXUS_HOME", str(keys))
        vault, _ = init(tmp / "vault")
        for name in ("ella", "lyra"):
            identity.add(vault, keys, name)
        e = Env(vault, keys)
        first = e.append("ella", "first", body="a body\n%% nexus:begin looks like framing\n\n  indented")
        e.append("lyra", "second")
        e.append(
            "lyra", "third é", body="**2026-12-01 00:00:00Z** · fake header", ack=(first.located.entry.id,)
        )
        e.append("ella", "fourth", type="decision", body="")
        return log.segment_files(vault)[-1][1].read_bytes()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edits=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 40), PIECES), max_size=4),
    cut=st.floats(0, 1),
)
def test_scan_finds_what_the_line_by_line_reference_finds(
    segment: bytes, edits: list[tuple[float, int, bytes]], cut: float
) -> None:
    data = bytearray(segment)
    for where, drop, piece in edits:  # replace a few bytes somewhere with something else
        at = int(where * len(data))
        data[at : at + drop] = piece
    raw = bytes(data)
    assert segments.scan(raw, "log/x.md") == segments.scan_lines(raw, "log/x.md")
    # from an offset too (a chunk of a verify, a read after a mark): any line start
    starts = [0] + [i + 1 for i, b in enumerate(raw) if b == 10]
    at = starts[int(cut * (len(starts) - 1))]
    line = raw.count(b"\n", 0, at) + 1
    part = raw[at:]
    assert segments.scan(part, "log/x.md", offset=at, line=line) == segments.scan_lines(
        part, "log/x.md", offset=at, line=line
    )


def test_a_clean_segment_is_read_a_whole_entry_at_a_time(
    segment: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = segments.scan_lines

    def spy(
        data: bytes, file: str, *, offset: int = 0, line: int = 1, preamble: bool = True, tail: bool = True
    ) -> segments.Scan:
        calls.append(len(data))
        return real(data, file, offset=offset, line=line, preamble=preamble, tail=tail)

    monkeypatch.setattr(segments, "scan_lines", spy)
    found = segments.scan(segment, "log/x.md")
    assert len(found.entries) == 4 and not found.stray and calls == []  # (no line read one by one)
    note = b"Sam: a person's note\n"
    damaged = segments.scan(segment + note, "log/x.md")
    assert calls == [len(note)]  # (only the note)
    assert len(damaged.stray) == 1 and damaged.entries == found.entries
