"""Seals (``keys.seal``, ``search.seals``): a hit proven verified by the seal its index stored, with
no Ed25519 check, and never a false "verified": an entry edited in place after it was indexed, a seal
column rewritten by someone who can write the vault (index included), no secret, a secret others can
read, no pins (a library caller) — each falls back to checking the signature. The build seals what
``nexus verify`` proved without checking it again, and never bytes changed since the proof."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from typing import Any

import pytest
from conftest import Env, edit_entry_in_place, edit_in_place

from nexus import search
from nexus.audit import verify_state
from nexus.keys import identity, seal, signatures
from nexus.ledger import log
from nexus.search import documents, engine, reader
from nexus.search.language import analysis
from nexus.search.manifest import index_dir
from nexus.search.manifest import load as load_manifest
from nexus.storage import segments
from nexus.storage.vault import Vault
from nexus.trust import NO_PINS, Trust


@pytest.fixture
def trusted(env: Env) -> Env:
    """The vault searched as the CLI and the MCP server do: with this machine's pins (the helpers
    below search an ``Env`` with ``Trust(env.keys_home)``, a bare vault as a library caller)."""
    return env


def pins(where: Env | Vault) -> Trust:
    """The trust an entry point passes for ``where`` (an ``Env``: its keys folder), or ``NO_PINS``."""
    return Trust(where.keys_home) if isinstance(where, Env) else NO_PINS


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The entries whose signature was checked with Ed25519 (by anyone in this process): by OpenSSL,
    or accepted by libsodium first (``signatures.valid(bulk=True)``: what it refuses OpenSSL decides);
    a signature the machine's memo remembers is not checked."""
    seen: list[str] = []
    real: Callable[..., bool] = signatures._openssl_accepts
    real_fast: Callable[..., bool] = signatures._sodium_accepts

    def spy(public_key: str, signature: str, data: bytes) -> bool:
        seen.append(signature)
        return real(public_key, signature, data)

    def fast_spy(public_key: str, signature: str, data: bytes) -> bool:
        ok = real_fast(public_key, signature, data)
        if ok:
            seen.append(signature)
        return ok

    monkeypatch.setattr(signatures, "_openssl_accepts", spy)
    monkeypatch.setattr(signatures, "_sodium_accepts", fast_spy)
    return seen


def _fresh_process() -> None:
    """Forget what this process remembered of every vault (a new process, as far as search goes)."""
    reader.VIEWS.clear()


def _search(where: Env | Vault, text: str, **kw: Any) -> list[Any]:
    """A search of the text index, whose seals these tests count (the vector store seals its own rows
    when it is built: a hybrid search's first build would add its checks to the count)."""
    vault = where.vault if isinstance(where, Env) else where
    return search.search(vault, text, mode="text", trust=pins(where), **kw)


def _rebuild(where: Env | Vault) -> None:
    search.rebuild(where.vault if isinstance(where, Env) else where, trust=pins(where))


def seg_bytes(env: Env, rel: str) -> bytes:
    return (env.vault.root / rel).read_bytes()


def _falcons(env: Env) -> list[Any]:
    return [
        env.append("ella", "the falcon budget is 100", body="Approved by the falcon board.").located,
        env.append("lyra", "falcon nest seen on the roof").located,
        env.append("ella", "falcon count is three", body="Two adults, one young falcon.").located,
    ]


def test_hits_are_proven_by_their_seals_without_a_signature_check(trusted: Env, checks: list[str]) -> None:
    _falcons(trusted)
    _rebuild(trusted)
    assert len(checks) == 3  # each entry checked once, when indexed
    _fresh_process()
    checks.clear()
    hits = _search(trusted, "falcon")
    assert len(hits) == 3 and all(h.verified for h in hits)
    assert checks == []  # proven by the seals: no Ed25519 at query time
    secret = trusted.keys_home / seal.FILE  # outside the vault, readable by its owner only
    assert not secret.resolve().is_relative_to(trusted.vault.root.resolve())
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and len(secret.read_bytes()) == 32
    assert not list(trusted.vault.root.rglob(seal.FILE))


