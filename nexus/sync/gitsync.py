"""git as the vault's sync engine: ``nexus git setup``, the merge driver git calls, ``nexus sync``.

* ``setup`` makes the vault a git repository nexus can merge: the ``nexus`` merge driver in the
  repository's config (per clone: every clone runs setup once), ``.gitattributes`` sending every file
  kind nexus manages to it, ``.nexus/`` ignored, and ``post-merge``/``post-checkout``/``post-rewrite``
  hooks running ``nexus git refresh``.
* ``merge_driver`` is what git runs for each such file that changed on both sides (``merge.py`` holds
  the rules); a plain ``git pull`` therefore merges exactly as ``nexus sync`` does.
* ``refresh`` brings what a merge cannot see up to date: entries that arrived older than what agents
  had read (their cursors must not skip them), colliding decision numbers (renumbered, recorded), the
  decision register, the review note and the memory index, conflict copies of segments.
* ``sync`` commits what nexus manages, fetches, merges through the driver (holding the write locks so
  no append lands between git's checks and its writes), refreshes, verifies, and pushes only a vault
  that verifies.
"""

from __future__ import annotations

import contextlib
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SyncError
from ..settings import resolve as resolve_settings
from ..storage.vault import Vault
from ..trust import NO_PINS, Trust
from . import merge

DRIVER = "nexus"
HOOKS = ("post-merge", "post-checkout", "post-rewrite")
HOOK_MARK = "# nexus: refresh derived state after git changed the vault"
ATTR_BEGIN = "# nexus:begin (written by `nexus git setup`)"
ATTR_END = "# nexus:end"
ATTRIBUTES = (
    "log/*.md merge=nexus -text",
    "decisions/*.md merge=nexus",
    "Decisions.md merge=nexus",
    "state/project.md merge=nexus",
    "state/history/*.md merge=nexus",
    "agents/*/checkpoint.md merge=nexus",
    "agents/*/checkpoint-history.md merge=nexus",
    "agents/*/identity.md merge=nexus",
    "agents/*/head.json merge=nexus",
    "agents/*/MEMORY.md merge=nexus",
    "agents/*/bank.md merge=nexus",
    "USER.md merge=nexus",
    "memory/*.md merge=nexus",
    "handoff/*.md merge=nexus",
    "nexus.md merge=nexus",
)
MANAGED = (
    "log",
    "decisions",
    "Decisions.md",
    "state",
    "agents",
    "USER.md",
    "memory",
    "handoff",
    "archive",
    "conflicts",
    "nexus.md",
    "NEXUS-FORMAT.md",
    "Home.md",
    ".gitattributes",
    ".gitignore",
)
IGNORED = (".nexus/", ".*.tmp")
DRIVER_SAYS = "nexus merge: "  # how the driver's lines start on stderr
IN_SYNC_ENV = "NEXUS_IN_SYNC"  # set for git's children while `nexus sync` merges (hooks skip)


def _git(
    cwd: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False, env=env)
    except FileNotFoundError:
        raise SyncError("git is not installed (or not on PATH)") from None
    if check and proc.returncode != 0:
        why = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise SyncError(f"git {args[0]} failed: {why[-1] if why else f'exit {proc.returncode}'}")
    return proc


def toplevel(vault: Vault) -> Path | None:
    proc = _git(vault.root, "rev-parse", "--show-toplevel", check=False)
    return Path(proc.stdout.strip()) if proc.returncode == 0 else None


def _prefix(vault: Vault, top: Path) -> str:
    rel = vault.root.resolve().relative_to(top.resolve()).as_posix()
    return "" if rel == "." else rel + "/"


# ------------------------------------------------------------------ setup


def driver_command() -> str:
    return f"{shlex.quote(sys.executable)} -m nexus git merge-driver %O %A %B %L %P"


