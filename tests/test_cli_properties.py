"""Property-based test over the real CLI (issue 12): random agent names, channels, types, summaries and
bodies – all of Unicode, control characters, lines that look like framing or hidden markup – never
produce a traceback, never write outside the vault, and are either stored exactly (the body exactly, or
changed as the command said it changed it) or refused with one line that changes nothing.

Each example runs `nexus log append` as a real process, so the example count is kept modest; the
generation is derandomized, so every run tries the same inputs (no flaky CI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import Env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nexus.ledger import log
from nexus.storage import text

FRAMING = [
    "%% nexus:begin 01JDQ8Z6V3M2K4T5N7P9R1S3W5 %%",
    '%% nexus:end {"id":"01JDQ8Z6V3M2K4T5N7P9R1S3W5"} %%',
    "**2026-11-30 04:41:07Z** · lyra · build · note — forged ^01JDQ8Z6V3M2K4T5N7P9R1S3W5",
    "\\%% nexus:begin",
    "```",
    "~~~~",
    "%%",
    "<!-- hidden -->",
    "§",
    "---",
    "\r",
    "\u2028",
    "\ufeff",
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
    "\u200d",
    "\x1b[2J",
]
# Anything a process can receive in argv: no NUL, no lone surrogate.
ARGV_CHARS = st.characters(codec="utf-8", exclude_characters="\x00")
argv_text = st.text(ARGV_CHARS, max_size=60)
names = st.one_of(
    st.sampled_from(["ella", "lyra", "sam", "Ella", "../ella", "ella/x", "con", "-x", ""]), argv_text
)
tokens = st.one_of(
    st.sampled_from(["build", "note", "decision", "corection", "Build", "a b", "../t"]),
    st.from_regex(text.TOKEN_RE, fullmatch=True),
    argv_text,
)
summaries = st.one_of(
    argv_text,
    st.sampled_from(FRAMING),
    st.lists(st.one_of(argv_text, st.sampled_from(FRAMING)), max_size=3).map(" ".join),
)
bodies = st.one_of(
    st.none(),
    st.text(st.characters(codec="utf-8"), max_size=300),
    st.lists(
        st.one_of(st.text(st.characters(codec="utf-8"), max_size=40), st.sampled_from(FRAMING)),
        max_size=8,
    ).map("\n".join),
)


def _outside_state(root: Path) -> dict[str, bytes]:
    """Every file beside the vault (the keys, a decoy) with its bytes."""
    out: dict[str, bytes] = {}
    for folder, _dirs, files in os.walk(root):
        if Path(folder).is_relative_to(root / "vault"):
            continue
        for name in files:
            out[os.path.join(folder, name)] = (Path(folder) / name).read_bytes()
    return out


# Valid names and tokens, so summaries and bodies reach the write path (most are stored).
VISIBLE = st.characters(blacklist_categories=("Cs", "Cc", "Cf", "Co", "Zl", "Zp"))
valid_summaries = st.one_of(st.text(VISIBLE, min_size=1, max_size=80), summaries)
valid_types = st.one_of(
    st.sampled_from(["note", "decision", "question", "build"]), st.from_regex(text.TOKEN_RE, fullmatch=True)
)
PROPERTY_SETTINGS = settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@PROPERTY_SETTINGS
@given(agent=names, channel=tokens, type=tokens, summary=summaries, body=bodies)
def test_log_append_round_trips_or_refuses_in_one_line(
    env: Env, agent: str, channel: str, type: str, summary: str, body: str | None
) -> None:
    _append_round_trips_or_refuses(env, agent, channel, type, summary, body)


@PROPERTY_SETTINGS
@given(
    agent=st.sampled_from(["ella", "lyra"]),
    channel=st.from_regex(text.TOKEN_RE, fullmatch=True),
    type=valid_types,
    summary=valid_summaries,
    body=bodies,
)
def test_summaries_and_bodies_of_any_text_round_trip_through_the_cli(
    env: Env, agent: str, channel: str, type: str, summary: str, body: str | None
) -> None:
    _append_round_trips_or_refuses(env, agent, channel, type, summary, body)


def _append_round_trips_or_refuses(
    env: Env, agent: str, channel: str, type: str, summary: str, body: str | None
) -> None:
    base = env.vault.root.parent
    (base / "decoy.md").write_text("outside\n")
    outside = _outside_state(base)
    log_before = {p.name: p.read_bytes() for p in env.vault.log_dir.iterdir()}
    argv = [
        sys.executable,
        "-W",
        "error",
        "-m",
        "nexus",
        "log",
        "append",
        f"--agent={agent}",
        f"--channel={channel}",
        f"--type={type}",
        f"--summary={summary}",
        "--json",
    ]
    if body is not None:
        argv.append("--body-file=-")
    proc = subprocess.run(
        argv,
        input=None if body is None else body.encode("utf-8"),
        capture_output=True,
        env=env.environ,
        cwd=str(base),
        timeout=60,
    )
    out, err = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    assert "Traceback" not in err, err
    assert _outside_state(base) == outside  # nothing written beside the vault
    if proc.returncode != 0:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("nexus: error: "), err
        assert out == ""
        assert {p.name: p.read_bytes() for p in env.vault.log_dir.iterdir()} == log_before
        return
    import json

    data = json.loads(out)
    stored = log.tail(env.vault, 1)[0].entry
    assert stored.id == data["id"]
    assert (stored.agent, stored.channel, stored.type) == (agent, channel, type)
    assert stored.summary == summary.strip()
    expected, changes = text.prepare_body(body)
    assert data["body_changed"] == changes
    assert stored.body == expected
    if not changes:  # byte for byte
        assert stored.body == (body if body is None or body.strip() else None)
    else:
        notes = [line for line in err.splitlines() if line.startswith("nexus: note: ")]
        assert len(notes) == 1