@pytest.mark.parametrize("what", ["text", "signature"])
def test_an_entry_edited_in_place_after_it_was_indexed_is_not_verified(
    trusted: Env, checks: list[str], what: str
) -> None:
    located = _falcons(trusted)[0]
    _rebuild(trusted)
    seg = trusted.vault.root / located.file
    original, _new = edit_entry_in_place(trusted.vault, located, what, (b"budget is 100", b"budget is 900"))
    _fresh_process()
    checks.clear()
    hits = {h.entry_id: h for h in _search(trusted, "falcon")}
    assert len(hits) == 3 and hits[located.entry.id].verified is False
    assert sum(h.verified is True for h in hits.values()) == 2
    edited = log.find_entry(trusted.vault, located.entry.id).entry.sig  # (format 2: base64url on disk)
    assert checks == [located.entry.sig if what == "text" else edited]  # its seal did not hold
    seg.write_bytes(original)
    _fresh_process()
    assert all(h.verified for h in _search(trusted, "falcon", fresh=False))


def _rewrite_seals(env: Env, rel: str, make: Callable[[int, bytes, str], bytes]) -> None:
    """What someone who can write the vault can do: index the segment's current bytes again, with
    seals of their own making (``make(i, entry bytes, public key)``), the manifest left as it was."""
    manifest = load_manifest(env.vault)
    assert manifest is not None
    writer = engine.Index.open(index_dir(env.vault) / manifest.dir).writer()
    data = (env.vault.root / rel).read_bytes()
    scan = segments.scan(data, rel)
    keys = {name: i.public_key for name, i in identity.all_identities(env.vault).items()}
    found = scan.entries
    forged = [make(i, data[x.offset : x.end_offset], keys[x.entry.agent]) for i, x in enumerate(found)]
    writer.delete_path(rel)
    for doc in documents.segment_docs(scan, analysis(manifest.languages), forged):
        writer.add(doc)
    writer.commit()


@pytest.mark.parametrize("forgery", ["another secret", "another entry's seal", "random bytes"])
def test_a_seal_column_rewritten_by_an_attacker_never_yields_verified(
    trusted: Env, checks: list[str], forgery: str
) -> None:
    located = _falcons(trusted)[0]
    _rebuild(trusted)
    _fresh_process()
    _search(trusted, "falcon")
    kept = {d.key: d.seal for d in reader.view(trusted.vault).current(pins(trusted)).searcher.kept.values()}
    genuine = [kept[f"e:{x.entry.id}"] for x in segments.scan(seg_bytes(trusted, located.file), "x").entries]
    assert len(genuine) == 3 and all(genuine)
    seg = trusted.vault.root / located.file
    edit_in_place(seg, b"budget is 100", b"budget is 900")
    mine = os.urandom(32)
    makers: dict[str, Callable[[int, bytes, str], bytes]] = {
        "another secret": lambda i, raw, public: seal.seal(mine, public, hashlib.sha256(raw).digest()),
        "another entry's seal": lambda i, raw, public: genuine[(i + 1) % 3],
        "random bytes": lambda i, raw, public: os.urandom(seal.SIZE),
    }
    _rewrite_seals(trusted, located.file, makers[forgery])
    _fresh_process()
    checks.clear()
    hits = {h.entry_id: h for h in _search(trusted, "falcon")}
    assert len(hits) == 3 and hits[located.entry.id].verified is False
    assert [h.verified for i, h in hits.items() if i != located.entry.id] == [True, True]  # checked
    assert len(checks) == 3  # no forged seal held: every hit was checked with Ed25519


def test_without_the_secret_hits_are_checked_as_before(trusted: Env, checks: list[str]) -> None:
    located = _falcons(trusted)[0]
    _rebuild(trusted)
    (trusted.keys_home / seal.FILE).unlink()  # lost (or another machine's index): seals prove nothing
    edit_in_place(trusted.vault.root / located.file, b"budget is 100", b"budget is 900")
    _fresh_process()
    checks.clear()
    hits = {h.entry_id: h for h in _search(trusted, "falcon")}
    assert hits[located.entry.id].verified is False and sum(h.verified is True for h in hits.values()) == 2
    assert len(checks) == 3
    assert not (trusted.keys_home / seal.FILE).exists()  # a search never makes one; a build does


def test_a_secret_others_can_read_is_not_used(trusted: Env, checks: list[str]) -> None:
    _falcons(trusted)
    _rebuild(trusted)
    secret = trusted.keys_home / seal.FILE
    secret.chmod(0o644)
    assert seal.secret(trusted.keys_home) is None and seal.secret(trusted.keys_home, create=True) is None
    _fresh_process()
    checks.clear()
    assert all(h.verified for h in _search(trusted, "falcon")) and len(checks) == 3
    _rebuild(trusted)  # nothing sealed with it either
    assert len(checks) == 3


