"""The merge rules, file kind by file kind (in-process; test_sync.py runs them through real git)."""

from __future__ import annotations

from conftest import Env

from nexus.audit.verify_state import verify
from nexus.ledger import log
from nexus.memory import bank
from nexus.project import checkpoints
from nexus.storage import segments
from nexus.sync import merge


def _segment(env: Env) -> bytes:
    ((_, path),) = log.segment_files(env.vault)
    return path.read_bytes()


def test_kinds_from_paths() -> None:
    assert merge.kind_of("log/2026-12.md") == ("segment", "")
    assert merge.kind_of("team/vault/log/2026-12.md") == ("segment", "team/vault/")
    assert merge.kind_of("agents/ella/MEMORY.md")[0] == "memory"
    assert merge.kind_of("USER.md")[0] == "memory"
    assert merge.kind_of("agents/ella/checkpoint-history.md")[0] == "cp-history"
    assert merge.kind_of("state/history/v0004.md")[0] == "state-version"
    assert merge.kind_of("decisions/D-0003-use-git.md")[0] == "decision"
    assert merge.kind_of("notes/anything.md")[0] == "text"


def test_segments_union_by_id_in_id_order_byte_for_byte(env: Env) -> None:
    env.append("ella", "common")
    base = _segment(env)
    ((_, path),) = log.segment_files(env.vault)
    ours_ids = [env.append("ella", f"ella {i}").located.entry.id for i in range(3)]
    ours = path.read_bytes()
    path.write_bytes(base)
    (env.vault.state / "tail.json").unlink()
    log._WRITERS.clear()
    theirs_ids = [env.append("lyra", f"lyra {i}").located.entry.id for i in range(3)]
    theirs = path.read_bytes()
    result = merge.merge("segment", base, ours, theirs, "log/x.md")
    assert result.conflicts == []
    _, blocks = merge.split_segment(result.data)
    assert [b for b, _ in blocks] == sorted([*ours_ids, *theirs_ids, blocks[0][0]])
    for side in (ours, theirs):  # every entry's bytes as they were
        for bid, text in merge.split_segment(side)[1]:
            assert text in result.data and result.data.count(text) == 1, bid
    path.write_bytes(result.data)
    assert verify(env.vault).ok
    # merging again (either way round) changes nothing
    assert merge.merge("segment", base, result.data, theirs, "x").data == result.data
    assert merge.merge("segment", base, theirs, result.data, "x").data == result.data


def test_one_id_with_two_texts_is_kept_twice_and_listed(env: Env) -> None:
    env.append("ella", "one")
    data = _segment(env)
    edited = data.replace(b"one", b"ONE")
    result = merge.merge("segment", data, data, edited, "log/x.md")
    assert len(segments.openings(result.data)) == 2 and b"ONE" in result.data and b" one " in result.data
    assert [c.kind for c in result.conflicts] == ["same-id"]


def test_memory_three_way_union() -> None:
    base = "a\n§\nb\n".encode()
    ours = "a\n§\nb\n§\nmine\n".encode()
    theirs = "b\n§\ntheirs\n".encode()  # removed a, added theirs
    result = merge.merge("memory", base, ours, theirs, "agents/x/MEMORY.md")
    assert result.data.decode() == "b\n§\nmine\n§\ntheirs\n" and not result.conflicts
    big = merge.merge_memory(b"", ("x" * 40).encode(), ("y" * 40).encode(), "USER.md", limit=50)
    assert b"x" * 40 in big.data and b"y" * 40 in big.data and big.conflicts[0].kind == "memory"


def test_bank_union_and_review_beats_pending(env: Env) -> None:
    bank.retain(env.vault, "ella", type="fact", content="first")
    path = bank.bank_path(env.vault, "ella")
    base = path.read_bytes()
    bank.approve(env.vault, "ella-1", "sam")
    approved = path.read_bytes()
    path.write_bytes(base)
    bank.retain(env.vault, "ella", type="fact", content="second")
    added = path.read_bytes()
    result = merge.merge("bank", base, approved, added, "agents/ella/bank.md")
    facts = bank.parse_bank(result.data.decode(), "ella", "x")
    assert [(f.id, f.status) for f in facts] == [("ella-1", "approved"), ("ella-2", "pending")]
    assert not result.conflicts
    clash = added.replace(b"second", b"another")
    result = merge.merge("bank", base, added, clash, "agents/ella/bank.md")
    assert [c.kind for c in result.conflicts] == ["bank"] and "another" in result.conflicts[0].other


def test_checkpoint_newer_wins_and_history_is_a_union(env: Env) -> None:
    checkpoints.save(env.vault, "ella", task="t", step="one", next="n")
    cp, hist = checkpoints.checkpoint_path(env.vault, "ella"), checkpoints.history_path(env.vault, "ella")
    base_cp, base_h = cp.read_bytes(), hist.read_bytes()
    checkpoints.save(env.vault, "ella", task="t", step="two", next="n")
    checkpoints.save(env.vault, "ella", task="t", step="three", next="n")
    ours_cp, ours_h = cp.read_bytes(), hist.read_bytes()
    cp.write_bytes(base_cp)
    hist.write_bytes(base_h)
    checkpoints.save(env.vault, "ella", task="t", step="elsewhere", next="n")
    theirs_cp, theirs_h = cp.read_bytes(), hist.read_bytes()
    assert merge.merge("checkpoint", base_cp, ours_cp, theirs_cp, "x").data == ours_cp
    fork = merge.merge("checkpoint", base_cp, theirs_cp, ours_cp.replace(b'{"seq":3}', b'{"seq":2}'), "x")
    assert fork.conflicts and fork.conflicts[0].kind == "checkpoint"
    merged = merge.merge("cp-history", base_h, ours_h, theirs_h, "x").data.decode()
    for step in ("one", "two", "three", "elsewhere"):
        assert merged.count(f"— {step} →") == 1


