"""The README's "A first session" is run as printed, and its output compared with what the README shows.

Each ``$ `` line of the session's console block runs in a real shell (``bash -c``), one after the
other, in a fresh folder the README calls ``/tmp/fs``, with the ``nexus`` of this installation first
on PATH and ``NEXUS_HOME`` outside the vault; what it prints (stdout and stderr, as a person sees
them) must be what the README prints below it. What differs on every run is masked, the way doctest's
ellipsis or cog keep documentation true: entry ids (an id the README shows is the id the same place
prints in the run, and later commands that type it get the real one), key ids, times and dates, and
the folder the session runs in. Everything else, down to line numbers and blank lines, must match.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SHOWN_DIR = "/tmp/fs"  # the folder the README's session says it ran in

ULID = r"[0-9A-HJKMNP-TV-Z]{26}"
# what changes on every run, each with the pattern its run-time value must match
VARYING = re.compile(
    rf"(?P<ulid>{ULID})"
    r"|(?P<key>(?<=key )[0-9a-f]{16})"
    r"|(?P<stamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"
    r"|(?P<minute>\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\dZ|Z)?)"
    r"|(?P<month>(?<=log/)\d{4}-\d\d)"
)
SHAPES = {
    "key": r"[0-9a-f]{16}",
    "stamp": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ",
    "month": r"\d{4}-\d\d",
}


def session(readme: str) -> list[tuple[str, str]]:
    """The (command, printed output) pairs of the README's first session."""
    part = readme.split("\n## A first session\n", 1)[1]
    block = part.split("```console\n", 1)[1].split("\n```", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for line in block.split("\n"):
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"output before the first command: {line!r}"
            steps[-1][1].append(line)
    return [(cmd, "\n".join(out).strip("\n")) for cmd, out in steps]


def pattern(expected: str, ids: dict[str, str]) -> tuple[re.Pattern[str], list[str]]:
    """A regular expression a run's output must match in full, and the README ids it captures (in
    order): an id already seen must come back as the same run-time id."""
    parts: list[str] = []
    captured: list[str] = []
    at = 0
    for m in VARYING.finditer(expected):
        parts.append(re.escape(expected[at : m.start()]))
        kind = m.lastgroup or ""
        value = m.group()
        if kind == "ulid":
            if value in ids:
                parts.append(re.escape(ids[value]))
            elif value in captured:
                parts.append(f"(?P=u{captured.index(value)})")
            else:
                parts.append(f"(?P<u{len(captured)}>{ULID})")
                captured.append(value)
        elif kind == "minute":
            suffix = value[16:]  # nothing, "Z", or seconds and "Z"
            parts.append(r"\d{4}-\d\d-\d\d \d\d:\d\d" + (r":\d\dZ" if suffix.startswith(":") else suffix))
        else:
            parts.append(SHAPES[kind])
        at = m.end()
    parts.append(re.escape(expected[at:]))
    return re.compile("".join(parts)), captured


def run_session(readme: str, where: Path) -> list[str]:
    """Run the session in ``where``; the steps whose output differs from the README's, each shown
    as the command, what the README prints and what the run printed."""
    home = where / "keys"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_")}
    env.update(
        NEXUS_HOME=str(home),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        NO_COLOR="1",
        COLUMNS="100",
    )
    cwd = where
    ids: dict[str, str] = {}
    wrong: list[str] = []
    for command, expected in session(readme):
        typed = command
        for shown, real in ids.items():
            typed = typed.replace(shown, real)
        proc = subprocess.run(
            ["bash", "-c", f'{typed}\necho "@cwd=$PWD"'],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
        )
        out, _, tail = proc.stdout.rpartition("@cwd=")
        cwd = Path(tail.strip())
        got = out.replace(str(where), SHOWN_DIR).strip("\n")
        regex, captured = pattern(expected, ids)
        m = regex.fullmatch(got)
        if m is None:
            wrong.append(f"$ {command}\n--- the README prints:\n{expected}\n--- the run printed:\n{got}\n")
            continue
        for i, shown in enumerate(captured):
            ids[shown] = m.group(f"u{i}")
    return wrong


def test_the_pattern_masks_what_varies_and_nothing_else() -> None:
    regex, captured = pattern("01M8S4ZE7VFS0E6HSC85GHMTE6 at 2026-12-01 15:53Z (key 8b1bdd56153b80b7)", {})
    m = regex.fullmatch("01M96DQPG39T1QWFBMV1DCHB4Z at 2026-12-06 19:36Z (key ec1ab9aebb116fa9)")
    assert m is not None and captured == ["01M8S4ZE7VFS0E6HSC85GHMTE6"]
    assert regex.fullmatch("01M96DQPG39T1QWFBMV1DCHB4Z at 2026-12-06 19:36Z (key ec1ab9aebb116fa9)!") is None
    # an id the README showed before must come back as the run's id
    regex, _ = pattern(
        "acks 01M8S4ZE7VFS0E6HSC85GHMTE6", {"01M8S4ZE7VFS0E6HSC85GHMTE6": "01M96DQPG39T1QWFBMV1DCHB4Z"}
    )
    assert regex.fullmatch("acks 01M96DQPG39T1QWFBMV1DCHB4Z") and not regex.fullmatch(
        "acks 01M96DQV6YBZH3RZFR3EM83DAQ"
    )
    regex, _ = pattern("log/2026-12.md:16-16", {})
    assert regex.fullmatch("log/2027-01.md:16-16") and not regex.fullmatch("log/2027-01.md:10-10")


def test_the_readme_first_session_runs_as_printed(tmp_path: Path) -> None:
    where = tmp_path / "fs"
    where.mkdir()
    wrong = run_session(README.read_text(encoding="utf-8"), where)
    assert not wrong, "the README's first session no longer prints what it shows:\n\n" + "\n".join(wrong)


def test_the_readme_session_reads_before_it_decides() -> None:
    """No accidental race: ella reads what the others wrote before she records the decision."""
    commands = [cmd for cmd, _ in session(README.read_text(encoding="utf-8"))]
    decide = next(i for i, cmd in enumerate(commands) if cmd.startswith("nexus decide --agent ella"))
    assert any(
        cmd.startswith(("nexus log read --agent ella", "nexus brief --agent ella"))
        for cmd in commands[:decide]
    )
