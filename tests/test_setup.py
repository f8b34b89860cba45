"""`nexus setup RUNTIME`: each runtime's own files, merged without clobbering, backed up, idempotent;
the hook commands it writes run from outside the vault and find it."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sysconfig
import tomllib
from pathlib import Path
from typing import Any

import json5
import pytest
import yaml
from conftest import Env

# Imported here, not inside a test using capsys: stdio_client binds sys.stderr as its default errlog
# when first imported, and capsys's stand-in has no file number.
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from setup_run import setup

RUNTIMES = ("claude-code", "codex", "hermes", "openclaw", "cursor")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    # `--check codex` asks the installed Codex (scripts/runtimes/codex.sh)
    codex = Path(os.environ.get("NEXUS_RUNTIMES") or Path.home() / ".cache/nexus-runtimes")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    # nexus on PATH, as installed: Hermes' plugin starts the `nexus` it finds there
    scripts = sysconfig.get_path("scripts")
    monkeypatch.setenv("PATH", f"{codex / 'codex-0.171.0/node_modules/.bin'}:{scripts}:{os.environ['PATH']}")
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path / "project")
    return home


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# What a user already had, for each runtime: (path relative to tmp_path, content).
EXISTING: dict[str, list[tuple[str, str]]] = {
    "claude-code": [
        ("project/.mcp.json", json.dumps({"mcpServers": {"github": {"command": "gh-mcp", "args": []}}})),
        (
            "project/.claude/settings.json",
            json.dumps(
                {
                    "permissions": {"allow": ["Bash(ls:*)"]},
                    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
                }
            ),
        ),
        ("project/CLAUDE.md", "# My project\n\nUse tabs.\n"),
    ],
    "codex": [
        (
            "project/.codex/config.toml",
            '# my settings\nmodel = "o4"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"  # keep me\n',
        ),
        (
            "project/.codex/hooks.json",
            json.dumps(
                {
                    "hooks": {
                        "SessionStart": [
                            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
                        ]
                    }
                }
            ),
        ),
        ("project/AGENTS.md", "# Agents\n\nRun the tests.\n"),
    ],
    "hermes": [
        ("home/.hermes/config.yaml", "model:\n  default: some-model\nmemory:\n  memory_enabled: true\n"),
    ],
    "openclaw": [
        (
            "home/.openclaw/openclaw.json",
            "// my gateway\n{\n  gateway: {port: 18789},\n"
            '  mcp: {servers: {fs: {command: "fs-mcp",},},},\n}\n',
        ),
        ("home/.openclaw/workspace/AGENTS.md", "# Workspace\n\nBe kind.\n"),
    ],
    "cursor": [
        ("project/.cursor/mcp.json", json.dumps({"mcpServers": {"linear": {"url": "http://localhost:9"}}})),
    ],
}


def _unrelated_kept(runtime: str, root: Path) -> None:
    if runtime == "claude-code":
        mcp = json.loads((root / "project/.mcp.json").read_text())
        assert mcp["mcpServers"]["github"] == {"command": "gh-mcp", "args": []}
        assert "nexus" in mcp["mcpServers"]
        st = json.loads((root / "project/.claude/settings.json").read_text())
        assert st["permissions"] == {"allow": ["Bash(ls:*)", "mcp__nexus"]}  # the user's rule kept
        assert st["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
        assert len(st["hooks"]["SessionEnd"]) == 1
        assert (root / "project/CLAUDE.md").read_text().startswith("# My project\n\nUse tabs.\n")
    elif runtime == "codex":
        text = (root / "project/.codex/config.toml").read_text()
        assert "# my settings" in text and "# keep me" in text  # comments survive
        cfg = tomllib.loads(text)
        assert cfg["model"] == "o4" and cfg["mcp_servers"]["docs"] == {"command": "docs-mcp"}
        assert cfg["features"]["hooks"] is True and cfg["mcp_servers"]["nexus"]["args"][0] == "mcp"
        hooks = json.loads((root / "project/.codex/hooks.json").read_text())["hooks"]
        assert hooks["SessionStart"][0]["hooks"][0]["command"] == "echo hi"
        assert len(hooks["SessionStart"]) == 2
        assert (root / "project/AGENTS.md").read_text().startswith("# Agents\n\nRun the tests.\n")
    elif runtime == "hermes":
        cfg = yaml.safe_load((root / "home/.hermes/config.yaml").read_text())
        assert cfg["model"] == {"default": "some-model"}
        assert cfg["memory"] == {"memory_enabled": True, "provider": "nexus"}
    elif runtime == "openclaw":
        cfg = json5.loads((root / "home/.openclaw/openclaw.json").read_text())
        assert cfg["gateway"] == {"port": 18789} and cfg["mcp"]["servers"]["fs"] == {"command": "fs-mcp"}
        assert "nexus" in cfg["mcp"]["servers"] and cfg["hooks"]["internal"]["entries"]["nexus-brief"]
        rules = (root / "home/.openclaw/workspace/AGENTS.md").read_text()
        assert rules.startswith("# Workspace\n\nBe kind.\n")
    else:
        mcp = json.loads((root / "project/.cursor/mcp.json").read_text())
        assert mcp["mcpServers"]["linear"] == {"url": "http://localhost:9"} and "nexus" in mcp["mcpServers"]


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("existing", [False, True], ids=["empty-home", "existing-config"])
def test_setup_merges_backs_up_and_changes_nothing_the_second_time(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str], runtime: str, existing: bool
) -> None:
    root = home.parent
    if existing:
        for rel, content in EXISTING[runtime]:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(content)
    rc, out, err = setup(env, capsys, runtime, "--agent", "ella")
    assert rc == 0, err
    touched = [line.split()[1] for line in out.splitlines() if line.split()[0] in ("created", "updated")]
    assert touched and all(Path(p).is_file() for p in touched)
    if existing:
        _unrelated_kept(runtime, root)
        for rel, content in EXISTING[runtime]:  # each changed file was backed up, byte for byte
            backups = list((root / rel).parent.glob((root / rel).name + ".nexus-backup-*"))
            assert [b.read_text() for b in backups] == [content], rel
    before = snapshot(root / "home") | snapshot(root / "project")
    rc, out, _ = setup(env, capsys, runtime, "--agent", "ella")
    assert rc == 0 and all(
        line.startswith(("unchanged ", "on your behalf: kept")) for line in out.splitlines()
    ), out
    assert snapshot(root / "home") | snapshot(root / "project") == before
    rc, out, _ = setup(env, capsys, "--check", runtime, "--agent", "ella")
    if runtime == "openclaw":  # every file is wired, but no OpenClaw Gateway runs here: --check says so
        assert rc == 1 and "MISSING" in out and "would not use nexus" in out, out
    else:
        assert rc == 0 and f"{runtime} uses nexus" in out, out


def test_dry_run_prints_the_diff_and_check_names_what_is_missing(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = setup(env, capsys, "codex", "--agent", "ella", "--dry-run")
    assert rc == 0 and "+[mcp_servers.nexus]" in out and "+++ " in out
    assert not (home.parent / "project/.codex").exists()
    rc, out, _ = setup(env, capsys, "--check", "codex", "--agent", "ella")
    assert rc == 1 and out.count("MISSING") >= 3 and "→ nexus setup codex --agent ella" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (("bogus", "--agent", "ella"), "unknown runtime 'bogus'"),
        (("codex", "--agent", "nobody"), "unknown agent 'nobody'"),
        (("codex", "--agent", "ella", "--scope", "galaxy"), "unknown scope 'galaxy'"),
        (("claude-code", "--agent", "ella"), ".mcp.json is not valid JSON"),
        (("codex", "--agent", "ella"), "config.toml is not valid TOML"),
        (("hermes", "--agent", "ella"), "config.yaml is not valid YAML"),
        (("cursor", "--agent", "ella"), "`mcpServers` is a list, not a table of settings"),
        (("openclaw", "--agent", "ella"), "`mcp` is a str, not a table of settings"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    root = home.parent
    for rel, bad in (
        ("project/.mcp.json", "{not json"),
        ("project/.codex/config.toml", "[[[nope"),
        ("home/.hermes/config.yaml", "a: [unclosed"),
        ("project/.cursor/mcp.json", '{"mcpServers": []}'),
        ("home/.openclaw/openclaw.json", "{mcp: 'stdio'}"),
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(bad)
    before = snapshot(root)
    rc, out, err = setup(env, capsys, *args)
    assert rc != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err, err
    assert snapshot(root) == before


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment a runtime gives its hooks: no NEXUS_* (the command line carries them), but the
    suite's switch of the warm hook server (tests/conftest.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_") or k == "NEXUS_HOOK_SERVER"}
    env.update(extra)
    return env


@pytest.mark.parametrize("runtime", ["claude-code", "codex"])
def test_the_hook_commands_it_wrote_run_and_find_the_vault(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str], runtime: str
) -> None:
    entry = env.append("lyra", "schema migrated", channel="db").located.entry.id
    assert setup(env, capsys, runtime, "--agent", "ella")[0] == 0
    wrote = ".claude/settings.json" if runtime == "claude-code" else ".codex/hooks.json"
    path = home.parent / "project" / wrote
    hooks = json.loads(path.read_text())["hooks"]
    outside = home.parent / "elsewhere"
    outside.mkdir()
    start = hooks["SessionStart"][0]["hooks"][0]["command"]
    event = {"session_id": "s", "cwd": str(outside), "hook_event_name": "SessionStart", "source": "startup"}
    proc = subprocess.run(
        start,
        shell=True,
        input=json.dumps(event),
        capture_output=True,
        text=True,
        cwd=outside,
        env=_clean_env(),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "nexus brief for ella" in context and entry in context
    for name in hooks:  # every event's command parses and runs
        command = hooks[name][-1]["hooks"][0]["command"]
        assert shlex.split(command)[1] in (
            "session-start",
            "prompt",
            "pre-compact",
            "stop",
            "session-end",
            "pre-tool",
        )
        run = subprocess.run(
            command,
            shell=True,
            input=json.dumps({**event, "hook_event_name": name}),
            capture_output=True,
            text=True,
            cwd=outside,
            env=_clean_env(),
            timeout=60,
        )
        assert run.returncode == 0, (name, run)
        assert "could not" not in run.stdout and "failed" not in run.stdout, (name, run)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_openclaw_bootstrap_hook_injects_the_brief(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = env.append("lyra", "gateway restarted", channel="ops").located.entry.id
    assert setup(env, capsys, "openclaw", "--agent", "ella")[0] == 0
    handler = home / ".openclaw/hooks/nexus-brief/handler.ts"
    runnable = home.parent / "handler.mjs"  # plain JavaScript inside: node runs it as a module
    runnable.write_text(handler.read_text())
    driver = (
        "const { default: handler } = await import(process.argv[1]);\n"
        "const event = { type: 'agent', action: 'bootstrap', sessionKey: 'k', messages: [],\n"
        "  context: { workspaceDir: '/tmp/ws', sessionId: 'oc-1', bootstrapFiles: [] } };\n"
        "await handler(event);\nconsole.log(JSON.stringify(event.context.bootstrapFiles));\n"
    )
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", driver, runnable.as_uri()],
        capture_output=True,
        text=True,
        env=_clean_env(),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    files: list[dict[str, Any]] = json.loads(proc.stdout)
    assert [f["name"] for f in files] == ["NEXUS.md"] and files[0]["missing"] is False
    assert "nexus brief for ella" in files[0]["content"] and entry in files[0]["content"]


def test_the_mcp_entry_it_wrote_starts_a_server_that_finds_the_vault(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cursor's .mcp.json entry (the same shape Claude Code reads), spawned as a stdio client would."""
    assert setup(env, capsys, "cursor", "--agent", "ella")[0] == 0
    server = json.loads((home.parent / "project/.cursor/mcp.json").read_text())["mcpServers"]["nexus"]
    params = StdioServerParameters(
        command=server["command"], args=server["args"], env=server["env"], cwd=str(home)
    )

    async def go() -> str:
        with open(home / "server.err", "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                res: Any = await session.call_tool("brief", {})
                return str(res.content[0].text)

    assert "nexus brief for ella" in asyncio.run(go())


def test_the_claude_code_plugin_folder_runs_from_its_environment(env: Env, tmp_path: Path) -> None:
    """agents/claude-code/plugin/: manifest, hooks/hooks.json and .mcp.json; the hooks take the agent,
    vault and keys from the environment Claude Code gives them (its settings' `env`)."""

    plugin = Path(__file__).resolve().parent.parent / "agents" / "claude-code" / "plugin"
    manifest = json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "nexus"
    mcp = json.loads((plugin / ".mcp.json").read_text())["mcpServers"]["nexus"]
    assert mcp["args"] == ["mcp", "--agent", "${NEXUS_AGENT}"]
    assert mcp["env"]["NEXUS_VAULT"] == "${NEXUS_VAULT}"
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd", "PreToolUse"}
    entry = env.append("lyra", "plugin works", channel="ops").located.entry.id
    run_env = _clean_env(NEXUS_AGENT="ella", NEXUS_VAULT=str(env.vault.root), NEXUS_HOME=str(env.keys_home))
    run_env["PATH"] = sysconfig.get_path("scripts") + os.pathsep + run_env.get("PATH", "")
    command = hooks["SessionStart"][0]["hooks"][0]["command"]
    proc = subprocess.run(
        command,
        shell=True,
        input=json.dumps({"session_id": "p", "source": "startup"}),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=run_env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert entry in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


# ------------------------------------------------------------ what Claude Code needs to really use nexus


def test_claude_code_gets_the_allow_rule_the_enabled_server_and_trust_each_said_and_skippable(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the allow rule every nexus tool call is refused (`permission_denials`), without the
    enabled server an interactive session starts without nexus, without trust Claude Code drops the
    project's rules. Setup writes each on the user's behalf, says so in one line, and `--skip` leaves
    one out."""
    project = home.parent / "project"
    rc, out, err = setup(env, capsys, "claude-code", "--agent", "ella")
    assert rc == 0, err
    settings = json.loads((project / ".claude/settings.json").read_text())
    assert settings["permissions"]["allow"] == ["mcp__nexus"]
    assert settings["enabledMcpjsonServers"] == ["nexus"]
    trust = json.loads((home / ".claude.json").read_text())["projects"][str(project.resolve())]
    assert trust == {"hasTrustDialogAccepted": True}
    behalf = [line for line in out.splitlines() if line.startswith("on your behalf: wrote")]
    assert [line.rsplit("--skip ", 1)[1].rstrip(")") for line in behalf] == ["allow", "enable", "trust"], out

    (project / ".claude/settings.json").unlink()
    (home / ".claude.json").unlink()
    rc, out, err = setup(env, capsys, "claude-code", "--agent", "ella", "--skip", "trust", "--skip", "enable")
    assert rc == 0, err
    settings = json.loads((project / ".claude/settings.json").read_text())
    assert "enabledMcpjsonServers" not in settings and settings["permissions"]["allow"] == ["mcp__nexus"]
    assert not (home / ".claude.json").exists()
    assert sum(line.startswith("left out:") for line in out.splitlines()) == 2, out
    # ...and --check says the runtime would not use nexus, naming the piece and the command
    rc, out, _ = setup(env, capsys, "--check", "claude-code")
    assert rc == 1 and "MISSING  project not trusted  → nexus setup claude-code --agent ella" in out, out
    assert "claude-code would not use nexus" in out.splitlines()[-1]

    rc, _, err = setup(env, capsys, "claude-code", "--agent", "ella", "--skip", "everything")
    assert rc != 0 and "can leave out allow, enable, trust" in err and len(err.strip().splitlines()) == 1


def test_user_scope_needs_no_trust_and_allows_in_the_user_settings(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = setup(env, capsys, "claude-code", "--agent", "ella", "--scope", "user")
    assert rc == 0, err
    assert json.loads((home / ".claude/settings.json").read_text())["permissions"]["allow"] == ["mcp__nexus"]
    claude_json = json.loads((home / ".claude.json").read_text())
    assert "nexus" in claude_json["mcpServers"] and "projects" not in claude_json
    rc, out, _ = setup(env, capsys, "--check", "claude-code", "--scope", "user")
    assert rc == 0 and "claude-code uses nexus" in out, out


def _settings(project: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((project / ".claude/settings.json").read_text())
    return data


@pytest.mark.parametrize(
    "breakage, missing",
    [
        ("no allow rule", "nexus tools not allowed"),
        ("denied", "nexus tools denied in"),
        ("server disabled", "project server nexus disabled in"),
        ("hooks disabled", "hooks disabled (disableAllHooks in"),
        ("untrusted", "project not trusted"),
        ("server broken", "the MCP server answers within 2 s"),
        ("hook removed", "hooks: SessionStart, UserPromptSubmit"),
        ("key gone", "ella's private key in"),
    ],
)
def test_check_exits_non_zero_in_each_state_where_claude_code_would_not_use_nexus(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str], breakage: str, missing: str
) -> None:
    """`--check RUNTIME` finds the agent from the wiring, and fails (naming the piece and the fix)
    in each state the end-to-end suite can produce; zero only when everything holds."""
    project = home.parent / "project"
    assert setup(env, capsys, "claude-code", "--agent", "ella")[0] == 0
    rc, out, _ = setup(env, capsys, "--check", "claude-code")
    assert rc == 0 and "the MCP server answered in" in out, out
    settings = _settings(project)
    if breakage == "no allow rule":
        settings["permissions"]["allow"] = []
    elif breakage == "denied":
        (project / ".claude/settings.local.json").write_text(
            json.dumps({"permissions": {"deny": ["mcp__nexus"]}})
        )
    elif breakage == "server disabled":
        (project / ".claude/settings.local.json").write_text(
            json.dumps({"disabledMcpjsonServers": ["nexus"]})
        )
    elif breakage == "hooks disabled":
        (home / ".claude").mkdir(exist_ok=True)
        (home / ".claude/settings.json").write_text(json.dumps({"disableAllHooks": True}))
    elif breakage == "untrusted":
        (home / ".claude.json").write_text("{}")
    elif breakage == "server broken":
        mcp = json.loads((project / ".mcp.json").read_text())
        mcp["mcpServers"]["nexus"]["env"]["NEXUS_VAULT"] = str(home / "nowhere")
        (project / ".mcp.json").write_text(json.dumps(mcp))
    elif breakage == "hook removed":
        del settings["hooks"]["UserPromptSubmit"]
    elif breakage == "key gone":
        for pem in env.keys_home.rglob("ella.pem"):
            pem.rename(pem.with_suffix(".moved"))
    (project / ".claude/settings.json").write_text(json.dumps(settings))
    rc, out, _ = setup(env, capsys, "--check", "claude-code")
    assert rc == 1, out
    bad = [line for line in out.splitlines() if line.startswith("MISSING")]
    assert any(missing in line for line in bad), out
    assert "would not use nexus" in out.splitlines()[-1]


def test_check_without_a_wiring_says_which_command_wires_it(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = setup(env, capsys, "--check", "claude-code")
    assert rc == 1 and "claude-code would not use nexus: it is not wired in" in out, out
    assert out.rstrip().endswith("→ nexus setup claude-code --agent NAME"), out


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "setup"])
def test_setup_refuses_a_keys_folder_without_the_agents_key_naming_where_it_is(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, dry: bool
) -> None:
    """The wiring passes the keys folder to every hook and server: one without the agent's key makes
    every append fail later. Setup refuses, names the folder that has it and the flag, writes nothing."""
    monkeypatch.setenv("NEXUS_HOME", str(home / "empty-keys"))
    before = snapshot(home) | snapshot(home.parent / "project")
    rc, out, err = setup(env, capsys, "claude-code", "--agent", "ella", *(["--dry-run"] if dry else []))
    assert rc != 0 and out == "", out
    assert f"no private key for 'ella' in {home / 'empty-keys'}" in err
    assert (
        f"it is in {env.keys_home}: add `--keys-home {env.keys_home}`" in err and len(err.splitlines()) == 1
    )
    assert (snapshot(home) | snapshot(home.parent / "project")) == before
    rc, out, err = setup(
        env, capsys, "claude-code", "--agent", "ella", "--keys-home", str(env.keys_home), "--dry-run"
    )
    assert rc == 0, err
    assert out.splitlines()[-1] == "dry run: 4 files would change; nothing written"
    assert (snapshot(home) | snapshot(home.parent / "project")) == before


def test_setup_prepares_the_agents_derived_state_and_moves_no_cursor(
    env: Env, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``nexus setup`` builds the agent's brief once, as a peek: the caches a session's first hook
    reads are in ``.nexus/`` before any session, and the agent still has its unread entries."""
    env.append("lyra", "the lexer is done")
    cache = env.vault.root / ".nexus" / "cache"
    wanted = ("roster.json", "decisions.json", "memory-snapshot-ella.json")
    for name in wanted:
        (cache / name).unlink(missing_ok=True)
    rc, _, err = setup(env, capsys, "claude-code", "--agent", "ella")
    assert rc == 0, err
    assert all((cache / name).is_file() for name in wanted)
    assert "the lexer is done" in env.run("brief", "--agent", "ella").stdout
