"""Issue 13, item 14: block ids that land. Obsidian takes `^id` only at the end of a block (a paragraph
ends at a blank line); 11 of 24 entries without a body had the `%% nexus:end` line right under the
header, in the same paragraph, so `[[log/…#^ID]]` did not land. Checked with a CommonMark parser (what
Obsidian's reading and editing views both build on): every entry's paragraph ends with its block id."""

from __future__ import annotations

import re

from conftest import Env
from markdown_it import MarkdownIt

from nexus import records
from nexus.ledger import log
from nexus.storage import entries


def test_every_block_id_ends_its_paragraph(env: Env) -> None:
    ids = [
        env.append("ella", "no body here").located.entry.id,
        env.append("lyra", "with a body", body="Line one.\nLine two.").located.entry.id,
        env.append("ella", "again no body", type="question").located.entry.id,
    ]
    env.run(
        "log", "append", "--agent", "lyra", "--channel", "x", "--type", "note", "--summary", "cli, bodiless"
    )
    segment = log.segment_files(env.vault)[0][1].read_text(encoding="utf-8")
    paragraphs = [t.content for t in MarkdownIt("commonmark").parse(segment) if t.type == "inline"]
    found = {}
    for text in paragraphs:
        for m in re.finditer(r"\^([0-9A-Z]{26})", text):
            found[m.group(1)] = text.rstrip().endswith(f"^{m.group(1)}")
    assert set(ids) <= set(found) and len(found) == 4
    assert all(found.values()), found  # the id is the last thing of its paragraph: the link lands


def test_an_entry_written_before_reads_the_same() -> None:
    """A body-less entry without the blank line (as written before issue 13) parses to the same entry."""
    e = records.Entry(
        id="01KB7Q2V4J6M8P0R2T4W6Y8A0C",
        ts="2026-11-30T04:41:07Z",
        agent="ella",
        channel="build",
        type="note",
        summary="CI is green",
        body=None,
        ack=(),
        seen=None,
        seq=1,
        prev=None,
        key="5f0c9d1a2b3c4d5e",
        sig="c2ln",
    )
    new = entries.render(e).rstrip("\n").split("\n")
    old = [line for i, line in enumerate(new) if not (i == 2 and line == "")]
    assert len(new) == 4 and len(old) == 3
    assert entries.parse_lines(new) == entries.parse_lines(old) == e