def setup(vault: Vault) -> dict[str, Any]:
    """Make the vault's repository (created when there is none) merge through nexus. Idempotent."""
    top = toplevel(vault)
    created = top is None
    if top is None:
        _git(vault.root, "init", "-q")
        top = vault.root
    _git(top, "config", "merge.nexus.name", "nexus: merge log entries, decisions, state… by record")
    _git(top, "config", "merge.nexus.driver", driver_command())
    changed = []
    if _write_block(vault.root / ".gitattributes", ATTRIBUTES):
        changed.append(".gitattributes")
    ignore = vault.root / ".gitignore"
    lines = ignore.read_text(encoding="utf-8").splitlines() if ignore.exists() else []
    wanted = [x for x in IGNORED if x not in lines]
    if wanted:  # derived state; the temp files of atomic replaces (there only for an instant)
        ignore.write_text("\n".join([*lines, *wanted]) + "\n", encoding="utf-8")
        changed.append(".gitignore")
    hooks_dir = Path(_git(top, "rev-parse", "--git-path", "hooks").stdout.strip())
    if not hooks_dir.is_absolute():
        hooks_dir = top / hooks_dir
    hooks_dir.mkdir(parents=True, exist_ok=True)
    command = (
        f"{shlex.quote(sys.executable)} -m nexus --vault {shlex.quote(str(vault.root))} git refresh --quiet"
    )
    for name in HOOKS:
        # what the work tree held before git changed it: post-checkout is given it; else ORIG_HEAD
        call = f"{command} --before {'$1' if name == 'post-checkout' else 'ORIG_HEAD'} || true"

        path = hooks_dir / name
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        if HOOK_MARK in old:
            kept = old.split(HOOK_MARK)[0].rstrip("\n")
            text = (kept + "\n" if kept else "#!/bin/sh\n") + f"{HOOK_MARK}\n{call}\n"
        elif old:
            text = old.rstrip("\n") + f"\n{HOOK_MARK}\n{call}\n"
        else:
            text = f"#!/bin/sh\n{HOOK_MARK}\n{call}\n"
        if text != old:
            path.write_text(text, encoding="utf-8")
            changed.append(f"hooks/{name}")
        path.chmod(0o755)
    return {
        "repository": str(top),
        "created": created,
        "vault_prefix": _prefix(vault, top),
        "driver": driver_command(),
        "changed": changed,
    }


def _write_block(path: Path, lines: tuple[str, ...]) -> bool:
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    block = "\n".join([ATTR_BEGIN, *lines, ATTR_END]) + "\n"
    if ATTR_BEGIN in old and ATTR_END in old:
        before, rest = old.split(ATTR_BEGIN, 1)
        after = rest.split(ATTR_END, 1)[1].lstrip("\n")
        text = before + block + after
    else:
        text = (old.rstrip("\n") + "\n\n" if old.strip() else "") + block
    if text == old:
        return False
    path.write_text(text, encoding="utf-8")
    return True


# ------------------------------------------------------------------ the merge driver


