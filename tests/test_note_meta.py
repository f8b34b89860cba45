"""What a person sees in Obsidian: machine fields (signatures, keys, hashes, ids a program follows) live
in one ``%% nexus:meta {json} %%`` comment at the end of a note, never in the Properties panel; ids a
person would follow are links. Older notes (fields in the frontmatter) read and verify as before, and
nothing signed becomes forgeable by the move."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import Env

from nexus.audit import verify_state as verify
from nexus.project import decisions
from nexus.storage import meta, notes
from nexus.storage.vault import Vault
from nexus.sync import merge

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "old-format"
LINK_RE = re.compile(r"\[\[([^\]|#]+)(?:#\^?([^\]|]+))?(?:\|[^\]]*)?\]\]")


def _decide(env: Env, title: str, *extra: str) -> dict[str, object]:
    args = ["decide", "--agent", "ella", "--title", title, "--decision", f"We do: {title}."]
    return env.run(*args, "--rationale", "Because.", *extra, "--json").json()  # type: ignore[no-any-return]


def _frontmatter(path: Path) -> dict[str, object]:
    """The properties Obsidian's panel shows (YAML, as Obsidian reads it)."""
    props, _ = notes.parse(path.read_text(encoding="utf-8"), str(path))
    return props


def _resolves(root: Path, target: str) -> bool:
    return (root / f"{target}.md").is_file() or any(p.stem == target for p in root.rglob("*.md"))


def _played(env: Env) -> None:
    """A day as the user plays it, through the CLI: agents and a person added, an entry, a decision
    citing it, one superseding it, a checkpoint, a project state."""
    env.run("agent", "add", "nova")
    env.run("agent", "add", "pat", "--human")
    ref = env.run(
        "log", "append", "--agent", "ella", "--channel", "security", "--type", "note", "--summary", "leak"
    ).stdout.strip()
    _decide(env, "Tokens in the keychain", "--ref", ref)
    _decide(env, "Tokens in the secret store", "--supersedes", "D-0001")
    env.run("checkpoint", "save", "--agent", "nova", "--task", "lexer", "--step", "tokens", "--next", "rules")
    content = env.vault.root.parent / "state.txt"
    content.write_text("Release on Friday.\n", encoding="utf-8")
    env.run("state", "set", "--agent", "ella", "--expect", "0", "--file", str(content))


def test_no_note_shows_a_machine_field_and_ids_are_links(env: Env) -> None:
    _played(env)
    root = env.vault.root
    kinds = {
        "decisions/D-0001-tokens-in-the-keychain.md": meta.DECISION,
        "decisions/D-0002-tokens-in-the-secret-store.md": meta.DECISION,
        "agents/nova/identity.md": meta.IDENTITY,
        "agents/pat/identity.md": meta.IDENTITY,
        "agents/ella/identity.md": meta.IDENTITY,
        "agents/nova/checkpoint.md": meta.CHECKPOINT,
        "state/history/v0001.md": meta.STATE_VERSION,
    }
    every = [p for p in root.rglob("*.md") if ".nexus" not in p.parts]
    assert {p.relative_to(root).as_posix() for p in every} >= set(kinds)
    for path in every:  # no note anywhere shows a machine field as a property
        shown = set(_frontmatter(path)) & meta.ALL
        assert not shown, f"{path.relative_to(root)} shows {shown}"
    for rel, machine in kinds.items():  # each keeps them in its last line, the meta comment
        last = (root / rel).read_text(encoding="utf-8").rstrip("\n").rsplit("\n", 1)[-1]
        fields = meta.parse_line(last)
        assert fields is not None and set(fields) <= machine and fields, rel
    d1 = _frontmatter(root / "decisions/D-0001-tokens-in-the-keychain.md")
    d2 = _frontmatter(root / "decisions/D-0002-tokens-in-the-secret-store.md")
    assert d1["author"] == "ella" and d1["status"] == "superseded" and d1["title"] == "Tokens in the keychain"
    # supersedes / superseded_by are links Obsidian resolves to the real note, shown as the id
    assert d2["supersedes"] == "[[decisions/D-0001-tokens-in-the-keychain|D-0001]]"
    assert d1["superseded_by"] == "[[decisions/D-0002-tokens-in-the-secret-store|D-0002]]"
    for value in (d2["supersedes"], d1["superseded_by"]):
        m = LINK_RE.fullmatch(str(value))
        assert m and _resolves(root, m.group(1))
    # what programs read is unchanged
    shown = env.run("decisions", "show", "D-0001", "--json").json()
    assert shown["superseded_by"] == "D-0002" and len(shown["refs"]) == 1 and shown["entry"]
    assert env.run("decisions", "show", "D-0002", "--json").json()["supersedes"] == "D-0001"
    assert env.run("checkpoint", "show", "--agent", "nova", "--json").json()["seq"] == 1
    assert env.run("state", "history", "--json").json()[0]["sha256"]
    brief = env.run("brief", "--agent", "nova").stdout
    assert "nexus:meta" not in brief and "ed25519:" not in brief
    found = env.run("search", "tokens", "--json").stdout  # (a hit's text never shows the machine fields)
    assert "secret store" in found.lower() and "nexus:meta" not in found
    report = env.run("verify", "--json").json()
    assert report["ok"] and not report["problems"], report
    # the key in the comment is the one appends are checked against (vault.key_id_of, hot path)
    env.run("log", "append", "--agent", "nova", "--channel", "c", "--type", "note", "--summary", "hi")
    env.run("checkpoint", "save", "--agent", "nova", "--task", "lexer", "--step", "rules", "--next", "ast")
    assert env.run("checkpoint", "show", "--agent", "nova", "--json").json()["seq"] == 2


