"""Issue 10: tamper evidence at the edges. Each audit finding as a regression test with real processes."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import faulty
import pytest
from conftest import Env

from nexus.ledger import log
from nexus.records import Entry
from nexus.storage import entries


def _segment(env: Env) -> Path:
    ((_, path),) = log.segment_files(env.vault)
    return path


def _append(env: Env, agent: str, summary: str, *extra: str, check: bool = True) -> object:
    return env.run(
        "log",
        "append",
        "--agent",
        agent,
        "--channel",
        "c",
        "--type",
        "note",
        "--summary",
        summary,
        *extra,
        check=check,
    )


def _kinds(env: Env) -> list[tuple[str, str | None]]:
    run = env.run("verify", "--json", check=False)
    assert "Traceback" not in run.stderr, run.stderr
    return [(p["kind"], p["entry_id"]) for p in run.json()["problems"]]


# ---------------------------------------------------------------- finding 1: one damaged byte


def test_non_ascii_in_a_signature_is_one_finding_and_every_append_goes_on(env: Env) -> None:
    env.append("ella", "one")
    victim = env.append("lyra", "two").located
    env.append("ella", "three")
    path = _segment(env)
    data = path.read_bytes()
    at = data.rindex(b"\n%%", victim.offset, victim.end_offset) + 20  # (inside the signature's token)
    path.write_bytes(data[:at] + "é".encode() + data[at + 1 :])
    for wipe in (False, True):
        if wipe:
            shutil.rmtree(env.vault.state)
        kinds = _kinds(env)
        assert any(entry_id == victim.entry.id for _k, entry_id in kinds), kinds
        for agent in ("ella", "lyra", "sam"):
            run = _append(env, agent, f"after damage {wipe}", check=False)
            assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr  # type: ignore[attr-defined]
    run = env.run("log", "tail", "-n", "20")
    # (format 2: a token holding a non-ASCII character is no end line: framing, never an entry shown)
    shown = [block for block in run.stdout.split("\n\n") if victim.entry.id in block]
    assert all("UNVERIFIED" in block for block in shown), shown


# ---------------------------------------------------------------- finding 2: forged entries where agents read


FORGED = "ship it to prod"


def _forge(env: Env, *, key_of: str | None) -> Entry:
    last = list(log.iter_entries(env.vault))[-1]
    fake = Entry(
        id=entries.new_id(after=last.entry.id),
        ts=last.entry.ts,
        agent="ella",
        channel="deploy",
        type="decision",
        summary=FORGED,
        body="do it now",
        ack=(),
        seen=None,
        seq=9,
        prev=None,
        key=env.signer(key_of).key_id if key_of else "0" * 16,
    )
    if key_of:
        fake = replace(fake, sig=env.signer(key_of).sign(entries.signing_bytes(fake)))
    with _segment(env).open("a", encoding="utf-8") as f:
        f.write(entries.render(fake))
    return fake


@pytest.mark.parametrize("key_of", [None, "lyra"])
def test_a_forged_entry_is_never_shown_as_its_authors_words(env: Env, key_of: str | None) -> None:
    env.append("ella", "a genuine entry")
    env.append("lyra", "another genuine one")
    fake = _forge(env, key_of=key_of)
    as_author = re.compile(r"ella · deploy · decision — ship it to prod")
    for args in (
        ("log", "read", "--agent", "sam", "--peek"),
        ("log", "tail"),
        ("brief", "--agent", "lyra", "--peek"),
    ):
        out = env.run(*args).stdout
        assert not as_author.search(out), (args, out)
        assert "UNVERIFIED" in out and fake.id in out, (args, out)
        assert "a genuine entry" in out or args[0] == "brief" or "another genuine one" in out
    items = env.run("log", "read", "--agent", "sam", "--json").json()
    verdicts = {i["id"]: i["verified"] for i in items}
    assert verdicts[fake.id] is False and sum(verdicts.values()) == 2
    # the hook's context (the brief through nexus-hook) marks it too
    assert dict(_kinds(env))["forged"] == fake.id


def test_a_forged_entry_in_a_race_is_never_shown_as_its_authors_words(env: Env) -> None:
    """A forged entry that races with a genuine one: the brief's race line marks it, never quotes it."""
    env.append("sam", "a person's note first")
    fake = _forge(env, key_of=None)
    env.append("lyra", "genuine, written without seeing it")
    out = env.run("brief", "--agent", "lyra", "--peek").stdout
    race = next((line for line in out.splitlines() if "RACE" in line and fake.id in line), None)
    assert race is not None, out
    assert FORGED not in race and "ella's" not in race, race
    assert f"UNVERIFIED entry [{fake.id}]" in race, race


