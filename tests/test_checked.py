"""The memo of signatures this machine already checked (keys/checked.py): readers skip what they found
valid before, never anything else; `nexus verify` never consults it; garbage or a missing memo changes
no verdict; it stays bounded."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import Env

from nexus.keys import checked
from nexus.ledger import log
from nexus.storage import entries


def _segment(env: Env) -> Path:
    return next((env.vault.root / "log").glob("*.md"))


def _tail(env: Env, n: int = 10) -> dict[str, bool]:
    return {e["summary"]: e["verified"] for e in env.run("log", "tail", "-n", str(n), "--json").json()}


def _memo(env: Env) -> Path:
    return env.keys_home / checked.FILE


def _records(env: Env) -> int:
    return _memo(env).stat().st_size // checked.SIZE


def test_a_reader_remembers_valid_signatures_and_checks_an_edited_entry_again(env: Env) -> None:
    for i in range(3):
        env.append("lyra", f"entry {i}", body="some words")
    assert _tail(env) == {"entry 0": True, "entry 1": True, "entry 2": True}
    assert _records(env) == 3  # the three valid signatures, and nothing else
    assert _tail(env) == {"entry 0": True, "entry 1": True, "entry 2": True}
    assert _records(env) == 3  # nothing checked again, nothing added
    path = _segment(env)  # an edit in place after the memo learnt the entry: a new digest, checked, fails
    path.write_bytes(path.read_bytes().replace(b"entry 1", b"entry X"))
    assert _tail(env) == {"entry 0": True, "entry X": False, "entry 2": True}
    assert _records(env) == 3
    _memo(env).unlink()  # derived: without it the verdicts are the same
    assert _tail(env) == {"entry 0": True, "entry X": False, "entry 2": True}
    assert oct(_memo(env).stat().st_mode & 0o777) == "0o600"  # beside the pins, private


def test_verify_never_consults_the_memo(env: Env) -> None:
    """The memo is as trusted as the pins beside it (whoever writes it can make a reader accept a
    signature); `nexus verify`, incremental or full, checks every signature itself."""
    env.append("lyra", "genuine")
    path = _segment(env)
    path.write_bytes(path.read_bytes().replace(b"genuine", b"doctored"))
    forged = next(loc.entry for loc in log.iter_entries(env.vault) if loc.entry.summary == "doctored")
    public = json.loads(env.run("agent", "list", "--json").stdout)
    key = next(a["public_key"] for a in public if a["name"] == "lyra")
    data = entries.signing_bytes(forged)
    _memo(env).parent.mkdir(parents=True, exist_ok=True)
    _memo(env).write_bytes(checked.digest(key, forged.sig, data))  # a memo that lies
    assert _tail(env) == {"doctored": True}  # readers consult it (that is the point of it) …
    for args in (("verify", "--json"), ("verify", "--full", "--json")):  # … a verification never does
        kinds = [p["kind"] for p in env.run(*args, check=False).json()["problems"]]
        assert kinds == ["edited"], (args, kinds)


@pytest.mark.parametrize(
    "garbage", [b"", b"\x00" * 7, random.Random(5).randbytes(16 * 5 + 3)], ids=["empty", "zeros", "random"]
)
def test_a_damaged_or_unwritable_memo_changes_no_verdict(env: Env, garbage: bytes) -> None:
    env.append("lyra", "one")
    env.append("ella", "two")
    _memo(env).parent.mkdir(parents=True, exist_ok=True)
    _memo(env).write_bytes(garbage)
    assert _tail(env) == {"one": True, "two": True}
    _memo(env).chmod(0o400)  # cannot be appended to: the reader still answers, one line of output
    try:
        run = env.run("log", "tail", "--json")
        assert [e["verified"] for e in run.json()] == [True, True] and not run.stderr
    finally:
        _memo(env).chmod(0o600)


def test_the_memo_stays_bounded_and_keeps_the_newest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checked, "KEEP", 4)
    digests = [bytes([i]) * checked.SIZE for i in range(1, 20)]
    for d in digests:  # one process after another, each remembering one new signature
        memo = checked.Memo(tmp_path)
        assert not memo.known(d)
        memo.add(d)
        memo.save()
        assert (tmp_path / checked.FILE).stat().st_size <= 2 * 4 * checked.SIZE
    memo = checked.Memo(tmp_path)
    assert all(memo.known(d) for d in digests[-4:])
    assert not memo.known(digests[0])
    assert not list(tmp_path.glob("*.tmp"))


def test_a_long_running_process_holds_a_bounded_memo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checked, "KEEP", 4)
    memo = checked.Memo(tmp_path)
    digests = [bytes([i]) * checked.SIZE for i in range(1, 40)]
    for d in digests:
        memo.add(d)
        assert memo._known is not None and len(memo._known) <= 2 * 4
    assert memo.known(digests[-1]) and not memo.known(digests[0])
