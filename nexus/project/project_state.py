"""Project state: one note saying where the project stands, changed only on the version it was read at.

* ``state/project.md`` – the current state (properties: version, updated, updated_by; body: content).
* ``state/history/vNNNN.md`` – every version ever accepted, kept whole and restorable.

``set_state`` replaces the content only if the caller's ``expect`` is still the current version
(optimistic concurrency, under an exclusive lock); otherwise it raises :class:`StaleEditError`
carrying the current version and a diff, logs the refused attempt and changes nothing. Every accepted
change is logged (a ``state`` entry: who, when, one line).

A person may edit ``state/project.md`` in Obsidian. The next ``set`` (or the watcher) notices the
content no longer matches the recorded version's hash and records it as a new version by the vault's
human identity, logged as a human change. ``show`` only reads: it shows the person's text as the
version it will be recorded as.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import re
import time
from pathlib import Path
from typing import Any

from ..errors import IdentityError, InputError, IntegrityError, NotFoundError, StaleEditError
from ..records import StateVersion
from ..storage import durable, markers, meta, properties
from ..storage.locks import exclusive
from ..storage.text import check_body, check_line, make_visible
from ..storage.vault import Vault
from ..trust import Trust

MAX_BYTES = 256 * 1024
_VERSION_RE = re.compile(r"v(\d{4,})\.md")


def note_path(vault: Vault) -> Path:
    return vault.inside(vault.root / "state" / "project.md")


def history_dir(vault: Vault) -> Path:
    return vault.inside(vault.root / "state" / "history")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _norm(content: str) -> str:
    content = content.replace("\r\n", "\n").rstrip()
    return content + "\n" if content else ""


def content_hash(content: str) -> str:
    return hashlib.sha256(_norm(content).encode("utf-8")).hexdigest()


def _version_path(vault: Vault, version: int) -> Path:
    return history_dir(vault) / f"v{version:04d}.md"


def versions(vault: Vault) -> list[StateVersion]:
    """Every recorded version, oldest first."""
    try:
        names = os.listdir(history_dir(vault))
    except FileNotFoundError:
        return []
    out = []
    for name in sorted(names):
        if _VERSION_RE.fullmatch(name):
            out.append(load_version(vault, int(name[1:-3])))
    return out


def _current_number(vault: Vault) -> int:
    try:
        names = os.listdir(history_dir(vault))
    except FileNotFoundError:
        return 0
    nums = [int(m.group(1)) for n in names if (m := _VERSION_RE.fullmatch(n))]
    return max(nums, default=0)


def load_version(vault: Vault, version: int) -> StateVersion:
    path = _version_path(vault, version)
    try:
        props, body = meta.merged(
            *properties.parse(path.read_text(encoding="utf-8"), vault.rel(path)), meta.STATE_VERSION
        )
    except FileNotFoundError:
        raise NotFoundError(
            f"no version {version} of the project state (see `nexus state history`)"
        ) from None
    return StateVersion(
        version=version,
        author=str(props.get("author")),
        kind=str(props.get("kind", "agent")),
        ts=str(props.get("ts")),
        summary=str(props.get("summary", "")),
        sha256=str(props.get("sha256")),
        restored_from=props.get("restored_from"),
        content=_norm(body),
        path=vault.rel(path),
    )


def _note_content(vault: Vault) -> str | None:
    try:
        text = note_path(vault).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    _, body = properties.parse(text, "state/project.md")
    return _norm(body)


def _write(
    vault: Vault,
    version: int,
    author: str,
    kind: str,
    summary: str,
    content: str,
    restored_from: int | None = None,
) -> StateVersion:
    """Record ``content`` as ``version`` (history first, then the current note). Caller holds the lock."""
    ts = _now()
    props: dict[str, Any] = {
        "version": version,
        "author": author,
        "kind": kind,
        "ts": ts,
        "summary": summary,
        "sha256": content_hash(content),
    }
    if restored_from is not None:
        props["restored_from"] = restored_from
    props["tags"] = ["nexus/state-version"]
    path = _version_path(vault, version)
    shown, hidden = meta.apart(props, meta.STATE_VERSION)  # (the hash in the meta comment)
    durable.create_exclusive(
        path, properties.render(shown, meta.attach(_norm(content), hidden)).encode("utf-8")
    )
    current = {"version": version, "updated": ts, "updated_by": author, "tags": ["nexus/state"]}
    try:
        durable.replace(note_path(vault), properties.render(current, _norm(content)).encode("utf-8"))
    except OSError:
        if _note_content(vault) != _norm(content):  # (a folder's fsync fails after the rename)
            with contextlib.suppress(OSError):  # no version the note never held: the retry writes it
                path.unlink()
        raise
    return StateVersion(
        version, author, kind, ts, summary, props["sha256"], restored_from, _norm(content), vault.rel(path)
    )


def absorb_hand_edit(vault: Vault, keys_home: Path | None) -> StateVersion | None:
    """If a person changed ``state/project.md`` since the last recorded version, record their content
    as a new version by the vault's human identity and log it. Returns that version, or None."""
    with exclusive(vault.lock("state")):
        return _absorb_locked(vault, keys_home)