# ---------------------------------------------------------------- finding 3: the trust root


def test_a_key_swapped_into_an_identity_note_is_not_trusted(env: Env) -> None:
    genuine = env.append("ella", "genuine ella").located.entry
    assert _kinds(env) == []  # (this machine pins ella's and lyra's keys now)
    note = env.vault.identity_path("ella")
    lyra_note = env.vault.identity_path("lyra").read_text(encoding="utf-8")
    lyra_meta = re.search(r"^%% nexus:meta .*$", lyra_note, re.M).group(0)  # type: ignore[union-attr]
    text = note.read_text(encoding="utf-8")  # (the key lives in the note's meta comment)
    note.write_text(re.sub(r"^%% nexus:meta .*$", lyra_meta, text, flags=re.M), encoding="utf-8")
    # lyra signs an entry in ella's name with her own key
    lyra = env.signer("lyra")
    last = list(log.iter_entries(env.vault))[-1]
    fake = Entry(
        id=entries.new_id(after=last.entry.id),
        ts=last.entry.ts,
        agent="ella",
        channel="c",
        type="note",
        summary="lyra as ella",
        body=None,
        ack=(),
        seen=None,
        seq=2,
        prev=entries.entry_hash(genuine),
        key=lyra.key_id,
    )
    fake = replace(fake, sig=lyra.sign(entries.signing_bytes(fake)))
    with _segment(env).open("a", encoding="utf-8") as f:
        f.write(entries.render(fake))
    kinds = _kinds(env)
    assert ("key-changed", None) in kinds
    assert [k for k, i in kinds if i == fake.id] and all(i != genuine.id for _k, i in kinds), kinds
    tail = {i["id"]: i["verified"] for i in env.run("log", "tail", "--json").json()}
    assert tail[genuine.id] is True and tail[fake.id] is False
    found = {
        h["entry_id"]: h["verified"] for h in env.run("search", "ella", "--json").json() if h.get("entry_id")
    }
    assert found[genuine.id] is True and found[fake.id] is False  # search uses the pinned keys too
    listed = env.run("agent", "trusted", "--json").json()
    assert {r["name"] for r in listed} == {"ella", "lyra", "sam"}
    assert [r["changed"] for r in listed if r["name"] == "ella"] == [True]
    assert "NOT trusted" in env.run("agent", "trusted").stdout
    # a person accepts the rotation: the new key is trusted, the old one still verifies old entries
    env.run("agent", "trust", "ella")
    tail = {i["id"]: i["verified"] for i in env.run("log", "tail", "--json").json()}
    assert tail[genuine.id] is True and tail[fake.id] is True
    assert len([r for r in env.run("agent", "trusted", "--json").json() if r["name"] == "ella"]) == 2


# ---------------------------------------------------------------- finding 5: unsigned changes


@pytest.mark.parametrize("change", ["extra-field", "spaces", "reorder", "rename-seen", "escape"])
def test_a_changed_end_line_encoding_does_not_verify(v1_env: Env, change: str) -> None:
    """Format 1 (an entry written by the nexus that wrote it, tests/fixtures/format-v1); format 2's
    encodings: tests/test_format_v2.py."""
    env = v1_env
    target = next(
        loc for loc in log.iter_entries(env.vault) if loc.entry.summary == "a body that imitates framing"
    )
    env.append("ella", "three")
    path = _segment(env)
    data = path.read_bytes()
    chunk = data[target.offset : target.end_offset].decode()
    end = next(line for line in chunk.split("\n") if line.startswith("%% nexus:end "))
    meta = json.loads(end[len("%% nexus:end ") : -3])
    if change == "extra-field":
        new_end = end.replace('"v":1}', '"v":1,"x":"y"}')
    elif change == "spaces":
        new_end = end.replace('","', '", "', 1)
    elif change == "reorder":
        flipped = dict(reversed(list(meta.items())))
        new_end = "%% nexus:end " + json.dumps(flipped, separators=(",", ":")) + " %%"
    elif change == "rename-seen":
        new_end = end.replace('"seen":', '"sene":')
    else:
        new_end = end
        chunk = chunk.replace("\\**2026-11-30", "**2026-11-30")
    assert new_end != end or change == "escape"
    new = chunk.replace(end, new_end)
    assert new != data[target.offset : target.end_offset].decode()
    path.write_bytes(data[: target.offset] + new.encode() + data[target.end_offset :])
    kinds = _kinds(env)
    assert any(i == target.entry.id for _k, i in kinds), kinds
    if change in ("reorder", "spaces"):
        # the same fields and values, only the encoding differs: caught for that alone
        assert json.loads(new_end[len("%% nexus:end ") : -3]) == meta
        assert ("non-canonical", target.entry.id) in kinds, kinds
    assert env.run("verify", check=False).returncode == 1


