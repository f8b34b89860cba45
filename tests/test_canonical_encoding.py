"""The canonical bytes and the end line are written out key by key (a full verify makes one of each per
entry): they must be exactly the bytes the JSON encoder writes for the same fields, whatever the text."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
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


# ------------------------------------------------------------- reading an end line without json.loads

_ID = "01M69N2XVHT7C2C7ZBTZ5R3RK7"
_PLAIN_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
_END_TEXT = TEXT | _PLAIN_TEXT | st.sampled_from(["", _ID, "a,b", 'a"b', "a\\b", "ñ", "\x7f"])


def _by_json(lines: list[str]) -> tuple[Any, Any]:
    """What the reader answers when every end line goes through json.loads (the reference)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(entries, "_end_plain", lambda: re.compile(r"(?!)"))
        return _outcome(lines)


def _outcome(lines: list[str]) -> tuple[Any, Any]:
    try:
        entry, flaw = entries.parse_checked(lines)
    except entries.FrameError as err:
        return "error", (str(err), err.line)
    return entry, flaw


def _entry(
    ack: tuple[str, ...], seen: str | None, seq: int, prev: str | None, key: str, sig: str, via: str | None
) -> Entry:
    """An entry of ``_lines``' begin line and header with these end-line fields."""
    return Entry(
        _ID, "2026-12-01T10:00:00Z", "ella", "general", "note", "s", None, ack, seen, seq, prev, key, sig, via
    )


def _lines(end: str) -> list[str]:
    header = f"**2026-12-01 10:00:00Z** · ella · general · note — s ^{_ID}"
    return [f"%% nexus:begin {_ID} %%", header, "", end]


@settings(max_examples=400, deadline=None)
@given(
    ack=st.lists(_END_TEXT, max_size=3),
    key=_END_TEXT,
    prev=st.none() | _END_TEXT,
    seen=st.none() | _END_TEXT,
    seq=st.integers(min_value=-(2**70), max_value=2**70),
    sig=_END_TEXT,
    via=st.none() | _END_TEXT,
)
def test_an_end_line_nexus_writes_reads_the_same_as_through_json(
    ack: list[str], key: str, prev: str | None, seen: str | None, seq: int, sig: str, via: str | None
) -> None:
    e = _entry(tuple(ack), seen, seq, prev, key, sig, via)
    lines = _lines(entries.end_line(e))
    reference = _by_json(lines)
    assert _outcome(lines) == reference
    assert reference == (e, None)


_MUTATIONS = [
    lambda s: s.replace(":", ": ", 1),
    lambda s: s.replace(',"id"', ', "id"'),
    lambda s: s.replace('"seq":1', '"seq":01'),
    lambda s: s.replace('"seq":1', '"seq":-0'),
    lambda s: s.replace('"seq":1', '"seq":1.0'),
    lambda s: s.replace('"seq":1', '"seq":true'),
    lambda s: s.replace('"v":1', '"v":2'),
    lambda s: s.replace('"v":1', '"v":1,"x":1'),
    lambda s: s.replace('"key":"k1"', '"key":"k\\u0031"'),
    lambda s: s.replace('"key":"k1"', '"key":"k\\/1"'),
    lambda s: s.replace('"prev":null', '"prev":"a"'),
    lambda s: s.replace('"prev":null', '"prev":nul'),
    lambda s: s.replace('"ack":[]', '"ack":["a","b"]'),
    lambda s: s.replace('"ack":[]', '"ack":["a" ,"b"]'),
    lambda s: s.replace('"ack":[]', '"ack":[1]'),
    lambda s: s.replace('"ack":[],', ""),
    lambda s: s.replace(',"seen":null', ',"seen":null,"seen":"x"'),
    lambda s: s.replace('"id":"', '"id":"X'),
    lambda s: s.replace(" %%", "%%"),
    lambda s: s.replace("}", ',"via":"x"}'),
    lambda s: s.replace("}", ',"via":null}'),
    lambda s: s.replace("}", ',"via":"\\u00f1"}'),
    lambda s: s.replace("}", ',"via":"ñ"}'),
    lambda s: s.replace("}", "}}"),
    lambda s: s.replace('"sig":"', '"sig":"\t'),
    lambda s: s,
]


@settings(max_examples=300, deadline=None)
@given(picks=st.lists(st.integers(0, len(_MUTATIONS) - 1), min_size=1, max_size=3))
def test_any_other_end_line_reads_as_json_reads_it(picks: list[int]) -> None:
    """Spacing, key order, escapes, numbers JSON writes otherwise, extra or duplicate fields: whatever
    the plain reader takes must be read exactly as json.loads reads it, flaws included."""
    e = _entry((), None, 1, None, "k1", "c2lnbmF0dXJl", None)
    end = entries.end_line(e)
    for i in picks:
        end = _MUTATIONS[i](end)
    lines = _lines(end)
    reference = _by_json(lines)
    assert _outcome(lines) == reference


def test_the_plain_reader_is_really_used() -> None:
    e = _entry(("a",), None, 1, None, "k1", "c2ln", "x")
    assert entries._end_plain().fullmatch(entries.end_line(e)) is not None


_BODY_LINE = st.sampled_from(
    [
        "plain",
        "",
        "%% nexus:begin X %%",
        "%%nexus:end",
        "\\%% nexus:end x",
        "\\\\%% nexus:seg",
        "**2026-11-30 04:41:07Z** · ella",
        "\\plain",
        "  %% nexus: indented",
        "a %% nexus: in the middle",
    ]
)


@settings(max_examples=300, deadline=None)
@given(body=st.lists(_BODY_LINE, min_size=1, max_size=5), tamper=st.integers(min_value=-1, max_value=4))
def test_a_body_reads_and_checks_the_same_whole_or_line_by_line(body: list[str], tamper: int) -> None:
    """A body is read and its escapes checked whole when no line can look like framing: the same
    body and the same verdict as line by line, whichever line looks like framing or is escaped wrong."""
    text = "\n".join(body)
    e = Entry(
        "01JDQ8Z6V3M2K4T5N7P9R1S3W5",
        "2026-11-30T04:41:07Z",
        "ella",
        "build",
        "note",
        "s",
        text,
        (),
        None,
        1,
        None,
        "k",
        "c2ln",
    )
    lines = entries.render(e).split("\n")[:-2]
    if 0 <= tamper < len(body):  # a body line written otherwise than nexus writes it
        at = 3 + tamper
        lines[at] = lines[at][1:] if lines[at].startswith("\\") else "\\" + lines[at]
    raw = lines[3:-1]
    want_body = "\n".join(entries.unescape_body_line(line) for line in raw)
    want_flaw = any(entries.escape_body_line(entries.unescape_body_line(line)) != line for line in raw)
    try:
        got, flaw = entries.parse_checked(lines)
    except entries.FrameError:
        return  # (an unescaped line that begins framing: not an entry at all, either way)
    assert got.body == want_body
    assert (flaw is not None) == want_flaw
    if tamper < 0:
        assert got.body == text and flaw is None