def _unmerged(vault: Vault) -> bool:
    """Whether ``state/project.md`` holds git conflict markers (a merge without the nexus driver)."""
    try:
        return bool(markers.regions(note_path(vault).read_bytes()))
    except FileNotFoundError:
        return False


def _absorb_locked(vault: Vault, keys_home: Path | None) -> StateVersion | None:
    if _unmerged(vault):
        return None  # conflict markers are nobody's text: never recorded as a person's version
    content = _note_content(vault)
    if content is None:
        return None
    current = _current_number(vault)
    if current and load_version(vault, current).sha256 == content_hash(content):
        return None
    if not current and not content:
        return None
    human = vault.human() or "human"
    before = load_version(vault, current).content if current else ""
    change = _first_added(before, content)
    summary = f"edited by hand: {make_visible(change)}" if change else "edited by hand"
    _log_human(vault, keys_home, human, current + 1)  # the entry first, as in set_state
    return _write(vault, current + 1, human, "human", summary[:200], content)


def _log_human(vault: Vault, keys_home: Path | None, human: str, number: int) -> None:
    from ..keys import identity
    from ..ledger import pairs

    if keys_home is None:
        return
    try:
        signer = identity.load_signer(vault, keys_home, human)
    except (IdentityError, InputError):
        return  # no key for the person here: the version is recorded, the log entry waits
    pairs.append_once(
        vault,
        signer,
        channel="state",
        type="state",
        summary=f"project state v{number}: {human} edited it by hand",
        body=f"Version: [[state/history/v{number:04d}|v{number}]] (recorded from Obsidian)",
        via="state",
        trust=Trust(keys_home),  # (the pins live beside the keys)
    )


def current_version(vault: Vault) -> int:
    """The newest recorded version (0: none yet)."""
    return _current_number(vault)


def show(vault: Vault) -> tuple[int, str, bool]:
    """(version, content, whether that content is a person's edit not recorded yet). Reads only: an
    unrecorded hand edit is shown as the version the next ``set`` (or the watcher) records it as, so
    an agent that plans on it passes that version as ``expect``."""
    current = _current_number(vault)
    recorded = load_version(vault, current) if current else None
    content = _note_content(vault)
    if content is None or (recorded is not None and recorded.sha256 == content_hash(content)):
        return current, recorded.content if recorded else "", False
    if not current and not content:
        return 0, "", False
    return current + 1, content, True


def diff(old: str, new: str, old_label: str, new_label: str) -> str:
    lines = difflib.unified_diff(
        _norm(old).splitlines(keepends=True), _norm(new).splitlines(keepends=True), old_label, new_label
    )
    return "".join(lines)


def _refuse_unmerged(vault: Vault) -> None:
    if _unmerged(vault):
        raise IntegrityError(
            "state/project.md holds git conflict markers (a merge without the nexus driver): "
            "nothing changed; run `nexus git resolve`, then read the state again"
        )