# ---------------------------------------------------------------- finding 4: garbage is no one's words


def test_a_zero_filled_tail_is_torn_quarantined_and_never_signed(env: Env) -> None:
    from test_watch import WatchProcess

    first = env.append("ella", "before the crash").located.entry
    path = _segment(env)
    w = WatchProcess(env)
    try:
        with path.open("ab") as f:
            f.write(b"\x00" * 300)
        w.wait_for(lambda e: e["event"] == "quarantined")
        (bad,) = [e for e in w.events if e["event"] == "quarantined"]
        assert bad["file"] == f"log/{path.name}"
        assert not [e for e in w.events if e["event"] == "person"]
        assert b"\x00" not in path.read_bytes()
        moved = list((env.vault.state / "quarantine").iterdir())
        assert len(moved) == 1 and moved[0].read_bytes() == b"\x00" * 300
        # a byte flipped in the header line (which opens it) of the last entry: the original is put
        # back, the damaged copy is never signed as the person's note
        last = _append(env, "lyra", "the last one")
        w.wait_for(lambda e: e["event"] == "entry" and e["id"] == last.stdout.strip())  # type: ignore[attr-defined]
        data = path.read_bytes()
        at = data.index(f" ^{last.stdout.strip()}\n".encode())  # type: ignore[attr-defined]
        at = data.rindex(b"\n", 0, at) + 1  # (the first byte of its header line)
        path.write_bytes(data[:at] + b"&" + data[at + 1 :])
        w.wait_for(lambda e: e["event"] == "error" and "damaged copy" in e.get("message", ""))
    finally:
        w.close()
    ids = [loc.entry.id for loc in log.iter_entries(env.vault)]
    assert first.id in ids
    assert not [loc for loc in log.iter_entries(env.vault) if loc.entry.agent == "sam"]
    kinds = {k for k, _i in _kinds(env)}
    assert "damaged" in kinds  # the damaged copy is named, not passed off as stray text


def test_garbage_tail_without_a_watcher_is_torn_and_the_next_append_quarantines_it(env: Env) -> None:
    env.append("ella", "one")
    path = _segment(env)
    with path.open("ab") as f:
        f.write(b"\xff\xfe garbage \x01\x02\n\x00\x00")
    assert ("torn-tail", None) in _kinds(env)
    run = _append(env, "lyra", "after")
    assert "quarantine" in run.stderr  # type: ignore[attr-defined]
    assert _kinds(env) == []


# ---------------------------------------------------------------- finding 6: rollback without local state


def _fresh_clone(env: Env, tmp: Path) -> Env:
    """The vault as another machine gets it: the notes, without .nexus/ (derived, never synced)."""
    clone = tmp / "clone"
    shutil.copytree(env.vault.root, clone, ignore=shutil.ignore_patterns(".nexus"))
    from nexus.storage.vault import Vault

    return Env(Vault(clone), env.keys_home)


def test_truncation_and_rollback_are_caught_in_a_fresh_clone(env: Env, tmp_path: Path) -> None:
    env.append("ella", "one")
    env.append("lyra", "two")
    path = _segment(env)
    older = path.read_bytes()
    gone = [env.append("ella", f"later {i}").located.entry.id for i in range(3)]
    env.append("lyra", "lyra's last")
    # an older copy of the segment restored (the newest entries of both agents gone)
    path.write_bytes(older)
    clone = _fresh_clone(env, tmp_path)
    kinds = _kinds(clone)
    assert ("truncated", gone[-1]) in kinds, kinds
    msg = next(
        p["message"]
        for p in clone.run("verify", "--json", check=False).json()["problems"]
        if p["kind"] == "truncated" and p["agent"] == "ella"
    )
    assert "seq 2–4" in msg
    assert {
        a
        for k, a in (
            (p["kind"], p["agent"]) for p in clone.run("verify", "--json", check=False).json()["problems"]
        )
        if k == "truncated"
    } == {"ella", "lyra"}
    shutil.rmtree(env.vault.state)  # ... and on this machine after .nexus/ is removed
    assert ("truncated", gone[-1]) in _kinds(env)


