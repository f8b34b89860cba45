"""A vault on disk: where it is, what lives where, and creating one from the template.

Layout (see NEXUS-FORMAT.md in every vault)::

    nexus.md              settings (frontmatter) – also marks the folder as a vault
    Home.md               what this vault is, for a person
    NEXUS-FORMAT.md       the format spec of every record kind
    log/YYYY-MM.md        live-context log segments
    agents/NAME/          identity.md, checkpoint.md, MEMORY.md …
    decisions/ state/ handoff/ memory/ archive/
    .nexus/               derived machine state (Obsidian does not index dot-folders); rebuildable
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ..errors import IdentityError, VaultError
from ..suggest import closest
from . import durable, meta

MARKER = "nexus.md"
_KEY_ID_RE = re.compile(rb"^key_id:\s*['\"]?([0-9a-f]{16})['\"]?\s*$", re.MULTILINE)
STATE_DIR = ".nexus"
# Files a freshly created vault may already hold without counting as "other files".
_IGNORABLE = {".obsidian", ".git", ".DS_Store", ".gitignore", ".nexus"}


class Vault:
    """Paths inside one vault. Cheap to construct; touches the disk only when asked."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

    # ------------------------------------------------------------ paths
    @property
    def state(self) -> Path:
        return self.root / STATE_DIR

    @property
    def log_dir(self) -> Path:
        return self.root / "log"

    @property
    def agents_dir(self) -> Path:
        return self.root / "agents"

    def agent_dir(self, name: str) -> Path:
        return self.agents_dir / name

    def identity_path(self, name: str) -> Path:
        return self.agent_dir(name) / "identity.md"

    def identity_names(self) -> list[str]:
        """The names of the vault's identities (folders under ``agents/`` holding an identity note)."""
        try:
            return sorted(p.name for p in self.agents_dir.iterdir() if (p / "identity.md").is_file())
        except OSError:
            return []

    def unknown_agent(self, name: str) -> IdentityError:
        """The error for a name that is no identity here: the close one when there is one (a typo must
        not be invited to become an identity), else how to add it."""
        close = closest(name, self.identity_names())
        listed = "(`nexus agent list` lists them)"
        if close is not None:
            return IdentityError(f"unknown agent {name!r}: did you mean {close!r}? {listed}")
        return IdentityError(f"unknown agent {name!r}: run `nexus agent add {name}` first {listed}")

    def key_id_of(self, name: str) -> str | None:
        """The ``key_id`` of ``name``'s identity note (its ``nexus:meta`` comment, or a property in
        notes written before the comment existed), read without YAML (hot paths), or None when there
        is no such note or field."""
        try:
            data = self.identity_path(name).read_bytes()
        except OSError:
            return None
        fields = meta.fields_of(data)
        if fields is not None:  # a note with a meta comment keeps its key there, and only there
            kid = fields.get("key_id")
            return kid if isinstance(kid, str) else None
        found = _KEY_ID_RE.search(data)
        return found.group(1).decode("ascii") if found else None

    def lock(self, name: str) -> Path:
        return self.state / "locks" / f"{name}.lock"

    def inside(self, path: Path) -> Path:
        """``path`` itself when it, and every link on the way to it, stays inside the vault; a link
        that leads out (or loops) raises VaultError: nexus never reads or writes through one."""
        try:
            real = path.resolve()
        except (OSError, RuntimeError):  # a link loop
            raise VaultError(
                f"{_shown(self.root, path)} is a link that loops; nexus does not follow it"
            ) from None
        if real != self.root and self.root not in real.parents:
            raise VaultError(
                f"{_shown(self.root, path)} leads outside the vault (a link to {real}); "
                "nexus never reads or writes through it"
            ) from None
        return path

    def rel(self, path: Path) -> str:
        """Vault-relative POSIX path of ``path``; VaultError when a link leads it out of the vault."""
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            self.inside(path)  # (raises, naming the link)
            raise

    # ------------------------------------------------------------ config
    def config(self) -> dict[str, Any]:
        """The properties of ``nexus.md``, cached under ``.nexus/`` by (mtime, size) so hot paths
        never import YAML."""
        marker = self.root / MARKER
        try:
            st = marker.stat()
        except FileNotFoundError:
            raise VaultError(f"{self.root} is not a nexus vault (no {MARKER})") from None
        stamp = [st.st_mtime_ns, st.st_size]
        cache = self.state / "cache" / "config.json"
        try:
            cached = json.loads(cache.read_text(encoding="utf-8"))
            if cached.get("stamp") == stamp:
                return dict(cached["config"])
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            pass
        from . import notes

        props, body = notes.read(marker, self.root)
        props, _ = meta.merged(props, body, meta.SETTINGS)  # vault_id: the comment (older: a property)
        clean = json.loads(json.dumps(props, default=str))
        durable.replace(cache, json.dumps({"stamp": stamp, "config": clean}).encode(), durable=False)
        return dict(clean)

    @property
    def vault_id(self) -> str:
        """The vault's id (``nexus.md``): it names files outside the vault (this machine's pins and
        proofs of it), so it is letters, digits, dashes and underscores only, never a path."""
        vid = self.config().get("vault_id")
        if isinstance(vid, str) and vid:
            return _checked_id(self.root / MARKER, vid)
        if vid is not None and not isinstance(vid, bool):
            # An id written unquoted that YAML read as a number (all digits): the text is the id.
            raw = _raw_property(self.root / MARKER, "vault_id")
            if raw:
                return _checked_id(self.root / MARKER, raw)
        raise VaultError(f"{self.root / MARKER} has no vault_id property")

    def human(self) -> str | None:
        """The vault's human identity (who signs what a person writes in Obsidian)."""
        value = self.config().get("human")
        return value if isinstance(value, str) and value else None