def test_review_ticks_survive() -> None:
    base = (
        "# Memory review\n\n- [ ] **fact** · ella - a ^ella-1\n- [ ] **fact** · ella - b ^ella-2\n"
    ).encode()
    ours = base.replace("[ ] **fact** · ella - a".encode(), "[x] **fact** · ella - a".encode())
    theirs = base.replace("[ ] **fact** · ella - b".encode(), "[x] **fact** · ella - b".encode())
    result = merge.merge("review", base, ours, theirs, "memory/REVIEW.md").data.decode()
    assert result.count("[x]") == 2


def test_state_and_handoff_and_decision_keep_both_sides() -> None:
    ours = b'---\nversion: 4\nauthor: "ella"\n---\nours\n'
    theirs = b'---\nversion: 4\nauthor: "lyra"\n---\ntheirs\n'
    result = merge.merge("state-version", b"", ours, theirs, "state/history/v0004.md")
    assert result.data == ours and result.conflicts[0].kind == "state"
    assert "theirs" in result.conflicts[0].other and b"diverged" in result.conflicts[0].note()
    assert merge.merge("state", b"", b"---\nversion: 5\n---\nx\n", ours, "state/project.md").data.startswith(
        b"---\nversion: 5"
    )
    hand = merge.merge("handoff", b"", b"mine", b"yours", "handoff/2026-12-01.md")
    assert hand.data == b"mine" and hand.beside == [("handoff/2026-12-01.md", b"yours")]
    swapped = merge.merge("handoff", b"", b"yours", b"mine", "handoff/2026-12-01.md")
    assert swapped.data == b"mine" and swapped.beside == hand.beside  # every clone agrees
    a = b'---\nsuperseded_at: "2026-12-01T01:00:00Z"\n---\n'
    b = b'---\nsuperseded_at: "2026-12-01T02:00:00Z"\n---\n'
    dec = merge.merge("decision", b"---\n---\n", b, a, "decisions/D-0001-x.md")
    assert dec.data == a and dec.conflicts[0].other == b.decode()


def test_text_between_entries_stays_after_its_entry(env: Env) -> None:
    first = env.append("ella", "one").located.entry.id
    data = _segment(env)
    person = b"a person's note, not signed yet\n"
    ours = data + person
    theirs_id = env.append("lyra", "two").located.entry.id
    theirs = _segment(env)
    result = merge.merge("segment", data, ours, theirs, "log/x.md").data
    _, blocks = merge.split_segment(result)
    assert [b for b, _ in blocks] == [first, None, theirs_id]
    assert result.count(person) == 1


def test_two_machines_numbering_decisions_alike_are_renumbered_and_verify(env: Env) -> None:
    from nexus.project import decisions
    from nexus.sync import gitsync

    first = decisions.decide(env.vault, env.signer("ella"), title="Use git", decision="d", rationale="r")
    aside = env.vault.root / first.path
    kept = aside.read_bytes()
    aside.unlink()  # the other machine never saw it: it picks the same number
    second = decisions.decide(
        env.vault, env.signer("lyra"), title="Use Syncthing", decision="d", rationale="r"
    )
    assert first.id == second.id == "D-0001"
    aside.write_bytes(kept)
    assert "duplicate" in {p.kind for p in verify(env.vault).problems}
    done = gitsync.refresh(env.vault)
    assert done["renumbered"] == [
        {"from": "D-0001", "to": "D-0002", "note": "decisions/D-0002-use-syncthing.md"}
    ]
    report = verify(env.vault)
    assert report.ok, [str(p) for p in report.problems]
    assert {d.id for d in decisions.all_decisions(env.vault)} == {"D-0001", "D-0002"}
    assert "D-0002" in (env.vault.root / "Decisions.md").read_text(encoding="utf-8")
    assert gitsync.refresh(env.vault)["renumbered"] == []  # stable


def test_identity_and_other_notes_merge_as_text_and_a_clash_is_left_to_a_person() -> None:
    base = b"---\nname: ella\n---\n# ella\n## Role\nbuilds\n\n## Priorities\nnone\n"
    ours = base.replace(b"builds", b"builds the parser")
    theirs = base.replace(b"none", b"tests first")
    merged = merge.merge("text", base, ours, theirs, "agents/ella/identity.md")
    assert merged.clean and b"builds the parser" in merged.data and b"tests first" in merged.data
    clash = merge.merge("text", base, ours, base.replace(b"builds", b"reviews"), "agents/ella/identity.md")
    assert not clash.clean and b"<<<<<<<" in clash.data