def test_flips_in_the_last_entry_never_vanish_into_a_warning(env: Env, tmp_path: Path) -> None:
    env.append("ella", "one")
    last = env.append("lyra", "the last entry", body="some words").located
    path = _segment(env)
    data = path.read_bytes()
    from nexus.audit.verify_state import verify

    clean = 0
    for at in range(last.offset, last.end_offset - 1, 7):
        for bit in (0x01, 0x20):
            mutated = bytearray(data)
            mutated[at] ^= bit
            path.write_bytes(bytes(mutated))
            shutil.rmtree(env.vault.state, ignore_errors=True)
            if verify(env.vault).ok:
                clean += 1
    path.write_bytes(data)
    assert clean == 0


# ---------------------------------------------------------------- finding 8: a fork stops the fork


def test_a_fork_freezes_the_agents_chain_until_it_chooses_a_branch(env: Env, tmp_path: Path) -> None:
    env.append("ella", "common start")
    env.append("lyra", "lyra too")
    clone = _fresh_clone(env, tmp_path)
    path, cpath = _segment(env), _segment(clone)
    size = len(path.read_bytes())
    here = [_append(env, "ella", f"here {i}").stdout.strip() for i in range(2)]  # type: ignore[attr-defined]
    there = _append(clone, "ella", "there").stdout.strip()  # type: ignore[attr-defined]
    with path.open("ab") as f:  # what a sync brings: the other copy's entry, after these
        f.write(b"\n" + cpath.read_bytes()[size:].lstrip(b"\n"))
    before = path.read_bytes()
    run = _append(env, "ella", "after the merge", check=False)
    assert run.returncode != 0 and "Traceback" not in run.stderr  # type: ignore[attr-defined]
    assert "forked" in run.stderr and "resolve-fork" in run.stderr  # type: ignore[attr-defined]
    assert path.read_bytes() == before  # nothing appended
    _append(env, "lyra", "others go on")  # other agents are not affected
    problems = env.run("verify", "--json", check=False).json()["problems"]
    assert [p["kind"] for p in problems] == ["fork"], problems
    assert there in problems[0]["message"] and here[0] in problems[0]["message"]
    assert "replaced" not in json.dumps(problems)
    env.run("log", "resolve-fork", "--agent", "ella", "--keep", here[0])
    after = _append(env, "ella", "goes on").stdout.strip()  # type: ignore[attr-defined]
    problems = env.run("verify", "--json", check=False).json()["problems"]
    assert [p["kind"] for p in problems] == ["fork-resolved"], problems
    assert env.run("verify").returncode == 0
    assert {there, *here} <= {loc.entry.id for loc in log.iter_entries(env.vault)}  # both kept
    shutil.rmtree(env.vault.state)  # a fresh rebuild sees the same resolution
    _append(env, "ella", "and on")
    assert env.run("verify").returncode == 0
    assert after in {loc.entry.id for loc in log.iter_entries(env.vault)}


# ---------------------------------------------------------------- findings 7 and 9: faults, recovery


def _no_temp_files(root: Path) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*.tmp")]