def merge_driver(
    base: str,
    ours: str,
    theirs: str,
    path: str,
    cwd: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> tuple[int, list[str]]:
    """Merge one file as git asks (``%O %A %B … %P``): the result goes into ``ours``. Returns the exit
    code (0 merged, 1 a conflict left for a person) and one line per conflict listed. ``env``: the
    environment git ran the driver in (its ``NEXUS_*`` settings, as for any command)."""
    kind, prefix = merge.kind_of(path)
    b, o, t = (Path(p).read_bytes() for p in (base, ours, theirs))
    rel = path[len(prefix) :]
    root = (cwd or Path.cwd()) / prefix
    if kind == "memory" and b not in (o, t) and o != t:
        result = merge.merge_memory(b, o, t, rel, _memory_limit(root, rel, env or {}))
    else:
        result = merge.merge(kind, b, o, t, rel)
    Path(ours).write_bytes(result.data)
    lines = []
    for conflict in result.conflicts:
        note = root / conflict.note_name()
        if conflict.other and not note.exists():
            note.parent.mkdir(parents=True, exist_ok=True)
            note.write_bytes(conflict.note())
        lines.append(
            f"{conflict.kind}: {rel}: {conflict.message}"
            + (f" (other side kept in {conflict.note_name()})" if conflict.other else "")
        )
    for rel_path, extra in result.beside:
        target = _beside_name(root / rel_path, extra)
        if not target.exists():
            target.write_bytes(extra)
        lines.append(f"{kind}: {rel}: both sides wrote it; the other is kept as {target.name}")
    return (0 if result.clean else 1), lines


def _beside_name(path: Path, data: bytes) -> Path:
    """Where the other side's note goes: ``STEM-NNNNN.md``, the number from its content, so every
    clone that merges the same two notes writes the same file (and git never meets two names for
    one note, nor a file the driver wrote where the merge is about to write another)."""
    import hashlib

    stem = path.stem.rsplit("-", 1)[0] if path.stem.count("-") == 3 else path.stem
    number = 10_000 + int(hashlib.sha256(data).hexdigest()[:8], 16) % 90_000
    target = path.with_name(f"{stem}-{number}.md")
    while target.exists() and target.read_bytes() != data:  # (a clash of numbers: the next one)
        number += 1
        target = path.with_name(f"{stem}-{number}.md")
    return target


def _memory_limit(root: Path, rel: str, env: Mapping[str, str]) -> int | None:
    """The limit the settings give a memory file: ``NEXUS_MEMORY_CHARS``/``NEXUS_USER_CHARS`` in the
    environment git runs the driver in, else nexus.md, else the default."""
    try:
        found = resolve_settings({}, env, Vault(root).config())
    except Exception:  # a damaged nexus.md or a bad value must not stop a merge: the default applies
        return None
    return found.user_chars if rel == "USER.md" else found.memory_chars


# ------------------------------------------------------------------ after a merge


def refresh(vault: Vault, before: str | None = None, *, trust: Trust = NO_PINS) -> dict[str, Any]:
    """What git cannot do itself after it changed the vault (post-merge, post-checkout, sync).
    ``before``: the commit the work tree held before (entries new since it are noted as arrivals);
    ``trust``: the machine's pins (a conflict copy's entries count only when they verify)."""
    from ..team import claimlog
    from . import copies

    arrived = _record_arrivals(vault, before) if before else 0
    renumbered = _renumber_decisions(vault)
    _dedupe_handoffs(vault)
    _rewrite_derived(vault)
    imported = copies.import_all(vault, trust)
    if (vault.root / claimlog.NOTE).exists():  # the claims the merge or the copies brought (or lost)
        claimlog.write_note(vault, claimlog.refresh(vault, trust))
    return {"arrived": arrived, "renumbered": renumbered, "imported": [c.to_json() for c in imported]}


def _record_arrivals(vault: Vault, before: str) -> int:
    """Entries the merge brought (in HEAD's segments, not in ``before``'s), noted in
    ``.nexus/arrivals``: an agent whose cursor is past their ids (they sort before entries it has
    read) still gets each once. Committed versions on both sides, so local appends are never taken
    for arrivals."""
    from ..ledger import log

    top = toplevel(vault)
    if top is None:
        return 0
    log_dir = _prefix(vault, top) + "log/"
    changed = _git(top, "diff", "--name-only", before, "HEAD", "--", log_dir, check=False).stdout.split()
    arrived: set[str] = set()
    for path in changed:
        name = path[len(log_dir) :]
        if "/" in name or not name.endswith(".md") or not log.is_segment_name(name[:-3]):
            continue
        after = _ids_at(top, "HEAD", path)
        arrived |= after - _ids_at(top, before, path)
    log.note_arrivals(vault, sorted(arrived))
    return len(arrived)


def _ids_at(top: Path, commit: str, path: str) -> set[str]:
    proc = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=top, capture_output=True, check=False)
    if proc.returncode != 0:
        return set()
    return {bid for bid, _ in merge.split_segment(proc.stdout)[1] if bid}


def _renumber_decisions(vault: Vault) -> list[dict[str, str]]:
    """Two machines that each recorded a decision at once both picked the next number. The earlier
    (by its log entry's id) keeps it; the other gets the next free number, its note renamed and the
    change recorded in its meta comment (``renumbered_from``; the author's signature still covers the
    number it was signed with)."""
    from ..project import decisions
    from ..storage import durable
    from ..storage.locks import exclusive

    out: list[dict[str, str]] = []
    with exclusive(vault.lock("decisions")):
        notes: dict[int, list[tuple[Path, dict[str, Any], str]]] = {}
        top = 0
        for path, did in decisions.note_ids(vault).items():
            number = int(did[2:])
            top = max(top, number)
            try:
                props, body = decisions.read_note(vault, path)
            except Exception:  # a damaged note is verify's to report
                continue
            notes.setdefault(number, []).append((path, props, body))
        for number in sorted(notes):
            group = sorted(notes[number], key=lambda n: (str(n[1].get("entry") or "~"), n[0].name))
            for path, props, body in group[1:]:
                top += 1
                new_id = f"D-{top:04d}"
                old_id = str(props.get("id"))
                props["renumbered_from"] = props.get("renumbered_from") or old_id
                props["id"] = new_id
                props["aliases"] = [new_id]
                target = path.with_name(f"{new_id}-{decisions.slug(str(props.get('title', '')))}.md")
                durable.create_exclusive(target, decisions.note_text(vault, props, body).encode("utf-8"))
                path.unlink()
                out.append({"from": old_id, "to": new_id, "note": vault.rel(target)})
        if out or notes:
            decisions.write_register(vault)
    return out


def _dedupe_handoffs(vault: Vault) -> None:
    """Two clones that merged the same two handoffs may have put them under different names: after
    the next merge one handoff can sit under two names. Exact copies are kept once (the first name)."""
    seen: set[bytes] = set()
    for path in sorted((vault.root / "handoff").glob("*.md"), key=lambda p: (len(p.name), p.name)):
        data = path.read_bytes()
        if data in seen:
            path.unlink()
        seen.add(data)