def _signed_vault(env: Env) -> Vault:
    ella = env.signer("ella")
    for title, sup in (("Keychain", None), ("Secret store", "D-0001"), ("English logs", None)):
        decisions.decide(
            env.vault, ella, title=title, decision=f"{title}.", rationale="Because.", supersedes=sup
        )
    assert verify.verify(env.vault).ok
    return env.vault


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (old, text)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


_EDITS = {
    # a person changes what the Properties panel shows, in Obsidian
    "title": ("D-0002", 'title: "Secret store"', 'title: "Plain files"'),
    "author": ("D-0002", 'author: "ella"', 'author: "lyra"'),
    "date": ("D-0002", 'date: "20', 'date: "19'),
    "supersedes label": ("D-0002", "|D-0001]]", "|D-0003]]"),
    "supersedes target": ("D-0002", "[[decisions/D-0001-keychain|", "[[decisions/D-0003-english-logs|"),
    "superseded_by label": ("D-0001", '|D-0002]]"', '|D-0003]]"'),
    "superseded_by target": (
        "D-0001",
        'by: "[[decisions/D-0002-secret-store',
        'by: "[[decisions/D-0003-english-logs',
    ),
    "status": ("D-0003", 'status: "active"', 'status: "superseded"'),
    # a hidden copy of a shown field cannot stand in for it
    "hidden title": ("D-0002", 'title: "Secret store"', 'title: "Plain files"'),
    # nor can a machine field put back in the frontmatter beside the comment
    "shown refs": ("D-0003", 'status: "active"', 'status: "active"\nrefs: ["01KB7Q2V4J6M8P0R2T4W6Y8A0C"]'),
}


@pytest.mark.parametrize("what", list(_EDITS))
def test_editing_a_signed_decision_in_the_properties_panel_is_reported(
    env: Env, tmp_path: Path, what: str
) -> None:
    vault = _signed_vault(env)
    did, old, new = _EDITS[what]
    path = decisions.note_of(vault, did)
    assert path is not None
    _edit(path, old, new)
    if what == "hidden title":  # the original title tucked into the meta comment
        _edit(path, '%% nexus:meta {"entry"', '%% nexus:meta {"title":"Secret store","entry"')
    problems = [p for p in verify.verify(vault).problems if p.kind == "decision-edited"]
    if what == "shown refs":  # ignored where it cannot be signed: the signed refs are the comment's
        assert not problems and decisions.find(vault, did).refs == ()
        return
    assert problems and all(did in p.message for p in problems), (what, problems)


def test_a_cli_user_sees_an_edited_title_named(env: Env) -> None:
    _decide(env, "Tokens in the keychain")
    path = env.vault.root / "decisions" / "D-0001-tokens-in-the-keychain.md"
    _edit(path, 'title: "Tokens in the keychain"', 'title: "Tokens in a text file"')
    report = env.run("verify", "--json", check=False).json()
    assert not report["ok"]
    assert [(p["kind"], p["file"]) for p in report["problems"]] == [
        ("decision-edited", "decisions/D-0001-tokens-in-the-keychain.md")
    ]
    assert "D-0001" in report["problems"][0]["message"]


def _old_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    shutil.copytree(FIXTURE / "vault", tmp_path / "vault")
    shutil.copytree(FIXTURE / "home", tmp_path / "home")
    for pem in (tmp_path / "home").rglob("*.pem"):
        os.chmod(pem, 0o600)
    monkeypatch.setenv("NEXUS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NEXUS_VAULT", str(tmp_path / "vault"))
    return Env(Vault(tmp_path / "vault"), tmp_path / "home")


