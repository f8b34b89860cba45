"""`nexus init` from an installed wheel, re-running it, refusing other folders, and vault discovery."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Env, old_settings_form

from nexus.errors import VaultError
from nexus.storage import vault as vault_mod

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = {"nexus.md", "Home.md", "NEXUS-FORMAT.md"}
FOLDERS = {"log", "agents", "decisions", "state", "handoff", "memory", "archive", ".nexus"}


def _template_files() -> set[str]:
    out = set()
    for p in (ROOT / "nexus" / "vault_template").rglob("*"):
        if p.is_file() and p.name != "__init__.py" and "__pycache__" not in p.parts:
            out.add(p.relative_to(ROOT / "nexus" / "vault_template").as_posix())
    return out


def _assert_complete(root: Path) -> None:
    for rel in _template_files() | EXPECTED:
        assert (root / rel).is_file(), rel
    for folder in FOLDERS:
        assert (root / folder).is_dir(), folder
    for sub in ("locks", "cursors", "cache", "quarantine"):
        assert (root / ".nexus" / sub).is_dir()
    text = (root / "nexus.md").read_text(encoding="utf-8")
    assert "REPLACE_ME" not in text and '%% nexus:meta {"nexus":1,"vault_id":"' in text
    assert "\nvault_id:" not in text  # only a program reads it: not a property
    assert "Live-context log entry" in (root / "NEXUS-FORMAT.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build a wheel from a copy of the sources and install it into a bare folder."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "nexus", src / "nexus", ignore=ignore)
    dist = work / "dist"
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(src)]
    # the way a user builds it (an isolated build env with the declared setuptools); offline, fall
    # back to the setuptools already installed
    if subprocess.run(build, capture_output=True).returncode != 0:
        proc = subprocess.run([*build, "--no-build-isolation"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
    wheels = list(dist.glob("nexus_memory-*.whl"))
    assert len(wheels) == 1
    target = work / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--quiet",
            "--target",
            str(target),
            str(wheels[0]),
        ],
        check=True,
        capture_output=True,
    )
    return target


def test_init_from_an_installed_wheel(installed: Path, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(installed))
    env.pop("NEXUS_VAULT", None)
    # run from a folder outside the checkout, so nothing can come from the source tree
    code = (
        "import sys, nexus, nexus.storage.vault, nexus.surfaces.cli; print(nexus.__file__);"
        " print(nexus.storage.vault.__file__);"
        " sys.exit(nexus.surfaces.cli.main(['init', sys.argv[1]]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "a")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()[:2]
    assert first.startswith(str(installed)) and second.startswith(str(installed))
    _assert_complete(tmp_path / "a")
    # `python -m nexus init` from the installed copy too
    proc = subprocess.run(
        [sys.executable, "-m", "nexus", "init", str(tmp_path / "b")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    _assert_complete(tmp_path / "b")
    # without site-packages at all (python -S): init needs nothing but the wheel
    proc = subprocess.run(
        [sys.executable, "-S", "-m", "nexus", "init", str(tmp_path / "c")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    _assert_complete(tmp_path / "c")


def test_init_again_is_safe(env: Env) -> None:
    root = env.vault.root
    env.append("ella", "keep me")
    settings = (root / "nexus.md").read_bytes()
    home = root / "Home.md"
    home.write_text("my own home note\n", encoding="utf-8")
    (root / "NEXUS-FORMAT.md").unlink()
    run = env.run("init", str(root), "--json")
    # their Home.md is kept; nexus's introduction goes beside it (issue 13, item 12)
    assert sorted(run.json()["created"]) == ["NEXUS-FORMAT.md", "NEXUS-README.md"]
    assert (root / "nexus.md").read_bytes() == settings  # vault_id unchanged
    assert home.read_text(encoding="utf-8") == "my own home note\n"
    assert env.run("verify").returncode == 0
    assert env.run("init", str(root), "--json").json()["created"] == []


def test_init_refuses_a_folder_with_other_files(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "nexus", "init", str(folder)], capture_output=True, text=True
    )
    assert proc.returncode == 1 and "--force" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert sorted(os.listdir(folder)) == ["notes.txt"]
    proc = subprocess.run(
        [sys.executable, "-m", "nexus", "init", str(folder), "--force"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    _assert_complete(folder)
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_init_accepts_an_empty_folder_or_one_with_obsidian_settings(tmp_path: Path) -> None:
    (tmp_path / "v" / ".obsidian").mkdir(parents=True)
    vault_mod.init(tmp_path / "v")
    _assert_complete(tmp_path / "v")
    with pytest.raises(VaultError):
        (tmp_path / "file").write_text("x", encoding="utf-8")
        vault_mod.init(tmp_path / "file")


def test_vault_discovery_order(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    roots = {}
    for name in ("a", "b", "c"):
        roots[name] = tmp_path / name
        vault_mod.init(roots[name])
    from nexus.keys import identity

    for name, root in roots.items():
        identity.add(vault_mod.Vault(root), keys, f"agent-{name}")
    sub = roots["c"] / "log" / "deep"
    sub.mkdir(parents=True)
    base = {k: v for k, v in os.environ.items() if k != "NEXUS_VAULT"} | {"NEXUS_HOME": str(keys)}

    def names(*args: str, env_vault: str | None) -> list[str]:
        env = base | ({"NEXUS_VAULT": env_vault} if env_vault else {})
        proc = subprocess.run(
            [sys.executable, "-m", "nexus", *args, "agent", "list", "--json"],
            env=env,
            cwd=sub,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
        import json

        return [i["name"] for i in json.loads(proc.stdout)]

    assert names("--vault", str(roots["a"]), env_vault=str(roots["b"])) == ["agent-a"]
    assert names(env_vault=str(roots["b"])) == ["agent-b"]
    assert names(env_vault=None) == ["agent-c"]  # walk up from c/log/deep
    # not a vault: one clear error
    proc = subprocess.run(
        [sys.executable, "-m", "nexus", "--vault", str(tmp_path), "agent", "list"],
        env=base,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "not a nexus vault" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "nexus", "agent", "list"],
        env=base,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "no nexus vault here" in proc.stderr


@pytest.mark.parametrize("digits", ["1234567890123456", "0012345670123456"])
def test_a_vault_id_of_digits_stays_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, digits: str
) -> None:
    """About 1 init in 1,845 draws a vault id of digits only; YAML must not turn it into a number."""
    import secrets

    monkeypatch.setattr(secrets, "token_hex", lambda n: digits)
    vault, _ = vault_mod.init(tmp_path / "new")
    assert f'"vault_id":"{digits}"' in (vault.root / "nexus.md").read_text(encoding="utf-8")
    assert vault_mod.Vault(vault.root).vault_id == digits
    # vaults made before the id moved to the meta comment: a property, quoted or (older) not, as written
    for n, written in enumerate((f'"{digits}"', digits)):
        old = tmp_path / f"old{n}"
        old.mkdir()
        text = old_settings_form((vault.root / "nexus.md").read_text(encoding="utf-8"), written)
        (old / "nexus.md").write_text(text, encoding="utf-8")
        assert vault_mod.Vault(old).vault_id == digits


def test_init_force_over_an_obsidian_vault_keeps_its_home_and_writes_the_introduction(tmp_path: Path) -> None:
    """Issue 13, item 12: `nexus init --force` on an existing vault kept its Home.md silently and never
    wrote nexus's own introduction anywhere."""
    folder = tmp_path / "notes"
    (folder / ".obsidian").mkdir(parents=True)
    (folder / "Home.md").write_text("# My notes\n\nGarden, books, work.\n", encoding="utf-8")
    (folder / "books.md").write_text("# Books\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-m", "nexus", "init", str(folder), "--force"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "kept your Home.md" in proc.stdout and "NEXUS-README.md" in proc.stdout
    assert (folder / "Home.md").read_text(encoding="utf-8") == "# My notes\n\nGarden, books, work.\n"
    intro = (folder / "NEXUS-README.md").read_text(encoding="utf-8")
    assert "# nexus: start here" in intro and "Where to look" in intro and "nexus/introduction" in intro
    again = subprocess.run(
        [sys.executable, "-m", "nexus", "init", str(folder), "--json"], capture_output=True, text=True
    )
    assert json.loads(again.stdout)["created"] == []  # never twice