def test_injected_faults_on_append_and_recovery_keep_every_invariant(env: Env, tmp_path: Path) -> None:
    """EIO/ENOSPC on each write, fsync and rename (once, and from then on) of an append that first
    has to quarantine a torn tail, in a child process (tests/faulty.py forks it and patches os there).
    A run that exits 0 left its entry exactly once; one that failed left none and a one-line error;
    the next append converges: one quarantine copy, no temp file, verify clean."""
    from nexus.audit.verify_state import verify

    env.append("ella", "one")
    env.append("lyra", "two", body="a body")
    path = _segment(env)
    torn = b"%% nexus:begin 01KB7Q2V4J6M8P0R2T4W6Y8A0C %%\n**2026-11-30 04:41:07Z** \xc2\xb7 ella"
    with path.open("ab") as f:
        f.write(torn)
    backup = tmp_path / "pristine"
    shutil.copytree(env.vault.root, backup)
    outcomes: dict[str, int] = {"ok": 0, "failed": 0}
    scenarios = [
        (op, n, mode)
        for op, most in (("write", 6), ("fsync", 6), ("replace", 3))
        for n in range(1, most + 1)
        for mode in ("once", "persistent")
    ]
    for i, (op, n, mode) in enumerate(scenarios):
        shutil.rmtree(env.vault.root)
        shutil.copytree(backup, env.vault.root)
        summary = f"fault {i} {op} {n} {mode}"
        code = "EIO" if mode == "once" else "ENOSPC"
        proc = faulty.run(
            f"{op}:{n}:{mode}:{code}",
            ["log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", summary],
            env=env.environ,
            cwd=env.vault.root,
        )
        where = (op, n, mode, proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr, where
        present = [loc.entry.id for loc in log.iter_entries(env.vault) if loc.entry.summary == summary]
        if proc.returncode == 0:
            outcomes["ok"] += 1
            assert present == [proc.stdout.strip()], where
        else:
            outcomes["failed"] += 1
            assert present == [] and proc.stderr.count("\n") == 1, where
        # the retry (no fault) converges
        log.LogWriter(env.vault).append(
            env.signer("ella"),
            channel="c",
            type="note",
            summary=summary if proc.returncode else summary + " again",
        )
        assert len([1 for loc in log.iter_entries(env.vault) if loc.entry.summary == summary]) == 1, where
        report = verify(env.vault)
        assert report.ok, (where, [str(p) for p in report.problems])
        copies = list((env.vault.state / "quarantine").iterdir())
        assert [c.read_bytes() for c in copies] == [torn], (where, copies)
        assert _no_temp_files(env.vault.root) == [], where
    assert outcomes["ok"] and outcomes["failed"], outcomes


def test_a_crash_between_quarantine_and_cut_leaves_one_copy(env: Env) -> None:
    """Recovery that converges: the copy made, the process killed before the cut (simulated by
    making the copy by hand), a temp file of a killed writer left; the next append finishes it."""
    env.append("ella", "one")
    path = _segment(env)
    size = len(path.read_bytes())
    torn = b"%% nexus:begin 01KB7Q2V4J6M8P0R2T4W6Y8A0C %%\nhalf"
    with path.open("ab") as f:
        f.write(torn)
    from nexus.storage import segments

    scan = segments.scan(path.read_bytes(), "log/x.md")
    assert scan.torn is not None
    log.quarantine(env.vault, path, scan.torn)  # the copy and the cut ...
    path.write_bytes(path.read_bytes()[:size] + torn)  # ... as if the cut never happened
    dead = env.vault.state / "quarantine" / f".{path.stem}-9-0123456789abcdef.torn.999999.abcdef.tmp"
    dead.write_bytes(b"half a copy")  # a writer killed mid-copy (pid 999999 is not running)
    memory_tmp = env.vault.agent_dir("ella") / ".MEMORY.md.999999.0123456789ab.tmp"
    memory_tmp.write_bytes(b"half a memory rewrite")
    run = _append(env, "lyra", "after the crash")
    assert "quarantine" in run.stderr  # type: ignore[attr-defined]
    copies = [p for p in (env.vault.state / "quarantine").iterdir() if not p.name.startswith(".")]
    assert [c.read_bytes() for c in copies] == [torn]
    env.run("memory", "add", "--agent", "ella", "--content", "a fact worth keeping")
    assert _no_temp_files(env.vault.root) == []


def test_a_forged_entry_with_the_victims_key_id_never_becomes_the_head(env: Env) -> None:
    """A hand-appended block claiming ella with a signature that does not verify (format 2 names no key:
    the author's trusted keys are tried): ella's next append (a fresh process catching up) goes on
    from her last real entry, not from the forgery."""
    real = env.append("ella", "real").located.entry
    env.append("lyra", "other")
    fake = Entry(
        id=entries.new_id(after=list(log.iter_entries(env.vault))[-1].entry.id),
        ts=real.ts,
        agent="ella",
        channel="c",
        type="note",
        summary="forged",
        body=None,
        ack=(),
        seen=None,
        seq=2,
        prev=None,
        key="",
        sig="A" * 86 + "==",
        v=2,
    )
    with _segment(env).open("a", encoding="utf-8") as f:
        f.write(entries.render(fake))
    run = env.run(
        "log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", "next", "--json"
    ).json()
    assert run["seq"] == 2 and run["id"] > fake.id
    assert [k for k, _i in _kinds(env)] == ["edited"]
