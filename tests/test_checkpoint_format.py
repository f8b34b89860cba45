"""The JSON-valued properties checkpoints and decisions use: round-trips, and YAML reads them the same."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nexus.errors import InputError
from nexus.project import checkpoints
from nexus.records import Checkpoint
from nexus.storage import notes, properties
from nexus.storage.text import TEXT_KEYS, check_line


def _one_line(s: str) -> bool:
    """What nexus accepts in a one-line field (check_line), unchanged by its stripping."""
    try:
        return check_line(s, "x") == s and "%%" not in s
    except InputError:
        return False


line = st.text(st.characters(codec="utf-8"), min_size=1, max_size=40).filter(_one_line)
values: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**9), 10**9), line, st.lists(line, max_size=4)
)
# Text properties (ids, names, times…) hold text, nothing, or lists of text; any other key any value.
plain_keys = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(lambda k: k not in TEXT_KEYS)
text_values: st.SearchStrategy[Any] = st.one_of(st.none(), line, st.lists(line, max_size=4))
props_strategy = st.builds(
    lambda plain, text: {**plain, **text},
    st.dictionaries(plain_keys, values, max_size=8),
    st.dictionaries(st.sampled_from(sorted(TEXT_KEYS)), text_values, max_size=3),
)
body_strategy = st.text(st.characters(codec="utf-8"), max_size=200)


@settings(max_examples=300, deadline=None)
@given(props_strategy, body_strategy)
def test_properties_round_trip(props: dict[str, Any], body: str) -> None:
    text = properties.render(props, body)
    got, got_body = properties.parse(text)
    assert got == props
    assert got_body == (body if body.endswith("\n") else body + "\n")


@settings(max_examples=300, deadline=None)
@given(props_strategy)
def test_yaml_reads_the_same_properties(props: dict[str, Any]) -> None:
    """What Obsidian (YAML) sees equals what nexus (JSON) reads."""
    text = properties.render(props, "body")
    yaml_props, _ = notes.parse(text)
    assert yaml_props == props


@settings(max_examples=200, deadline=None)
@given(line, line, line, st.sampled_from(checkpoints.STATUSES), st.lists(line, max_size=3), body_strategy)
def test_checkpoint_note_round_trip(
    task: str, step: str, nxt: str, status: str, files: list[str], body: str
) -> None:
    body = body.replace("%% nexus:", "")
    cp = Checkpoint("ella", task, step, nxt, status, tuple(files), body, "2026-11-30T04:41:07Z", 3)
    assert checkpoints.parse(checkpoints.render(cp), "checkpoint.md") == cp