def test_without_trust_configured_nothing_is_sealed(
    env: Env, checks: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _falcons(env)
    _rebuild(env.vault)
    assert checks == [] and not (env.keys_home / seal.FILE).exists()
    hits = _search(env.vault, "falcon")
    assert all(h.verified for h in hits) and len(checks) == 3
    assert not any(d.seal for d in reader.view(env.vault).current(NO_PINS).searcher.kept.values())


def test_appended_entries_are_sealed_when_the_index_is_updated(trusted: Env, checks: list[str]) -> None:
    _falcons(trusted)
    _search(trusted, "falcon")
    later = trusted.append("lyra", "a falcon chick hatched").located
    checks.clear()
    hits = _search(trusted, "chick")
    assert [h.entry_id for h in hits] == [later.entry.id] and hits[0].verified
    assert checks == [later.entry.sig]  # checked once, when indexed
    _fresh_process()
    checks.clear()
    assert _search(trusted, "chick")[0].verified and checks == []


def test_the_build_seals_what_verify_proved_without_checking_it_again(
    trusted: Env, checks: list[str]
) -> None:
    located = _falcons(trusted)
    report = verify_state.run(trusted.vault, trust=pins(trusted))
    assert report.ok and (trusted.keys_home / "verified").is_dir()
    after = trusted.append("lyra", "falcon fledged").located  # not covered by the proof
    checks.clear()
    _rebuild(trusted)
    assert checks == [after.entry.sig]
    _fresh_process()
    hits = _search(trusted, "falcon")
    assert len(hits) == 4 and all(h.verified for h in hits) and checks == [after.entry.sig]
    # bytes changed since the proof are never vouched for: the range no longer hashes as proven
    edit_in_place(trusted.vault.root / located[1].file, b"nest seen", b"nest SEEN")
    checks.clear()
    _rebuild(trusted)
    assert len(checks) == 4  # the proof covers nothing of the changed segment now
    _fresh_process()
    by_id = {h.entry_id: h for h in _search(trusted, "falcon")}
    assert by_id[located[1].entry.id].verified is False
    assert sum(h.verified is True for h in by_id.values()) == 3


def test_the_cli_makes_the_secret_outside_the_vault(env: Env) -> None:
    env.append("ella", "osprey over the lake")
    out = env.run("search", "osprey", "--mode", "text", "--json").json()
    assert [h["verified"] for h in out] == [True]
    secret = env.keys_home / seal.FILE
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert not secret.resolve().is_relative_to(env.vault.root.resolve())


def test_a_sealed_hit_cut_from_its_bytes_is_the_hit_parsing_gives(
    trusted: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hits proven by their seal take their summary and body from where nexus's canonical form puts
    them, without parsing: the very hits parsing gives, on bodies with escaped framing, links and
    bold, blank lines, accents, none at all; and an entry whose bytes the cut cannot read (a CRLF
    save) is parsed as before, still verified by its seal."""
    from nexus.search import hits as hits_mod

    bodies = [
        None,
        "",
        "plain osprey text",
        "first line\n\nthird line, osprey",
        "%% nexus:end not really\n**2026-01-01 00:00:00Z** · x · y · z — looks like a header osprey",
        "a [[note#^x|link]] and **bold** osprey",
        "ósprey, ñandú and 雪 osprey",
        "\\ leading backslash osprey",
    ]
    for i, body in enumerate(bodies):
        trusted.append(("ella", "lyra")[i % 2], f"osprey {i} — summary ^with a caret", body=body)
    crlf = trusted.append("ella", "crlf osprey", body="line one\nline two").located
    trusted.append("lyra", "last osprey")
    seg = trusted.vault.root / crlf.file
    data = seg.read_bytes()
    a, b = crlf.offset, crlf.end_offset
    seg.write_bytes(data[:a] + data[a:b].replace(b"\n", b"\r\n") + data[b:])  # (that entry alone)
    _rebuild(trusted)
    cut: list[str] = []
    real = hits_mod.HitReader._sealed

    def counted(self: Any, stored: Any, *args: Any) -> Any:
        got = real(self, stored, *args)
        if got is not None:
            cut.append(stored.key)
        return got

    def run() -> list[Any]:
        _fresh_process()
        return [
            h.to_json()
            for q in ("osprey", '"summary ^with"', "osprey NOT crlf")
            for h in _search(trusted, q, limit=20)
        ]

    monkeypatch.setattr(hits_mod.HitReader, "_sealed", counted)
    fast = run()
    monkeypatch.setattr(hits_mod.HitReader, "_sealed", lambda *a: None)
    assert fast == run()
    assert len(fast) > 20 and all(h["verified"] for h in fast)
    assert len(set(cut)) == 7  # (all but the CRLF one and the two bodies with a backslash)
