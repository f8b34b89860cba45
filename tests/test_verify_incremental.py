"""Incremental, parallel, streaming verify (issue 15) gives exactly the verdicts of the full check:
damage anywhere in verified history is caught by the next incremental run, deleting the remembered
state changes nothing, and every fault the suite injects is named the same way by every path."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import Env
from test_verify import _build, unsigned_entry  # the same six-entry log the serial tests verify

from nexus.audit import verify_state
from nexus.audit.verify import Report, verify_exact
from nexus.audit.verify_state import verify
from nexus.keys import identity
from nexus.ledger import log
from nexus.records import Entry, Located
from nexus.storage import entries


def _segment(env: Env) -> Path:
    return log.segment_files(env.vault)[-1][1]


def _shape(report: Report) -> tuple[int, int, bool, list[str]]:
    return report.entries, report.segments, report.ok, [str(p) for p in report.problems]


# ------------------------------------------------------------ the faults tests/test_verify.py injects


def _forged_unsigned(env: Env, located: list[Located]) -> None:
    fake = unsigned_entry(env, located)
    with _segment(env).open("a", encoding="utf-8") as f:
        f.write(entries.render(fake))


def _flipped_byte(env: Env, located: list[Located]) -> None:
    path = _segment(env)
    data = bytearray(path.read_bytes())
    data[data.index(b"second body", located[2].offset)] ^= 0x01
    path.write_bytes(bytes(data))


def _deleted_entry(env: Env, located: list[Located]) -> None:
    path = _segment(env)
    data = path.read_bytes()
    path.write_bytes(data[: located[2].offset] + data[located[3].offset :])


def _deleted_last_entries(env: Env, located: list[Located]) -> None:
    path = _segment(env)
    path.write_bytes(path.read_bytes()[: located[4].offset])


def _signed_with_another_key(env: Env, located: list[Located]) -> None:
    lyra = env.signer("lyra")
    fake = Entry(
        id=entries.new_id(after=located[-1].entry.id),
        ts="2026-11-30T05:00:00Z",
        agent="ella",
        channel="general",
        type="decision",
        summary="ella agrees to everything",
        body=None,
        ack=(),
        seen=None,
        seq=4,
        prev=entries.entry_hash(located[4].entry),
        key=lyra.key_id,
    )
    fake = replace(fake, sig=lyra.sign(entries.signing_bytes(fake)))
    with _segment(env).open("a", encoding="utf-8") as f:
        f.write(entries.render(fake))


def _duplicated(env: Env, located: list[Located]) -> None:
    path = _segment(env)
    data = path.read_bytes()
    path.write_bytes(data + b"\n" + data[located[1].offset : located[1].end_offset])


def _reordered(env: Env, located: list[Located]) -> None:
    a, b = located[2], located[4]
    path = _segment(env)
    data = path.read_bytes()
    path.write_bytes(
        data[: a.offset]
        + data[b.offset : b.end_offset]
        + data[a.end_offset : b.offset]
        + data[a.offset : a.end_offset]
        + data[b.end_offset :]
    )


def _torn_tail(env: Env, located: list[Located]) -> None:
    with _segment(env).open("ab") as f:
        f.write(b"%% nexus:begin 01JDQ8Z6V3M2K4T5N7P9R1S3W5 %%\n**2026-11-30 05:")


def _unknown_agent(env: Env, located: list[Located]) -> None:
    path = _segment(env)
    data = path.read_bytes()
    t = located[1]
    chunk = data[t.offset : t.end_offset].replace(" · lyra · ".encode(), " · mallory · ".encode())
    path.write_bytes(data[: t.offset] + chunk + data[t.end_offset :])


def _crlf(env: Env, located: list[Located]) -> None:
    path = _segment(env)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))


def _garbage(damage: bytes) -> Callable[[Env, list[Located]], None]:
    def inject(env: Env, located: list[Located]) -> None:
        path = _segment(env)
        data = path.read_bytes()
        at = located[2].offset + 60
        path.write_bytes(data[:at] + damage + b"\n" + data[at:])

    return inject


def _forged_then_real(env: Env, located: list[Located]) -> None:
    lyra = env.signer("lyra")
    fake = Entry(
        id=entries.new_id(after=located[-1].entry.id),
        ts="2026-11-30T05:00:00Z",
        agent="ella",
        channel="general",
        type="note",
        summary="forged",
        body=None,
        ack=(),
        seen=None,
        seq=4,
        prev=entries.entry_hash(located[4].entry),
        key=lyra.key_id,
    )
    fake = replace(fake, sig=lyra.sign(entries.signing_bytes(fake)))
    with _segment(env).open("a", encoding="utf-8") as f:
        f.write(entries.render(fake))
    env.append("ella", "real")


def _appended_clean(env: Env, located: list[Located]) -> None:
    env.append("lyra", "after", body="more")
    env.append("ella", "after too")


FAULTS: dict[str, Callable[[Env, list[Located]], None]] = {
    "none (new entries only)": _appended_clean,
    "hand-inserted unsigned entry": _forged_unsigned,
    "flipped byte in an old entry": _flipped_byte,
    "deleted entry": _deleted_entry,
    "deleted last entries": _deleted_last_entries,
    "signed with another agent's key": _signed_with_another_key,
    "duplicated entry": _duplicated,
    "reordered entries": _reordered,
    "torn tail": _torn_tail,
    "unknown agent": _unknown_agent,
    "CRLF segment": _crlf,
    "garbage bytes": _garbage(b"garbage \xff\xfe"),
    "a stray end line": _garbage(b"%% nexus:end {} %%"),
    "NUL bytes": _garbage(b"\x00" * 50),
    "forged entry, then a real one": _forged_then_real,
}


@pytest.mark.parametrize("chunked", [False, True], ids=["one process", "chunks in a pool"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_full_and_incremental_agree_on_every_fault(
    env: Env, fault: str, chunked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    located = _build(env)
    if chunked:  # cut the log into chunks of a few entries, checked by a pool of processes
        monkeypatch.setattr(verify_state, "CHUNK_BYTES", 700)
        monkeypatch.setattr(verify_state, "PARALLEL_BYTES", 0)
    first = verify(env.vault)
    assert first.ok and first.full and first.checked == 6
    assert verify_state.state_path(env.vault).exists()
    FAULTS[fault](env, located)

    incremental = verify(env.vault)  # from the state the clean log left
    verify_state.state_path(env.vault).unlink(missing_ok=True)
    without_state = verify(env.vault)
    full = verify(env.vault, full=True)
    exact = verify_exact(env.vault)
    assert _shape(incremental) == _shape(without_state) == _shape(full) == _shape(exact)
    if fault == "none (new entries only)":
        assert incremental.ok and not incremental.full and incremental.checked == 2
    elif fault != "CRLF segment":
        assert exact.problems, fault


def _two_segments(env: Env) -> list[Located]:
    """An older month (entries written first, the file renamed) and the current one."""
    for i in range(4):
        env.append("ella" if i % 2 else "lyra", f"old {i}", body=f"old body {i}")
    ((_, path),) = log.segment_files(env.vault)
    path.rename(path.with_name("2026-01.md"))
    for i in range(4):
        env.append("ella" if i % 2 else "lyra", f"new {i}", body=f"new body {i}")
    located = list(log.iter_entries(env.vault))
    assert len(log.segment_files(env.vault)) == 2 and len(located) == 8
    return located


def _edit(at: int) -> Callable[[Env, list[Located]], None]:
    def inject(env: Env, located: list[Located]) -> None:
        target = located[at]
        path = env.vault.root / target.file
        data = bytearray(path.read_bytes())
        data[data.index(b"body", target.offset)] ^= 0x20  # 'b' -> 'B'
        path.write_bytes(bytes(data))

    return inject


def _delete(at: int) -> Callable[[Env, list[Located]], None]:
    def inject(env: Env, located: list[Located]) -> None:
        target = located[at]
        path = env.vault.root / target.file
        data = path.read_bytes()
        path.write_bytes(data[: target.offset] + data[target.end_offset :])

    return inject


def _truncate(at: int) -> Callable[[Env, list[Located]], None]:
    def inject(env: Env, located: list[Located]) -> None:
        target = located[at]
        path = env.vault.root / target.file
        with path.open("r+b") as f:
            f.truncate(target.offset)

    return inject


HISTORY_DAMAGE = {
    "edit, first entry of the older month": (_edit(0), "edited"),
    "edit, middle of the older month": (_edit(2), "edited"),
    "edit, newest entry": (_edit(7), "edited"),
    "deletion in the older month": (_delete(1), "missing"),
    "deletion in the newest month": (_delete(5), "missing"),
    "truncation of the older month": (_truncate(2), "missing"),
    "truncation of the newest month": (_truncate(6), "missing"),
}


@pytest.mark.parametrize("damage", list(HISTORY_DAMAGE))
def test_damage_anywhere_in_verified_history_is_caught_by_the_next_incremental_verify(
    env: Env, damage: str
) -> None:
    located = _two_segments(env)
    assert verify(env.vault).ok
    env.append("ella", "since the last verify")
    again = verify(env.vault)
    assert again.ok and not again.full and again.checked == 1  # only the new entry was checked
    inject, kind = HISTORY_DAMAGE[damage]
    inject(env, located)
    report = verify(env.vault)
    assert not report.ok and report.full, damage  # the prefix no longer hashes as remembered
    assert kind in {p.kind for p in report.errors}
    assert _shape(report) == _shape(verify_exact(env.vault))
    # and it stays caught: the state saved by this run holds the finding
    assert _shape(verify(env.vault)) == _shape(report)


def test_a_verify_after_new_entries_checks_only_those(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    from nexus.keys import signatures
    from nexus.ledger import check as verify_mod

    _build(env)
    assert verify(env.vault).checked == 6
    calls: list[bytes] = []
    real = signatures.valid

    def counting(
        public_key: str, signature: str, data: bytes, memo: object = None, *, bulk: bool = False
    ) -> bool:
        assert memo is None  # (a verification never consults the readers' memo)
        calls.append(data)
        return real(public_key, signature, data, bulk=bulk)

    monkeypatch.setattr(verify_mod, "verify_signature", counting)
    for i in range(3):
        env.append("lyra", f"new {i}")
    report = verify(env.vault)
    assert report.ok and not report.full and report.checked == 3 and report.entries == 9
    assert len(set(calls)) == 3  # (the three new entries; OpenSSL too for any libsodium refused)
    calls.clear()
    nothing_new = verify(env.vault)
    assert nothing_new.ok and nothing_new.checked == 0 and calls == []


def test_damaged_or_foreign_state_is_never_trusted(env: Env) -> None:
    _build(env)
    verify(env.vault)
    path = verify_state.state_path(env.vault)
    path.write_bytes(b"{not json")
    report = verify(env.vault)
    assert report.ok and report.full and report.checked == 6
    # a state that claims a clean, longer history than the log holds is not used
    state = json.loads(path.read_bytes())
    state["entries"] = 1_000
    state["segments"][next(iter(state["segments"]))]["ranges"][0][2] = "0" * 64
    path.write_text(json.dumps(state))
    _flipped_byte(env, list(log.iter_entries(env.vault)))
    assert [p.kind for p in verify(env.vault).errors] == ["edited"]
    # a new identity: every remembered verdict may change (an unknown agent becomes known)

    verify(env.vault)
    identity.add(env.vault, env.keys_home, "nova")
    assert verify(env.vault).full


def test_verify_full_flag_and_json(env: Env) -> None:
    _build(env)
    first = env.run("verify", "--json").json()
    assert first["ok"] and first["full"] and first["checked"] == 6
    again = env.run("verify", "--json").json()
    assert again["ok"] and not again["full"] and again["checked"] == 0 and again["entries"] == 6
    forced = env.run("verify", "--full", "--json").json()
    assert forced["full"] and forced["checked"] == 6
    plain = env.run("verify")
    assert plain.stderr == ""  # no progress output when stderr is not a terminal
    assert "6 entries in 1 segment(s): clean" in plain.stdout


def test_a_big_full_verify_uses_a_pool_and_names_everything_the_serial_path_names(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enough entries for several chunks of the real size; damage in several chunks."""
    signer_e, signer_l = env.signer("ella"), env.signer("lyra")
    writer = log.writer(env.vault)
    for i in range(400):
        writer.append(
            signer_e if i % 3 else signer_l, channel="c", type="note", summary=f"entry {i}", body="x" * 200
        )
    monkeypatch.setattr(verify_state, "CHUNK_BYTES", 16 << 10)
    monkeypatch.setattr(verify_state, "PARALLEL_BYTES", 0)
    located = list(log.iter_entries(env.vault))
    path = _segment(env)
    data = bytearray(path.read_bytes())
    for at in (10, 150, 390):
        data[data.index(b"x" * 20, located[at].offset)] ^= 0x01
    path.write_bytes(bytes(data))
    pooled = verify(env.vault, full=True)
    serial = verify(env.vault, full=True, parallel=False)
    assert _shape(pooled) == _shape(serial) == _shape(verify_exact(env.vault))
    assert [p.entry_id for p in pooled.errors if p.kind == "edited"] == [
        located[at].entry.id for at in (10, 150, 390)
    ]


