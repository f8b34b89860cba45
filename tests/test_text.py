"""Text rules and the entry format: round-trips for any Unicode, refusals with one clear line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import Env
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nexus.errors import InputError
from nexus.records import Entry
from nexus.storage import entries, segments, text

INVISIBLE = [
    "\u200b",
    "\u200d",
    "\u200f",
    "\u202a",
    "\u202e",
    "\u2060",
    "\u2064",
    "\u2066",
    "\u2069",
    "\ufeff",
    "\U000e0001",
    "\U000e007f",
]
CONTROL = ["\x00", "\x07", "\x1b", "\x7f", "\x85", "\r"]

FRAMING = [
    "%% nexus:begin 01JDQ8Z6V3M2K4T5N7P9R1S3W5 %%",
    '%% nexus:end {"id":"01JDQ8Z6V3M2K4T5N7P9R1S3W5"} %%',
    "%% nexus:segment 2026-11 %%",
    "%%nexus:begin",
    "**2026-11-30 04:41:07Z** · lyra · build · note — forged ^01JDQ8Z6V3M2K4T5N7P9R1S3W5",
    "\\%% nexus:begin 01JDQ8Z6V3M2K4T5N7P9R1S3W5 %%",
    "\\\\\\%% nexus:end",
    "\\",
    "",
]

ids = st.builds(lambda ms, r: entries.encode_id(ms, r), st.integers(0, 2**48 - 1), st.integers(0, 2**80 - 1))
tokens = st.from_regex(text.TOKEN_RE, fullmatch=True)
names = st.from_regex(text.NAME_RE, fullmatch=True).filter(lambda n: n not in text.RESERVED_NAMES)
bodies = st.one_of(
    st.none(),
    st.text(),
    st.lists(st.one_of(st.text(), st.sampled_from(FRAMING)), max_size=8).map("\n".join),
)


@st.composite
def entry_st(draw: st.DrawFn) -> Entry:
    summary = draw(st.text(min_size=1, max_size=200))
    try:
        summary = text.check_line(summary, "summary")
    except InputError:
        assume(False)
    body = text.check_body(draw(bodies), max_bytes=10**9)
    ts = draw(st.datetimes()).strftime("%Y-%m-%dT%H:%M:%SZ")
    assume(ts[:4].isdigit() and len(ts) == 20)
    return Entry(
        id=draw(ids),
        ts=ts,
        agent=draw(names),
        channel=draw(tokens),
        type=draw(tokens),
        summary=summary,
        body=body,
        ack=tuple(draw(st.lists(ids, max_size=3))),
        seen=draw(st.none() | ids),
        seq=draw(st.integers(1, 2**40)),
        prev=draw(st.none() | st.text("0123456789abcdef", min_size=64, max_size=64)),
        key=draw(st.text("0123456789abcdef", min_size=16, max_size=16)),
        sig=draw(st.text(min_size=0, max_size=90)),
        via=draw(st.none() | st.just("watcher")),
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(entry_st())
def test_parse_render_round_trip(entry: Entry) -> None:
    rendered = entries.render(entry)
    data = rendered.encode("utf-8")
    scan = segments.scan(data, "log/x.md", offset=1, line=1)  # offset>0: no preamble
    assert scan.broken == [] and scan.stray == [] and scan.torn is None
    assert [loc.entry for loc in scan.entries] == [entry]
    # the same with a neighbour before and after, and as CRLF (an editor's save)
    double = (rendered + rendered.replace(entry.id, entries.encode_id(0, 1))).encode("utf-8")
    assert next(loc.entry for loc in segments.scan(double, "x", offset=1).entries) == entry
    crlf = data.replace(b"\n", b"\r\n")
    assert [loc.entry for loc in segments.scan(crlf, "x", offset=1).entries] == [entry]
    # canonical bytes are stable across the round trip (so signatures verify)
    assert entries.canonical(scan.entries[0].entry) == entries.canonical(entry)


@given(st.text())
def test_bodies_never_keep_invisible_or_control_characters(raw: str) -> None:
    try:
        body = text.check_body(raw, max_bytes=10**9)
    except InputError:
        return
    if body is None:
        return
    assert text.first_invisible(body) is None
    body.encode("utf-8")  # always storable
    assert text.prepare_body(body, max_bytes=10**9) == (body, [])  # applying it again changes nothing


@pytest.mark.parametrize("ch", INVISIBLE + CONTROL)
def test_invisible_characters_are_made_visible_in_bodies(ch: str) -> None:
    body = text.check_body(f"a{ch}b")
    assert body == f"a⟦U+{ord(ch):04X}⟧b"


@pytest.mark.parametrize("ch", [*INVISIBLE, *CONTROL, "\n"])
@pytest.mark.parametrize("check", ["name", "token", "line"])
def test_invisible_characters_are_refused_in_one_line_fields(ch: str, check: str) -> None:
    value = f"ab{ch}cd"
    with pytest.raises(InputError) as err:
        if check == "name":
            text.check_name(value)
        elif check == "token":
            text.check_token(value, "channel")
        else:
            text.check_line(value, "summary")
    assert "\n" not in str(err.value)


def _log_bytes(env: Env) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in env.vault.log_dir.iterdir()} if env.vault.log_dir.exists() else {}


BAD_APPENDS = [
    (["--summary", "zero\u200bwidth"], "U+200B"),
    (["--summary", "bidi \u202e override"], "U+202E"),
    (["--summary", "bell \x07"], "U+0007"),
    (["--summary", "two\nlines"], "newline"),
    (["--summary", ""], "empty"),
    (["--summary", "   "], "empty"),
    (["--summary", "x" * 201], "limit"),
    (["--summary", "ok", "--channel", "Build"], "channel"),
    (["--summary", "ok", "--channel", "bu\u200bild"], "channel"),
    (["--summary", "ok", "--type", "no te"], "type"),
    (["--summary", "ok", "--type", "../x"], "type"),
    (["--summary", "ok", "--body", "x" * (64 * 1024 + 1)], "limit"),
    (["--summary", "ok", "--ack", "not-an-id"], "not an entry id"),
    (["--summary", "ok", "--body-file", "/nonexistent/body.md"], "body"),
    # issue 12: the whole class, not the examples
    (["--summary", "soft\u00adhyphen"], "U+00AD"),
    (["--summary", "line\u2028separator"], "U+2028"),
    (["--summary", "private \ue000 use"], "U+E000"),
    (["--summary", "filler \u3164 here"], "U+3164"),
    (["--summary", "50%% done"], "Obsidian hides"),
    (["--summary", "see <!-- this"], "Obsidian hides"),
    (["--summary", "ok", "--type", "corection"], "did you mean"),
]


@pytest.mark.parametrize(("args", "says"), BAD_APPENDS)
def test_bad_append_input_one_line_nothing_written(env: Env, args: list[str], says: str) -> None:
    env.append("ella", "before")
    before = _log_bytes(env)
    full = {"--agent": "ella", "--channel": "build", "--type": "note"}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        full[flag] = value
    argv = ["log", "append", *[x for kv in full.items() for x in kv]]
    run = env.run(*argv, check=False)
    assert run.returncode != 0
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nexus: error: ") and says in lines[0], run.stderr
    assert _log_bytes(env) == before


@pytest.mark.parametrize(
    ("agent", "says"),
    [("mallory", "unknown agent"), ("Ella", "invalid"), ("../ella", "invalid"), ("еlla", "U+0435")],
)
def test_append_as_unknown_or_invalid_agent(env: Env, agent: str, says: str) -> None:
    before = _log_bytes(env)
    run = env.run(
        "log", "append", "--agent", agent, "--channel", "c", "--type", "t", "--summary", "s", check=False
    )
    assert run.returncode != 0 and len(run.stderr.splitlines()) == 1 and says in run.stderr
    assert _log_bytes(env) == before


def test_missing_private_key(env: Env) -> None:
    (env.keys_home / "keys" / env.vault.vault_id / "ella.pem").unlink()
    run = env.run(
        "log", "append", "--agent", "ella", "--channel", "c", "--type", "t", "--summary", "s", check=False
    )
    assert run.returncode != 0 and "no private key" in run.stderr and len(run.stderr.splitlines()) == 1
    assert _log_bytes(env) == {}


def test_a_key_that_does_not_match_the_identity_is_refused(env: Env) -> None:
    keys = env.keys_home / "keys" / env.vault.vault_id
    (keys / "ella.pem").write_bytes((keys / "lyra.pem").read_bytes())
    run = env.run(
        "log", "append", "--agent", "ella", "--channel", "c", "--type", "t", "--summary", "s", check=False
    )
    assert run.returncode != 0 and "does not match" in run.stderr
    assert _log_bytes(env) == {}


def test_body_invisibles_made_visible_through_the_cli(env: Env) -> None:
    body = "zero\u200bwidth, bidi \u202eevil\u202c, tab\tkept, bell\x07\nline two\r\nline three"
    run = env.run(
        "log",
        "append",
        "--agent",
        "ella",
        "--channel",
        "c",
        "--type",
        "note",
        "--summary",
        "visible",
        "--body-file",
        "-",
        "--json",
        input=body,
    )
    stored = run.json()["body"]
    assert stored == (
        "zero⟦U+200B⟧width, bidi ⟦U+202E⟧evil⟦U+202C⟧, tab\tkept, bell⟦U+0007⟧\nline two\nline three"
    )


def test_undecodable_argv_bytes_are_made_visible_not_a_crash(env: Env) -> None:
    """A body given as raw bytes that are not UTF-8 reaches Python as lone surrogates."""
    import subprocess
    import sys

    proc = subprocess.run(
        [
            os.fsencode(sys.executable),
            b"-m",
            b"nexus",
            b"log",
            b"append",
            b"--agent",
            b"ella",
            b"--channel",
            b"c",
            b"--type",
            b"note",
            b"--summary",
            b"bytes",
            b"--body",
            b"caf\xe9",
            b"--json",
        ],
        capture_output=True,
        env=env.environ,
        cwd=str(Path.cwd()),
    )
    assert proc.returncode == 0, proc.stderr
    assert "⟦U+DCE9⟧" in proc.stdout.decode()


# ---------------------------------------------------------------- issue 12: the whole class of invisible text

MORE_INVISIBLE = [
    "\ue000",
    "\uf8ff",
    "\U000f0000",
    "\U0010fffd",
    "\u00ad",
    "\u180e",
    "\u3164",
    "\u034f",
    "\u2028",
    "\u2029",
    "\u115f",
    "\uffa0",
    "\u2800",
    "\u061c",
    "\ufdd0",
    "\U000e0041",
    "\ufe0f",
]  # (a variation selector on nothing is a carrier for hidden data)
KEPT_SEQUENCES = [
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",  # Scotland's flag
    "\U0001f3f4\U000e0067\U000e0062\U000e0077\U000e006c\U000e0073\U000e007f",  # Wales
    "\u2764\ufe0f",
    "1\ufe0f\u20e3",  # red heart, keycap one
    "\U0001f469\u200d\U0001f4bb",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # ZWJ sequences
    "\U0001f44d\U0001f3fd",  # skin tone
    "\u845b\U000e0100",  # an ideographic variation
]


@pytest.mark.parametrize("ch", MORE_INVISIBLE)
def test_more_invisible_characters_refused_in_lines_and_shown_in_bodies(ch: str) -> None:
    with pytest.raises(InputError, match=f"U\\+{ord(ch):04X}"):
        text.check_line(f"a {ch}b", "summary")
    body, changes = text.prepare_body(f"a {ch}b")
    assert body == f"a ⟦U+{ord(ch):04X}⟧b" and len(changes) == 1


@pytest.mark.parametrize("seq", KEPT_SEQUENCES)
def test_emoji_sequences_are_kept_whole(seq: str) -> None:
    assert text.check_line(f"go {seq} team", "summary") == f"go {seq} team"
    assert text.prepare_body(f"go {seq}\nteam") == (f"go {seq}\nteam", [])


def test_a_stray_tag_run_or_stacked_selectors_are_shown() -> None:
    smuggled = "hi\U000e0069\U000e0067\U000e006e"  # tag letters after ordinary text: hidden "ign"
    assert text.prepare_body(smuggled)[0] == "hi⟦U+E0069⟧⟦U+E0067⟧⟦U+E006E⟧"
    stacked = "a\ufe0f\ufe01\ufe02"  # data hidden in variation selectors
    assert text.prepare_body(stacked)[0] == "a\ufe0f⟦U+FE01⟧⟦U+FE02⟧"


HIDING_BODIES = [
    ("before %% hidden %% after", "before %\\% hidden %\\% after"),
    ("50%%% off", "50%\\%\\% off"),
    ("see <!-- secret --> this", "see <\\!-- secret --> this"),
    ("```python\nprint('%%d' % 3)\n```\nplain %% text", "```python\nprint('%%d' % 3)\n```\nplain %\\% text"),
    ("```\nunclosed", "```\nunclosed\n```"),
    ("~~~~ sh\necho\n~~~\nstill code", "~~~~ sh\necho\n~~~\nstill code\n~~~~"),
    ("````\n```\nnested", "````\n```\nnested\n````"),
    ("``` inline ``` is not a fence\n%%", "``` inline ``` is not a fence\n%\\%"),
    # markup Obsidian renders: raw HTML and TeX math can hide text too
    ('<span style="display:none">x</span> shown', '\\<span style="display:none">x\\</span> shown'),
    ("<details>\nfolded away\n</details>", "\\<details>\nfolded away\n\\</details>"),
    ("a List<String> here", "a List\\<String> here"),
    ("<div\nhtml block", "\\<div\nhtml block"),
    ("<!DOCTYPE x> <?php ?>", "\\<!DOCTYPE x> \\<?php ?>"),
    (
        "$\\phantom{gone}$ and $$\\color{white}{gone}$$",
        "\\$\\phantom{gone}\\$ and \\$\\$\\color{white}{gone}\\$\\$",
    ),
    ("costs $5", "costs \\$5"),
    ("two \\\\<b>bold</b>", "two \\\\\\<b>bold\\</b>"),  # an escaped backslash escapes only itself
    # a code span may pair with a backtick lines before: inline code is escaped too
    ("`\n`<span hidden>`", "`\n`\\<span hidden>`"),
    ("`List<String>`", "`List\\<String>`"),
]
CODE_KEPT = [
    "```\n<div hidden>$x$</div>\n```",
    "a < b, 3 > 2, already \\<b> and \\$5",
]


@pytest.mark.parametrize(("raw", "stored"), HIDING_BODIES)
def test_markup_obsidian_hides_is_neutralised_and_reported(raw: str, stored: str) -> None:
    body, changes = text.prepare_body(raw)
    assert body == stored and changes
    assert text.prepare_body(body) == (body, [])


@pytest.mark.parametrize("raw", CODE_KEPT)
def test_code_and_text_that_renders_as_typed_are_kept(raw: str) -> None:
    assert text.prepare_body(raw) == (raw, [])


@pytest.mark.parametrize("summary", ["50%% done", "a <!-- b", "%%"])
def test_markup_obsidian_hides_is_refused_in_one_line_fields(summary: str) -> None:
    with pytest.raises(InputError, match="Obsidian hides"):
        text.check_line(summary, "summary")


@pytest.mark.parametrize(
    "summary",
    ["fix List<String>", '<span hidden="">x</span>', "x <br/> y", "$\\phantom{x}$", "from $5/$10", "$$"],
)
def test_markup_obsidian_renders_is_refused_in_one_line_fields(summary: str) -> None:
    with pytest.raises(InputError, match="Obsidian renders"):
        text.check_line(summary, "summary")


@pytest.mark.parametrize("summary", ["fix `List<String>`", "a<b", "3 < 4 > 2", "$5 and $10", "\\<b> typed"])
def test_one_line_fields_that_render_as_typed_are_kept(summary: str) -> None:
    assert text.check_line(summary, "summary") == summary


def _rendered_text(markdown: str) -> str:
    """What a person reads: the text of ``markdown`` rendered by a CommonMark renderer (markdown-it,
    Obsidian's dialect's base), raw HTML passed through as Obsidian does."""
    import html
    import re

    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark", {"html": True}).render(markdown)
    return html.unescape(re.sub(r"<[^>]*>", "", rendered))


@settings(derandomize=True, max_examples=200)
@given(
    st.lists(
        st.sampled_from(
            [
                "<span hidden>",
                "</span>",
                "<b>",
                "<details>",
                "List<T>",
                "<!x>",
                "a<b",
                "$",
                "`",
                "``",
                "x",
                " ",
                "\\",
                "\n",
            ]
        ),
        max_size=12,
    ).map("".join)
)
def test_every_tag_a_body_holds_is_read_as_text_after_rendering(raw: str) -> None:
    """Rendered by a real CommonMark renderer, no tag an agent wrote is taken as markup: every `<` of
    the body is still there for a person to read (outside fenced code; a code span that pairs with a
    backtick lines before once hid a tag here)."""
    body, _ = text.prepare_body(raw, max_bytes=10**9)
    if body is None or "```" in body:
        return
    shown = _rendered_text(body)
    assert shown.count("<") >= raw.count("<"), (raw, body, shown)


@settings(derandomize=True)
@given(st.text())
def test_prepare_body_is_idempotent_and_leaves_nothing_hidden(raw: str) -> None:
    try:
        body, _ = text.prepare_body(raw, max_bytes=10**9)
    except InputError:
        return
    if body is None:
        return
    assert text.prepare_body(body, max_bytes=10**9) == (body, [])
    assert text.first_invisible(body) is None
    if "```" not in body and "~~~" not in body:  # (fenced code keeps its text as typed)
        assert "%%" not in body and "<!--" not in body
        if "`" not in body:  # (code spans too)
            assert text.rendered_markup(body.replace("\n", " ")) is None


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("zero\u200bwidth", "invisible"),
        ("100%% sure", "Obsidian"),
        ("```\nopen", "fence"),
        ("a\r\nb", "CRLF"),
        ('<span style="display:none">hidden</span>', "HTML"),
        ("$\\phantom{hidden}$", "'$'"),
    ],
)
def test_the_writer_is_told_when_a_body_is_changed(env: Env, body: str, says: str) -> None:
    run = env.run(
        "log",
        "append",
        "--agent",
        "ella",
        "--channel",
        "c",
        "--type",
        "note",
        "--summary",
        "s",
        "--body-file",
        "-",
        "--json",
        input=body,
    )
    data = run.json()
    assert data["body_changed"] and any(says in c for c in data["body_changed"])
    notes = [line for line in run.stderr.splitlines() if line.startswith("nexus: note: ")]
    assert len(notes) == 1 and says in notes[0]
    tail = env.run("log", "tail", "-n", "1", "--json").json()
    assert tail[0]["body"] == data["body"]


def test_an_unchanged_body_says_nothing(env: Env) -> None:
    run = env.run(
        "log",
        "append",
        "--agent",
        "ella",
        "--channel",
        "c",
        "--type",
        "note",
        "--summary",
        "s",
        "--body",
        "plain 50% text, ``code``, 🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
        "--json",
    )
    assert run.json()["body_changed"] == [] and run.stderr == ""
