"""Property tests: the § file and the bank note round-trip arbitrary Unicode text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nexus.memory import bank
from nexus.memory import bounded as memory
from nexus.records import BankFact

_text = st.text(st.characters(codec="utf-8", exclude_characters="\r"), min_size=1, max_size=200)
entry = _text.map(str.strip).filter(lambda e: bool(e) and memory.DELIM not in f"\n{e}\n")


@settings(max_examples=300, deadline=None)
@given(st.lists(entry, max_size=8, unique=True))
def test_memory_file_round_trips(entries: list[str]) -> None:
    raw = memory.render(entries)
    assert memory.parse(raw) == entries
    assert memory.drift(raw, limit=10_000) is None  # nexus's own writes never look hand-edited
    assert memory.size(entries) == (len(memory.DELIM.join(entries)) if entries else 0)


@settings(max_examples=300, deadline=None)
@given(_text.map(str.strip).filter(bool), st.sampled_from(bank.TYPES))
def test_bank_section_round_trips(content: str, kind: str) -> None:
    fact = BankFact(
        id="ella-7",
        agent="ella",
        type=kind,
        content=content,
        retained="2026-11-30T04:41:07Z",
        status="pending",
        path="agents/ella/bank.md",
    )
    text = (
        "# header\n"
        + bank.render_fact(fact)
        + bank.render_fact(
            BankFact(
                id="ella-8",
                agent="ella",
                type="fact",
                content="next",
                retained="2026-11-30T04:41:08Z",
                status="pending",
                path="agents/ella/bank.md",
            )
        )
    )
    parsed = bank.parse_bank(text, "ella", "agents/ella/bank.md")
    assert [f.id for f in parsed] == ["ella-7", "ella-8"]
    assert parsed[0] == fact
