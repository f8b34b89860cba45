"""The canonical bytes and the end line are written out key by key (a full verify makes one of each per
entry): they must be exactly the bytes the JSON encoder writes for the same fields, whatever the text."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nexus.records import Entry
from nexus.storage import entries

# any character, lone surrogates and control characters included (a damaged end line may hold them)
TEXT = st.text(st.characters(blacklist_categories=()), max_size=40)
OPT = st.none() | TEXT


def _encoder(data: dict[str, Any], ascii: bool) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=ascii)


@settings(max_examples=400, deadline=None)
@given(
    fields=st.fixed_dictionaries(
        {
            "id": TEXT,
            "ts": TEXT,
            "agent": TEXT,
            "channel": TEXT,
            "type": TEXT,
            "summary": TEXT,
            "body": OPT,
            "ack": st.lists(TEXT, max_size=3).map(tuple),
            "seen": OPT,
            "seq": st.integers(min_value=-(2**70), max_value=2**70),
            "prev": OPT,
            "key": TEXT,
            "via": OPT,
        }
    ),
    sig=TEXT,
)
def test_written_out_is_what_the_encoder_writes(fields: dict[str, Any], sig: str) -> None:
    expected = _encoder({**fields, "ack": list(fields["ack"]), "v": entries.FORMAT_VERSION}, ascii=False)
    assert entries.canonical_fields(**fields) == expected.encode("utf-8", "surrogatepass")

    e = Entry(**fields, sig=sig)
    meta = {k: fields[k] for k in ("id", "seen", "seq", "prev", "key")}
    meta.update(ack=list(fields["ack"]), sig=sig, v=entries.FORMAT_VERSION)
    if fields["via"] is not None:
        meta["via"] = fields["via"]
    assert entries.end_line(e) == f"{entries.END_PREFIX}{_encoder(meta, ascii=True)} %%"


def test_a_field_of_another_type_still_takes_the_encoder() -> None:
    base: dict[str, Any] = dict(
        id="a", ts="t", agent="ella", channel="c", type="note", summary="s", body=None, ack=("x",),
        seen=None, seq=True, prev=None, key="k", via=None,
    )  # fmt: skip
    assert b'"seq":true' in entries.canonical_fields(**base)
    assert b'"seen":3' in entries.canonical_fields(**{**base, "seq": 1, "seen": 3})
    assert b'"ack":["x"]' in entries.canonical_fields(**{**base, "seq": 1, "ack": ["x"]})