def set_state(
    vault: Vault,
    signer: Any,
    *,
    expect: int,
    content: str,
    summary: str | None = None,
    keys_home: Path | None = None,
    restored_from: int | None = None,
) -> StateVersion:
    """Replace the state if ``expect`` is the current version; else log the refusal and raise.
    ``keys_home``: this machine's keys folder, whose pins decide what an append catches up on."""
    from ..ledger import log, pairs

    trust = Trust(keys_home)

    clean = check_body(content, MAX_BYTES) or ""
    _refuse_unmerged(vault)  # (before the summary, which reads the note: markers break its frontmatter)
    line = check_line(summary, "summary") if summary else _first_change(vault, clean)
    with exclusive(vault.lock("state")):
        _refuse_unmerged(vault)
        _absorb_locked(vault, keys_home)
        current = _current_number(vault)
        done = _landed(vault, signer, expect, current, clean)
        if done is not None:
            return done
        if expect != current:
            now = load_version(vault, current).content if current else ""
            before = load_version(vault, expect).content if 0 < expect < current else ""
            changes = diff(before, now, f"v{expect} (yours)", f"v{current} (current)")
            log.append(
                vault,
                signer,
                channel="state",
                type="state-conflict",
                summary=f"stale state edit refused: planned on v{expect}, current is v{current}",
                body=f"Nothing changed. Current: [[state/history/v{current:04d}|v{current}]]"
                if current
                else "Nothing changed.",
                trust=trust,
            )
            raise StaleEditError(
                f"the project state is at version {current}, not {expect}: nothing changed; "
                f"read it again (`nexus state show`) and re-plan your edit",
                current,
                changes,
            )
        number = current + 1
        # the entry first (ledger/pairs.py): a failed append writes nothing; a retry reuses it
        pairs.append_once(
            vault,
            signer,
            channel="state",
            type="state",
            summary=f"project state v{number}: {line}"[:200],
            body=f"Version: [[state/history/v{number:04d}|v{number}]] (was v{number - 1})",
            trust=trust,
        )
        version = _write(vault, number, signer.name, "agent", line, clean, restored_from)
    return version


def _landed(vault: Vault, signer: Any, expect: int, current: int, content: str) -> StateVersion | None:
    """The version this very change already made: the retry of a set whose last write (a folder's
    fsync) failed after the entry and the version were written, or the same agent setting the same
    content again. The entry is written before the version, so that version has its entry. None when
    this is not such a repeat."""
    if current != expect + 1:
        return None
    version = load_version(vault, current)
    if version.author != signer.name or version.kind != "agent" or version.sha256 != content_hash(content):
        return None
    return version if _note_content(vault) == version.content else None


def _first_change(vault: Vault, content: str) -> str:
    return _first_added(_note_content(vault) or "", content) or "updated"


def _first_added(old: str, new: str) -> str | None:
    """The first line added (headings skipped), as one short line; None when only lines went away."""
    for raw in difflib.ndiff(old.splitlines(), new.splitlines()):
        if raw.startswith("+ ") and raw[2:].strip() and not raw[2:].lstrip().startswith("#"):
            return " ".join(raw[2:].split()).lstrip("-* ")[:120] or None
    return None


def restore(
    vault: Vault, signer: Any, *, version: int, expect: int, keys_home: Path | None = None
) -> StateVersion:
    """Make an earlier version current again (a new version, logged)."""
    old = load_version(vault, version)
    return set_state(
        vault,
        signer,
        expect=expect,
        content=old.content,
        summary=f"restored v{version}",
        keys_home=keys_home,
        restored_from=version,
    )


def changes_since(vault: Vault, since: str) -> list[StateVersion]:
    return [v for v in versions(vault) if v.ts >= since]


# ------------------------------------------------------------------ the watcher


def is_state_note(rel: str) -> bool:
    """The note a person edits: ``state/project.md`` (what the watcher's handler looks at)."""
    return rel == "state/project.md"


def on_note_change(vault: Vault, keys_home: Path, rel: str) -> None:
    """`nexus watch` handler (``watcher.note_handlers``): a person's save of ``state/project.md``
    becomes a version at once, signed with this machine's keys (``keys_home``)."""
    absorb_hand_edit(vault, keys_home)