def _checked_id(marker: Path, vid: str) -> str:
    if not (len(vid) <= 64 and vid.isascii() and vid.replace("-", "").replace("_", "").isalnum()):
        raise VaultError(
            f"{marker}'s vault_id {vid[:80]!r} is not an id: use letters, digits, dashes and underscores "
            "only (it names this machine's files about the vault, so it can never be a path)"
        )
    return vid


def _shown(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _raw_property(note: Path, key: str) -> str | None:
    """The text of ``key: value`` in a note's frontmatter as written, quotes removed, or None."""
    try:
        text = note.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = re.search(rf"^{re.escape(key)}:[ \t]*[\"']?([A-Za-z0-9_-]+)[\"']?[ \t]*$", text, re.M)
    return match.group(1) if match else None


def find(explicit: str | os.PathLike[str] | None, env_value: str | None, cwd: Path) -> Vault:
    """``--vault``, then ``NEXUS_VAULT``, then the nearest folder above ``cwd`` holding nexus.md."""
    for given, origin in ((explicit, "--vault"), (env_value, "NEXUS_VAULT")):
        if given:
            root = Path(given).expanduser()
            if not (root / MARKER).is_file():
                raise VaultError(
                    f"{origin} {root} is not a nexus vault (no {MARKER}); run `nexus init {root}`"
                )
            return Vault(root)
    for folder in (cwd, *cwd.parents):
        if (folder / MARKER).is_file():
            return Vault(folder)
    raise VaultError(
        "no nexus vault here: pass --vault PATH, set NEXUS_VAULT, or run `nexus init PATH` first"
    )


def _template_files() -> list[tuple[str, bytes]]:
    """(vault-relative path, bytes) of every template file, from the installed package."""
    from importlib import resources  # only `init` needs it: kept off the hot paths

    root = resources.files("nexus.vault_template")
    out: list[tuple[str, bytes]] = []

    def walk(node: Any, prefix: str) -> None:
        for child in node.iterdir():
            name = child.name
            if name in {"__pycache__", "__init__.py"}:
                continue
            rel = f"{prefix}{name}"
            if child.is_dir():
                walk(child, rel + "/")
            else:
                out.append((rel, child.read_bytes()))

    walk(root, "")
    return sorted(out)


HOME = "Home.md"
INTRODUCTION = "NEXUS-README.md"  # nexus's introduction, when the vault has a Home.md of its own


def init(path: Path, *, force: bool = False) -> tuple[Vault, list[str]]:
    """Create (or complete) a vault at ``path`` from the template; return it and the files created.

    Safe to run again: existing files are never overwritten. A folder holding other files is refused
    unless ``force`` is given. A ``Home.md`` of the person's own is kept, and nexus's introduction is
    written beside it as ``INTRODUCTION`` (see ``introduction_moved``).
    """
    path = path.expanduser()
    if path.exists() and not path.is_dir():
        raise VaultError(f"{path} exists and is not a folder")
    is_vault = (path / MARKER).is_file()
    if path.exists() and not is_vault and not force:
        others = sorted(p.name for p in path.iterdir() if p.name not in _IGNORABLE)
        if others:
            shown = ", ".join(others[:5]) + (" …" if len(others) > 5 else "")
            raise VaultError(
                f"{path} already holds other files ({shown}); pass --force to make it a vault anyway"
            )
    path.mkdir(parents=True, exist_ok=True)
    created: list[str] = []
    for rel, data in _template_files():
        target = path / rel
        if target.exists():
            if rel == HOME and target.read_bytes() != data and not (path / INTRODUCTION).exists():
                rel, target = INTRODUCTION, path / INTRODUCTION  # their own Home.md: ours goes beside it
                data = data.replace(b"  - nexus/home\n", b"  - nexus/introduction\n").replace(
                    b"# Home\n",
                    b"# nexus: start here\n\n> [!note] This vault already had a Home note, "
                    b"kept as it was; this is nexus's introduction.\n",
                    1,
                )
            else:
                continue
        if rel == MARKER:
            import secrets

            # in the note's meta comment (JSON: text even when every digit happens to be 0-9)
            data = data.replace(b'"vault_id":"REPLACE_ME"', f'"vault_id":"{secrets.token_hex(8)}"'.encode())
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            durable.create_exclusive(target, data)
        except FileExistsError:  # another `nexus init` of the same folder got there first
            continue
        created.append(rel)
    vault = Vault(path)
    for sub in ("locks", "cursors", "cache", "quarantine"):
        (vault.state / sub).mkdir(parents=True, exist_ok=True)
    for folder in ("log", "agents", "decisions", "state", "handoff", "memory", "archive"):
        (path / folder).mkdir(exist_ok=True)
    return vault, created