def test_a_vault_written_before_the_meta_comment_reads_and_verifies_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _old_vault(tmp_path, monkeypatch)
    root = env.vault.root
    assert set(_frontmatter(root / "agents/ella/identity.md")) >= {"public_key", "key_id"}  # the old form
    before = {p: p.read_bytes() for p in root.rglob("*.md")}
    expected = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
    report = env.run("verify", "--json").json()
    assert report["ok"] and not report["problems"], report
    # what the nexus that wrote it read from it, field for field
    assert env.run("decisions", "--all", "--json").json() == expected["decisions"]
    cp = env.run("checkpoint", "show", "--agent", "ella", "--json").json()
    assert {k: v for k, v in cp.items() if k != "probable_crash"} == {
        k: v for k, v in expected["checkpoint"].items() if k != "probable_crash"
    }
    assert env.run("state", "history", "--json").json() == expected["state"]
    assert env.run("agent", "list", "--json").json() == expected["agents"]
    assert {p: p.read_bytes() for p in root.rglob("*.md")} == before  # reading changed nothing
    # writing into it: the old key signs (key read from the old note), notes written now take the new form
    env.run("log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", "still here")
    env.run("checkpoint", "save", "--agent", "ella", "--task", "t", "--step", "s", "--next", "n")
    assert env.run("checkpoint", "show", "--agent", "ella", "--json").json()["seq"] == 3
    _decide(env, "Logs in English or Spanish", "--supersedes", "D-0003")
    d3 = root / "decisions" / "D-0003-logs-in-english.md"
    assert not set(_frontmatter(d3)) & meta.ALL and _frontmatter(d3)["superseded_by"] == (
        "[[decisions/D-0004-logs-in-english-or-spanish|D-0004]]"
    )
    for name in ("D-0001-tokens-in-the-keychain.md", "D-0002-tokens-in-the-secret-store.md"):
        assert (root / "decisions" / name).read_bytes() == before[root / "decisions" / name]
    env.run("agent", "rotate", "ella")
    assert not set(_frontmatter(root / "agents/ella/identity.md")) & meta.ALL
    env.run("log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", "new key")
    report = env.run("verify", "--json").json()
    assert report["ok"] and not report["problems"], report
    assert [d["status"] for d in env.run("decisions", "--all", "--json").json()] == [
        "superseded",
        "active",
        "superseded",
        "active",
    ]


def test_sync_merges_a_checkpoint_across_the_two_forms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _old_vault(tmp_path, monkeypatch)
    path = env.vault.root / "agents" / "ella" / "checkpoint.md"
    old = path.read_bytes()  # version 2, seq as a property
    env.run("checkpoint", "save", "--agent", "ella", "--task", "t", "--step", "s", "--next", "n")
    new = path.read_bytes()  # version 3, seq in the meta comment
    assert b"seq:" in old and b"seq:" not in new
    for ours, theirs in ((old, new), (new, old)):
        assert merge.merge("checkpoint", b"", ours, theirs, "agents/ella/checkpoint.md").data == new


def test_bank_fields_read_one_by_one_and_their_ids_are_links(env: Env) -> None:
    """Dataview reads bracketed inline fields apart even on one line; each id links to its note."""
    entry = env.run(
        "log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", "whoosh"
    ).stdout.strip()
    env.run(
        "retain",
        "--agent",
        "ella",
        "--type",
        "decision",
        "--content",
        "Search uses Whoosh",
        "--source",
        entry,
    )
    env.run("review", "--approve", "ella-1", "--agent", "sam")
    root = env.vault.root
    line = next(
        ln
        for ln in (root / "agents/ella/bank.md").read_text(encoding="utf-8").splitlines()
        if "status::" in ln
    )
    fields = dict(re.findall(r"\[(\w+):: ((?:[^\]\[]|\[\[[^\]]*\]\])*)\]", line))
    assert set(fields) == {"status", "retained", "source", "reviewed_by", "reviewed_at", "fact"}, line
    assert fields["status"] == "approved"
    segment = next((root / "log").glob("*.md")).read_text(encoding="utf-8")
    for key in ("source", "reviewed_by", "fact"):
        m = LINK_RE.fullmatch(fields[key])
        assert m and _resolves(root, m.group(1)), (key, fields[key])
    assert f"^{entry}" in segment and LINK_RE.fullmatch(fields["source"]).group(2) == entry  # type: ignore[union-attr]
    fact = next(p for p in (root / "memory").glob("*.md") if p.stem not in ("MEMORY-INDEX", "REVIEW"))
    source = LINK_RE.fullmatch(str(_frontmatter(fact)["source"]))
    assert source and _resolves(root, source.group(1)) and source.group(2) == "ella-1"


def test_decisions_signed_before_a_key_rotation_still_verify(env: Env) -> None:
    """verify checks a decision with the keys trusted for its author, old ones included, as entries."""
    _decide(env, "Tokens in the keychain")
    _decide(env, "Tokens in the secret store", "--supersedes", "D-0001")
    assert env.run("verify", "--json").json()["ok"]
    env.run("agent", "rotate", "ella")
    _decide(env, "Logs in English")
    report = env.run("verify", "--json", check=False).json()
    assert report["ok"] and not report["problems"], report


def test_an_identity_note_whose_key_comment_was_deleted_says_so(env: Env) -> None:
    note = env.vault.identity_path("ella")
    text = note.read_text(encoding="utf-8")
    note.write_text(text[: text.rindex("\n%% nexus:meta ")] + "\n", encoding="utf-8")  # a person cut it
    run = env.run(
        "log", "append", "--agent", "ella", "--channel", "c", "--type", "note", "--summary", "x", check=False
    )
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "declares no key" in run.stderr
