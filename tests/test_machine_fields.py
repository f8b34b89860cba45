"""No Properties panel shows a value only a program reads: the handoff keeps where `--since last`
starts in its meta comment; a handoff written with them as properties still reads the same."""

from __future__ import annotations

from conftest import Env

from nexus.storage import properties
from nexus.team import handoff_window


def test_the_handoff_shows_only_what_a_person_reads_and_old_handoffs_still_read(env: Env) -> None:
    entry = env.append("ella", "the parser is ported").located.entry.id
    env.run("handoff")
    [note] = sorted((env.vault.root / "handoff").glob("*.md"))
    props, body = properties.parse(note.read_text(encoding="utf-8"), note.name)
    assert set(props) == {"until", "tags"}
    assert body.rstrip("\n").split("\n")[-1].startswith('%% nexus:meta {"last_entry":"' + entry)
    found = handoff_window.previous(env.vault)
    assert found is not None and found[2]["last_entry"] == entry and found[2]["since"] is None
    # a handoff in the older form: the same fields as properties
    old = note.with_name("2000-01-01.md")
    old.write_text(
        '---\nsince: null\nuntil: "2999-01-01T00:00:00Z"\nlast_entry: "01M8NCFC5T5D7J09XBJ4SR96CN"\n'
        'last_state_version: 3\ntags: ["nexus/handoff"]\n---\n# Morning handoff\n',
        encoding="utf-8",
    )
    found = handoff_window.previous(env.vault)
    assert found is not None and found[0] == old
    assert found[2]["last_entry"] == "01M8NCFC5T5D7J09XBJ4SR96CN" and found[2]["last_state_version"] == 3