def _rewrite_derived(vault: Vault) -> None:
    from ..memory import bank, facts

    if bank.review_path(vault).exists():
        bank.rebuild_review(vault)
    if facts.index_path(vault).exists():
        facts.rebuild_index(vault)


# ------------------------------------------------------------------ sync


def _locks(vault: Vault) -> list[Path]:
    from ..keys.roster import agents

    # In the order every writer nests them: a record's own lock first, the log's last (deciding holds
    # the decisions lock while it appends its entry; approving holds a bank's while it rewrites the
    # review note).
    names = ["decisions", "state"]
    for agent in agents(vault):
        names += [f"checkpoint-{agent}", f"bank-{agent}", f"memory-{agent}"]
    names += ["memory-user", "review-note", "log"]
    return [vault.lock(n) for n in names]


@dataclass(frozen=True)
class _Repository:
    """The git repository a vault syncs through: its work tree, the branch and the remote."""

    top: Path
    git_dir: Path
    branch: str
    remote: str
    prefix: str  # the vault's folder inside the work tree ("" at the top)

    @property
    def upstream(self) -> str:
        return f"{self.remote}/{self.branch}"


def _repository(vault: Vault, remote: str | None) -> _Repository:
    """The vault's repository, checked ready to sync (set up, on a branch, with the remote, no merge in
    progress), or SyncError saying what to do. (Few git processes: `nexus sync` with nothing to do
    should cost little more than `git pull`.)"""
    where = _git(vault.root, "rev-parse", "--show-toplevel", "--absolute-git-dir", check=False).stdout.split(
        "\n"
    )
    if len(where) < 2 or not where[0]:
        raise SyncError("this vault is not in a git repository: run `nexus git setup` first")
    top, git_dir = Path(where[0]), Path(where[1])
    branch = _git(top, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip() or "HEAD"
    wanted = r"^(merge\.nexus\.driver|branch\..*\.remote|remote\..*\.url)$"
    lines = _git(top, "config", "--get-regexp", wanted, check=False).stdout.splitlines()
    config = dict(line.split(" ", 1) for line in lines if " " in line)
    if "merge.nexus.driver" not in config:
        raise SyncError("this vault is not set up for git: run `nexus git setup` first")
    if branch == "HEAD":
        raise SyncError("HEAD is detached: check out a branch first")
    remote = remote or config.get(f"branch.{branch}.remote") or "origin"
    if f"remote.{remote}.url" not in config:
        raise SyncError(f"no git remote {remote!r}: add one (`git remote add {remote} URL`) or pass --remote")
    if (git_dir / "MERGE_HEAD").exists():
        raise SyncError("a git merge is in progress: finish it (or `git merge --abort`) first")
    return _Repository(top, git_dir, branch, remote, _prefix(vault, top))


def sync(
    vault: Vault,
    remote: str | None = None,
    *,
    env: Mapping[str, str],
    trust: Trust,
    attempts: int = 3,
) -> dict[str, Any]:
    """Commit, fetch, merge, refresh, verify, push. SyncError (nothing pushed) when any step fails or
    the merged vault does not verify. ``env``: the environment git runs in (the caller's); ``trust``:
    the machine's pins, which verify the merged vault."""
    repo = _repository(vault, remote)
    git_env = {**env, IN_SYNC_ENV: "1"}
    result: dict[str, Any] = {
        "remote": repo.remote,
        "branch": repo.branch,
        "committed": 0,
        "merged": False,
        "pushed": False,
        "conflicts": [],
    }
    for attempt in range(attempts):
        _git(repo.top, "fetch", "-q", repo.remote, env=git_env)
        merged = _commit_and_merge(vault, repo, result, git_env, retry=attempt < attempts - 1)
        if merged is None:
            continue  # a file written meanwhile by a writer without a lock: commit it too
        has_remote, in_step, before = merged
        if in_step:
            return result  # nothing to do: nothing committed, nothing fetched
        if result["merged"]:
            result["refresh"] = refresh(vault, before, trust=trust)
        _commit_and_verify(vault, repo, result, git_env, trust)
        if _push(repo, result, git_env, has_remote, last=attempt == attempts - 1):
            return result
    return result


def _commit_and_merge(
    vault: Vault, repo: _Repository, result: dict[str, Any], env: dict[str, str], *, retry: bool
) -> tuple[bool, bool, str | None] | None:
    """Under every lock: commit what changed here, merge the remote branch through the driver.
    (has the remote branch, already in step, HEAD before the merge); None: try again."""
    from ..storage.locks import exclusive

    revs = _git(repo.top, "rev-parse", "HEAD", repo.upstream, check=False)
    has_remote = revs.returncode == 0
    in_step = has_remote and len(set(revs.stdout.split())) == 1
    before: str | None = None  # HEAD before the merge (what arrived is what it lacked)
    with contextlib.ExitStack() as stack:
        for lock in _locks(vault):
            stack.enter_context(exclusive(lock))
        result["committed"] += _commit(repo.top, repo.prefix, "nexus sync: changes on this machine", env)
        if result["committed"]:
            in_step = False
        behind = _git(repo.top, "merge-base", "--is-ancestor", repo.upstream, "HEAD", check=False).returncode
        if has_remote and not in_step and behind != 0:
            before = _git(repo.top, "rev-parse", "-q", "--verify", "HEAD", check=False).stdout.strip() or None
            if not _merge(repo, result, env, retry=retry):
                return None
    return has_remote, in_step, before


def _merge(repo: _Repository, result: dict[str, Any], env: dict[str, str], *, retry: bool) -> bool:
    """Merge the remote branch; False: a file in the way was written meanwhile (commit it, try again);
    SyncError when git cannot merge."""
    proc = _git(repo.top, "merge", "--no-edit", "-q", repo.upstream, check=False, env=env)
    result["merged"] = True
    result["conflicts"] += [
        ln[len(DRIVER_SAYS) :] for ln in proc.stderr.splitlines() if ln.startswith(DRIVER_SAYS)
    ]
    if proc.returncode == 0:
        return True
    left = _git(repo.top, "diff", "--name-only", "--diff-filter=U", check=False).stdout.split()
    if not left and "would be overwritten" in proc.stderr and retry:
        return False
    _git(repo.top, "merge", "--abort", check=False)
    why = [ln for ln in proc.stderr.splitlines() if ln.startswith(("error", "fatal"))]
    raise SyncError(
        "git could not merge "
        + (", ".join(left) or "the remote branch")
        + (f" ({why[0]})" if why and not left else "")
        + ": resolve by hand (`git pull`), then run `nexus sync` again"
    )


def _commit_and_verify(
    vault: Vault, repo: _Repository, result: dict[str, Any], env: dict[str, str], trust: Trust
) -> None:
    """Commit the notes the merge derived and verify the vault as committed (no append or decision
    half-done); SyncError when it does not verify."""
    from ..audit.verify_state import verify
    from ..storage.locks import exclusive

    with contextlib.ExitStack() as stack:
        stack.enter_context(exclusive(vault.lock("decisions")))
        stack.enter_context(exclusive(vault.lock("log")))
        result["committed"] += _commit(
            repo.top, repo.prefix, "nexus sync: derived notes after the merge", env
        )
        report = verify(vault, trust=trust)
    if not report.ok:
        first = report.errors[0]
        raise SyncError(
            f"not pushed: the vault does not verify ({len(report.errors)} problem(s); "
            f"first: {first.file}:{first.line}: {first.kind}: {first.message}); "
            "run `nexus verify`"
        )


def _push(
    repo: _Repository, result: dict[str, Any], env: dict[str, str], has_remote: bool, *, last: bool
) -> bool:
    """Push when there is something to push; True when done, False to try again (rejected: the remote
    moved), SyncError after the last attempt."""
    ahead = _git(repo.top, "merge-base", "--is-ancestor", "HEAD", repo.upstream, check=False).returncode
    if has_remote and ahead == 0:
        return True  # nothing to push
    proc = _git(repo.top, "push", "-q", repo.remote, f"HEAD:refs/heads/{repo.branch}", check=False, env=env)
    if proc.returncode == 0:
        if not has_remote:
            _git(repo.top, "branch", "-q", f"--set-upstream-to={repo.upstream}", check=False)
        result["pushed"] = True
        return True
    if last:
        why = proc.stderr.strip().splitlines()
        raise SyncError(f"git push failed: {why[-1] if why else 'rejected'}")
    return False


def _commit(top: Path, prefix: str, message: str, env: dict[str, str]) -> int:
    paths = [prefix + p for p in MANAGED if (top / (prefix + p)).exists()]
    if not paths or not _git(top, "status", "--porcelain", "--", *paths, env=env).stdout.strip():
        return 0
    for attempt in range(3):  # a file that vanished between git's listing and its stat: look again
        added = _git(top, "add", "-A", "--", *paths, env=env, check=attempt == 2)
        if added.returncode == 0:
            break
    if _git(top, "diff", "--cached", "--quiet", check=False).returncode == 0:
        return 0
    _git(top, "commit", "-q", "-m", message, env=env)
    return 1
