"""`nexus setup codex` as Codex 0.171.0 itself sees it: the real program (installed by
scripts/runtimes/codex.sh) is asked through `codex app-server` which hooks it will run and whether it
reads the project's `.codex/`. Its `hooks/list` gives each hook's hash as Codex computes it and its
trust; a hook nexus wrote but did not trust (or trusted with another hash) is listed `untrusted` or
`modified` and never runs."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from setup_run import setup

from nexus.surfaces.runtimes.codex_view import AppServer

VERSION = "0.171.0"
CACHE = Path(os.environ.get("NEXUS_RUNTIMES") or Path.home() / ".cache" / "nexus-runtimes")
CODEX = CACHE / f"codex-{VERSION}" / "node_modules" / ".bin" / "codex"
NEXUS_EVENTS = {"sessionStart", "userPromptSubmit", "preCompact", "stop", "preToolUse"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if not CODEX.exists():
        raise AssertionError(f"Codex {VERSION} is not installed: run scripts/runtimes/codex.sh")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("PATH", f"{CODEX.parent}:{os.environ['PATH']}")
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path / "project")
    return home


def codex_view(cwd: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Codex's hooks for ``cwd`` (``hooks/list``) and its configuration warnings."""
    server = AppServer(str(CODEX), cwd, timeout=60)
    try:
        server.request("initialize", {"clientInfo": {"name": "test", "version": "1"}})
        server.send({"method": "initialized"})
        listed = server.request("hooks/list", {"cwds": [str(cwd)]})
    finally:
        server.close()
    hooks = [h for entry in listed["data"] for h in entry["hooks"]]
    warnings = [str(n["params"].get("summary", "")) for n in server.notes if n["method"] == "configWarning"]
    return hooks, warnings


def nexus_hooks(hooks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {h["eventName"]: h for h in hooks if "nexus-hook" in h.get("command", "")}


def test_codex_runs_the_hooks_nexus_wrote_in_a_project(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = home.parent / "project"
    rc, out, err = setup(env, capsys, "codex", "--agent", "lyra")
    assert rc == 0, err
    hooks, warnings = codex_view(project)
    assert not [w for w in warnings if "until the project is trusted" in w], warnings
    ours = nexus_hooks(hooks)
    assert set(ours) == NEXUS_EVENTS
    for event, hook in ours.items():
        assert hook["source"] == "project" and hook["enabled"], hook
        assert hook["trustStatus"] == "trusted", (event, hook["trustStatus"])
    # the hash nexus computes is the one Codex computes, for every hook it lists
    trust = tomllib.loads((home / ".codex/config.toml").read_text())["hooks"]["state"]
    for hook in hooks:
        assert trust[hook["key"]]["trusted_hash"] == hook["currentHash"]
    cfg = tomllib.loads((project / ".codex/config.toml").read_text())
    assert cfg["features"] == {"hooks": True}  # not the deprecated codex_hooks
    assert cfg["mcp_servers"]["nexus"]["required"] is True
    # what it wrote on the user's behalf, one line each, with the option that leaves it out
    assert "on your behalf: wrote trust for the project" in out and "--skip project-trust" in out
    assert "on your behalf: wrote trust for the hooks nexus wrote" in out and "--skip hook-trust" in out


def test_user_scope_hooks_are_trusted_and_the_users_own_hooks_are_not(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = home / ".codex"
    folder.mkdir()
    mine = {"type": "command", "command": "echo mine", "timeout": 5}
    (folder / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [mine]}]}}))
    (folder / "config.toml").write_text("[features]\ncodex_hooks = true  # an older nexus wrote this\n")
    rc, out, err = setup(env, capsys, "codex", "--agent", "lyra", "--scope", "user")
    assert rc == 0, err
    elsewhere = home.parent / "elsewhere"
    elsewhere.mkdir()
    hooks, _ = codex_view(elsewhere)
    ours = nexus_hooks(hooks)
    assert set(ours) == NEXUS_EVENTS and all(h["trustStatus"] == "trusted" for h in ours.values())
    theirs = [h for h in hooks if h["command"] == "echo mine"]
    assert [h["trustStatus"] for h in theirs] == ["untrusted"]  # nexus trusts only what it wrote
    features = tomllib.loads((folder / "config.toml").read_text())["features"]
    assert features == {"hooks": True}
    assert "project-trust" not in out and "--skip hook-trust" in out