def test_a_proof_rewritten_inside_the_vault_fools_nothing(env: Env) -> None:
    """Whoever can edit the vault could rewrite a proof kept in it along with the history it covers.
    The proof is kept beside the pins, outside the vault: here the most competent forgery (the real
    proof, its hashes recomputed over the edited bytes) is put where older versions kept it, and the
    next incremental `nexus verify` still names the edit."""
    import hashlib

    for i in range(3):
        env.append("ella", f"entry number {i}")
    assert env.run("verify").returncode == 0
    proof = verify_state.state_path(env.vault, env.keys_home)
    assert proof.is_file() and not proof.is_relative_to(env.vault.root)
    inside = env.vault.state / "verify" / "state.json"
    assert not inside.exists()
    path = _segment(env)
    data = path.read_bytes().replace(b"entry number 1", b"entry number 7")  # same length: offsets hold
    path.write_bytes(data)
    forged = json.loads(proof.read_bytes())
    for seg in forged["segments"].values():
        seg["ranges"] = [[a, b, hashlib.sha256(data[a:b]).hexdigest()] for a, b, _ in seg["ranges"]]
    inside.parent.mkdir(parents=True, exist_ok=True)
    inside.write_text(json.dumps(forged))
    report = env.run("verify", "--json", check=False).json()
    assert [p["kind"] for p in report["problems"]] == ["edited"]
