"""The freshness check trusts the kernel's watches (search/watches.py) only as far as they hold:
while a vault is watched and quiet a search lists nothing, and every change another process makes
(an append, an edit in place, a touch, a new folder, a save through a rename, a deletion, an edit
through a hard link from outside the vault) is seen by the very next search."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from nexus import search
from nexus.search import documents, watches
from nexus.search.watches import WATCHES

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or watches.filesystem("/tmp") not in watches.LOCAL,
    reason="inotify on a local filesystem",
)


def _search(vault: Any, text: str, **kw: Any) -> list[Any]:
    """A search by words (these tests count the text index's freshness work)."""
    return search.search(vault, text, mode="text", **kw)


def _other_process(code: str) -> None:
    """Run ``code`` in another process (``p`` is pathlib.Path, ``os`` is imported)."""
    subprocess.run([sys.executable, "-c", "import os; from pathlib import Path as p\n" + code], check=True)


def _paths(env: Env) -> list[str]:
    return sorted(h.path for h in _search(env.vault, "quokka"))


def _quiet(env: Env) -> None:
    """The vault watched and quiet: the next search will not list it."""
    _search(env.vault, "warmup")
    _search(env.vault, "warmup")  # (watched from its second listing)
    assert WATCHES.unchanged(str(env.vault.root))


def test_every_change_another_process_makes_is_seen_by_the_next_search(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = env.vault.root
    note = root / "notes" / "plan.md"
    note.parent.mkdir(exist_ok=True)
    note.write_text("# Plan\n\nNothing yet.\n", encoding="utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text("# Linked\n\nNothing here either.\n", encoding="utf-8")
    _quiet(env)
    listed: list[str] = []
    real = documents.Listings.listing

    def listing(*a: Any) -> Any:
        listed.append(a[1])
        return real(*a)

    monkeypatch.setattr(documents.Listings, "listing", listing)
    assert _paths(env) == [] and listed == []  # quiet: nothing listed, no stat

    env.append("ella", "an append about the wombat")  # (this process: the kernel hears it too)
    assert [h.kind for h in _search(env.vault, "wombat")] == ["entry"] and listed
    _quiet(env)
    _other_process(f"f = open({str(note)!r}, 'r+b'); f.seek(8); f.write(b'Quokka.'); f.close()")
    assert _paths(env) == ["notes/plan.md"]  # an edit in place, the same size
    _quiet(env)
    _other_process(f"os.utime({str(note)!r}, ns=(1, 1))")
    assert not WATCHES.unchanged(str(root))  # a touch
    _quiet(env)
    new = root / "new" / "deeper"
    _other_process(f"p({str(new)!r}).mkdir(parents=True); p({str(new)!r}, 'n.md').write_text('quokka den')")
    assert _paths(env) == ["new/deeper/n.md", "notes/plan.md"]  # a new folder and its note
    _quiet(env)
    _other_process(
        f"t = p({str(root)!r}, 'notes', '.plan.tmp'); t.write_text('# Plan\\n\\nA heron plan.\\n'); "
        f"os.replace(t, {str(note)!r})"
    )
    assert [h.path for h in _search(env.vault, "heron")] == ["notes/plan.md"]  # saved by a rename
    assert _paths(env) == ["new/deeper/n.md"]
    _quiet(env)
    _other_process(f"os.unlink({str(root / 'new' / 'deeper' / 'n.md')!r})")
    assert _paths(env) == []  # deleted
    os.link(outside, root / "notes" / "linked.md")
    _quiet(env)
    _other_process(f"p({str(outside)!r}).write_text('# Linked\\n\\nA quokka, linked.\\n')")
    assert _paths(env) == ["notes/linked.md"]  # edited through the other link


def test_a_vault_on_a_filesystem_inotify_cannot_speak_for_is_listed_every_time(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watches, "LOCAL", frozenset())
    monkeypatch.setattr(WATCHES, "refused", set())
    WATCHES.release(str(env.vault.root))
    for _ in range(3):
        _search(env.vault, "warmup")
    assert not WATCHES.unchanged(str(env.vault.root)) and str(env.vault.root) in WATCHES.refused
    note = env.vault.root / "n.md"
    note.write_text("quokka", encoding="utf-8")
    assert _paths(env) == ["n.md"]


def test_an_overflowed_queue_or_a_dropped_watch_trusts_nothing(env: Env) -> None:
    root = str(env.vault.root)
    _quiet(env)
    WATCHES._events(watches.EVENT.pack(-1, watches.IN_Q_OVERFLOW, 0, 0))
    assert not WATCHES.unchanged(root)
    _quiet(env)
    wd, _ = next(iter(WATCHES.vaults[root].paths.values()))
    WATCHES._events(watches.EVENT.pack(wd, watches.IN_IGNORED, 0, 0))
    assert not WATCHES.unchanged(root)
    _quiet(env)  # (watched again)


def test_a_forked_child_never_reads_its_parents_queue(env: Env) -> None:
    _quiet(env)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os._exit(0 if WATCHES.fd is None and not WATCHES.vaults else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert WATCHES.unchanged(str(env.vault.root))  # the parent's watches untouched


def test_filesystem_types_are_read_from_the_mount_table(tmp_path: Path) -> None:
    assert watches.filesystem("/proc") == "proc"
    assert watches.filesystem(str(tmp_path)) == watches.filesystem("/tmp")
    assert watches._unescape("/mnt/my\\040vault") == "/mnt/my vault"