def test_skipping_project_trust_leaves_codex_ignoring_the_project_and_check_says_so(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = home.parent / "project"
    rc, out, err = setup(env, capsys, "codex", "--agent", "lyra", "--skip", "project-trust")
    assert rc == 0 and "left out:       trust for the project" in out, out + err
    assert "projects" not in tomllib.loads((home / ".codex/config.toml").read_text())
    hooks, warnings = codex_view(project)
    assert not nexus_hooks(hooks) and [w for w in warnings if "until the project is trusted" in w]
    rc, out, _ = setup(env, capsys, "--check", "codex")
    assert rc == 1 and "MISSING  Codex does not trust" in out, out


def test_leaving_out_hook_trust_leaves_them_untrusted_and_check_says_so(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = setup(env, capsys, "codex", "--agent", "lyra", "--skip", "hook-trust")
    assert rc == 0 and "left out:       trust for the hooks nexus wrote" in out
    ours = nexus_hooks(codex_view(home.parent / "project")[0])
    assert {h["trustStatus"] for h in ours.values()} == {"untrusted"}
    rc, out, _ = setup(env, capsys, "--check", "codex")  # the agent found from the wiring
    assert rc == 1
    assert "MISSING  Codex will not run nexus's hooks, not trusted" in out
    assert out.strip().splitlines()[-1].startswith("codex would not use nexus: ")
    assert out.strip().splitlines()[-1].endswith("→ nexus setup codex --agent lyra")


def test_check_is_codex_view_and_fails_in_each_broken_state(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = home.parent / "project"
    assert setup(env, capsys, "codex", "--agent", "lyra")[0] == 0
    rc, out, _ = setup(env, capsys, "--check", "codex")
    assert rc == 0, out
    assert "ok       Codex runs nexus's hooks, trusted and enabled" in out
    assert "ok       Codex trusts" in out and "nexus tools before the first turn" in out
    user_config = home / ".codex/config.toml"
    project_config = project / ".codex/config.toml"
    hooks_json = project / ".codex/hooks.json"
    good = {p: p.read_text() for p in (user_config, project_config, hooks_json)}

    def broken(path: Path, old: str, new: str, expect: str) -> None:
        assert old in good[path]
        path.write_text(good[path].replace(old, new))
        rc, out, _ = setup(env, capsys, "--check", "codex")
        assert rc == 1 and expect in out, out
        assert out.splitlines()[-1].endswith("→ nexus setup codex --agent lyra")
        path.write_text(good[path])

    broken(user_config, 'trust_level = "trusted"', 'trust_level = "untrusted"', "Codex does not trust")
    broken(hooks_json, "--retain", "--retain ", "not trusted: Stop (modified)")  # edited by hand
    broken(project_config, "hooks = true", "hooks = false", "Codex does not load nexus's hooks")
    broken(project_config, "required = true", "required = false", "is not required")
    rc, out, _ = setup(env, capsys, "--check", "codex")
    assert rc == 0, out


def test_check_without_codex_or_wiring_is_one_line(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rc, out, err = setup(env, capsys, "--check", "codex")
    assert rc == 1 and "codex would not use nexus: it is not wired in" in out, out + err
    assert setup(env, capsys, "codex", "--agent", "lyra")[0] == 0
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    rc, out, _ = setup(env, capsys, "--check", "codex")
    assert rc == 1 and "Codex not found on PATH" in out


def test_an_unknown_leave_out_is_refused_and_changes_nothing(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = setup(env, capsys, "codex", "--agent", "lyra", "--skip", "everything")
    assert (
        rc != 0 and out == "" and "--skip 'everything': codex can leave out project-trust, hook-trust" in err
    )
    assert len(err.strip().splitlines()) == 1
    assert not (home / ".codex").exists() and not (home.parent / "project/.codex").exists()


GEMINI = CACHE / "gemini-cli-0.61.0" / "node_modules" / ".bin" / "gemini"


def test_gemini_cli_check_fails_in_each_broken_state(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if not GEMINI.exists():
        raise AssertionError("Gemini CLI 0.61.0 is not installed: run scripts/runtimes/gemini-cli.sh")
    monkeypatch.setenv("PATH", f"{GEMINI.parent}:{os.environ['PATH']}")
    rc, out, _ = setup(
        env, capsys, "gemini-cli", "--agent", "lyra", "--skip", "folder-trust", "--skip", "tool-trust"
    )
    assert rc == 0 and "left out:       trust for the folder" in out and "--skip hook-trust" in out
    rc, out, _ = setup(env, capsys, "--check", "gemini-cli")
    assert rc == 1 and "MISSING  Gemini CLI does not trust" in out, out
    assert "MISSING  nexus's tools are not trusted" in out
    assert out.splitlines()[-1].endswith("→ nexus setup gemini-cli --agent lyra")
    assert setup(env, capsys, "gemini-cli", "--agent", "lyra")[0] == 0
    settings = home.parent / "project/.gemini/settings.json"
    data = json.loads(settings.read_text())
    data["hooksConfig"] = {"enabled": False}
    settings.write_text(json.dumps(data))
    rc, out, _ = setup(env, capsys, "--check", "gemini-cli")
    assert rc == 1 and "hooks switched off" in out, out
    del data["hooksConfig"]
    settings.write_text(json.dumps(data, indent=2) + "\n")
    rc, out, _ = setup(env, capsys, "--check", "gemini-cli")
    assert rc == 0 and "ok       Gemini CLI connects to the `nexus` MCP server" in out, out


@pytest.mark.parametrize("runtime", ["codex", "gemini-cli", "opencode"])
@pytest.mark.parametrize("scope", ["project", "user"])
def test_setup_keeps_what_was_there_and_changes_nothing_the_second_time(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str], runtime: str, scope: str
) -> None:
    project = home.parent / "project"
    mine = {
        "codex": (home / ".codex/config.toml", 'model = "o4"  # mine\n'),
        "gemini-cli": (home / ".gemini/settings.json", '{"theme": "Dracula"}'),
        "opencode": (home / ".config/opencode/opencode.json", '{"theme": "tokyonight"}'),
    }[runtime]
    mine[0].parent.mkdir(parents=True)
    mine[0].write_text(mine[1])
    rc, out, err = setup(env, capsys, runtime, "--agent", "lyra", "--scope", scope)
    assert rc == 0, err
    kept = mine[0].read_text()
    assert ("# mine" in kept) if runtime == "codex" else ("theme" in json.loads(kept))
    files = sorted(p for p in (home.parent).rglob("*") if p.is_file() and ".nexus-backup-" not in p.name)
    before = {p: p.read_bytes() for p in files}
    rc, out, _ = setup(env, capsys, runtime, "--agent", "lyra", "--scope", scope)
    assert rc == 0 and all(
        line.startswith(("unchanged ", "on your behalf: kept")) for line in out.splitlines()
    ), out
    assert {p: p.read_bytes() for p in files} == before
    if scope == "project":
        assert (
            project / {"codex": "AGENTS.md", "gemini-cli": "GEMINI.md", "opencode": "AGENTS.md"}[runtime]
        ).exists()


OPENCODE = CACHE / "opencode-1.18.33" / "node_modules" / ".bin" / "opencode"


def test_opencode_check_asks_opencode(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if not OPENCODE.exists():
        raise AssertionError("opencode 1.18.33 is not installed: run scripts/runtimes/opencode.sh")
    monkeypatch.setenv("PATH", f"{OPENCODE.parent}:{os.environ['PATH']}")
    monkeypatch.setenv("OPENCODE_DISABLE_MODELS_FETCH", "1")
    monkeypatch.setenv("OPENCODE_DISABLE_AUTOUPDATE", "1")
    assert setup(env, capsys, "opencode", "--agent", "lyra")[0] == 0
    rc, out, _ = setup(env, capsys, "--check", "opencode")
    assert rc == 0 and "ok       opencode loads the nexus plugin" in out, out
    assert "ok       opencode connects to the `nexus` MCP server" in out
    config = home.parent / "project/opencode.json"
    good = config.read_text()
    data = json.loads(good)
    data["mcp"]["nexus"]["enabled"] = False  # switched off by hand: the file check alone says outdated
    config.write_text(json.dumps(data))
    rc, out, _ = setup(env, capsys, "--check", "opencode")
    assert rc == 1 and "opencode has no enabled `nexus` MCP server here" in out, out
    config.write_text(good)
    (home.parent / "project/.opencode/plugin/nexus.js").unlink()
    rc, out, _ = setup(env, capsys, "--check", "opencode")
    assert rc == 1 and "opencode does not load the nexus plugin" in out, out
    assert out.splitlines()[-1].endswith("→ nexus setup opencode --agent lyra")
