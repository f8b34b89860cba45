"""Claims: atomic under the log lock (8 real processes racing), refusals in one line, bad input
refused with nothing written, expiry and release, a person's release, the patterns, the default MCP
tool set's size, Claims.md, the brief and the handoff."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, Env

from nexus.keys import identity
from nexus.ledger import log
from nexus.records import Located
from nexus.storage import entries
from nexus.team import claimlog
from nexus.team.claims import CHANNEL, event_of, fold, iso_ms, matches, overlap


def _project(tmp_path: Path, name: str = "proj") -> Path:
    root = tmp_path / name
    (root / "src" / "parser").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _claim_entries(env: Env) -> list[Located]:
    return [loc for loc in log.iter_entries(env.vault) if loc.entry.channel == CHANNEL]


def _log_bytes(env: Env) -> bytes:
    return b"".join(path.read_bytes() for _, path in log.segment_files(env.vault))


def test_patterns_match_and_overlap() -> None:
    assert matches("src/parser/**", "src/parser/a/b.py")
    assert matches("src/parser", "src/parser/lexer.py")  # a folder covers what is under it
    assert matches("src/*.py", "src/a.py") and not matches("src/*.py", "src/a/b.py")
    assert matches("**/*.md", "docs/x/y.md") and matches("**", "anything/at/all")
    assert not matches("src/parser/**", "src/parse.py")
    assert matches("task:parser", "task:parser") and not matches("task:parser", "task:lexer")
    assert overlap("src/parser/**", "src/parser/lexer.py")
    assert overlap("src", "src/parser/**") and overlap("src/*.py", "src/a.py")
    assert not overlap("src/*.py", "src/*.md") and not overlap("src/a.py", "docs/a.py")
    assert not overlap("task:a", "src/a") and overlap("task:a", "task:a")


def test_claim_refuse_release_through_the_cli(env: Env, tmp_path: Path) -> None:
    root = _project(tmp_path)
    got = env.run(
        "claim",
        "src/parser/**",
        "--agent",
        "ella",
        "--ttl",
        "45m",
        "--reason",
        "lexer rewrite",
        "--project",
        str(root),
        "--json",
    ).json()
    before = _log_bytes(env)
    refused = env.run(
        "claim",
        "src/parser/lexer.py",
        "--agent",
        "lyra",
        "--reason",
        "fix a bug",
        "--project",
        str(root),
        check=False,
    )
    assert refused.returncode == 3
    line = refused.stderr.strip()
    assert "\n" not in line and "held by ella" in line and "lexer rewrite" in line and got["id"] in line
    assert got["expires"][11:16] in line  # the expiry
    assert _log_bytes(env) == before  # nothing written
    # shared claims do not exclude each other; they do exclude an exclusive one
    env.run(
        "claim", "docs/**", "--agent", "ella", "--mode", "shared", "--reason", "r", "--project", str(root)
    )
    env.run(
        "claim", "docs/a.md", "--agent", "lyra", "--mode", "shared", "--reason", "r", "--project", str(root)
    )
    assert (
        env.run(
            "claim", "docs/a.md", "--agent", "lyra", "--reason", "r", "--project", str(root), check=False
        ).returncode
        == 3
    )
    listed = env.run("claims", "--json").json()["claims"]
    assert [c["agent"] for c in listed] == ["ella", "ella", "lyra"]
    # lyra may not release ella's claim; ella may; then lyra takes the path
    assert env.run("claim", "release", got["id"], "--agent", "lyra", check=False).returncode != 0
    env.run("claim", "release", got["id"], "--agent", "ella")
    env.run("claim", "src/parser/lexer.py", "--agent", "lyra", "--reason", "fix", "--project", str(root))
    note = (env.vault.root / "Claims.md").read_text()
    assert "**lyra** holds `src/parser/lexer.py`" in note and "[[log/" in note and "lexer rewrite" not in note


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["../outside.py"], "leaves the project"),
        (["src/../../x"], "leaves the project"),
        (["/etc/passwd"], "outside the project"),
        ([""], "empty pattern"),
        (["src/a.py", "--ttl", "0"], "above zero"),
        (["src/a.py", "--ttl=-5m"], "positive duration"),
        (["src/a.py", "--ttl", "25h"], "at most 24h"),
        (["src/a.py", "--ttl", "soon"], "positive duration"),
        (["src/a.py", "--reason", " "], "reason is empty"),
        (["task:Bad Name"], "task name"),
    ],
)
def test_bad_claims_get_one_line_and_change_nothing(
    env: Env, tmp_path: Path, args: list[str], message: str
) -> None:
    root = _project(tmp_path)
    before = _log_bytes(env)
    argv = ["claim", *args, "--agent", "ella", "--project", str(root)]
    if "--reason" not in args:
        argv += ["--reason", "r"]
    out = env.run(*argv, check=False)
    assert out.returncode != 0 and message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert _log_bytes(env) == before and not (env.vault.root / "Claims.md").exists()


def test_bad_releases_and_renewals_change_nothing(env: Env, tmp_path: Path) -> None:
    root = _project(tmp_path)
    got = env.run(
        "claim", "task:parser", "--agent", "ella", "--reason", "r", "--project", str(root), "--json"
    )
    cid = got.json()["id"]
    before = _log_bytes(env)
    for argv, message in (
        (["claim", "release", "01KB7Q2V4J6M8P0R2T4W6Y8A0C", "--agent", "ella"], "no claim with id"),
        (["claim", "release", cid, "--agent", "lyra"], "only its holder or a person"),
        (["claim", "renew", cid, "--agent", "lyra"], "only its holder renews"),
        (["claim", "renew", cid, "--agent", "ella", "--ttl", "0"], "above zero"),
    ):
        out = env.run(*argv, check=False)
        assert out.returncode != 0 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert _log_bytes(env) == before
    renewed = env.run("claim", "renew", cid, "--agent", "ella", "--ttl", "2h", "--json").json()
    assert env.run("claims", "--json").json()["claims"][0]["expires"] == renewed["expires"]
    env.run("claim", "release", cid, "--agent", "ella")
    out = env.run("claim", "release", cid, "--agent", "ella", check=False)
    assert out.returncode != 0 and "is released" in out.stderr


def test_a_pattern_with_spaces_round_trips(env: Env, tmp_path: Path) -> None:
    root = _project(tmp_path)
    env.run("claim", "docs/my notes/**", "task:x", "--agent", "ella", "--reason", "r", "--project", str(root))
    (held,) = claimlog.refresh(env.vault).claims().values()
    assert held.patterns == ("docs/my notes/**", "task:x")
    out = env.run(
        "claims", "check", "--agent", "lyra", "--project", str(root), "docs/my notes/a.md", check=False
    )
    assert out.returncode == 1 and "held by ella" in out.stdout


def test_a_person_releases_any_claim_recorded_as_theirs(env: Env, tmp_path: Path) -> None:
    root = _project(tmp_path)
    cid = env.run(
        "claim", "src/**", "--agent", "ella", "--reason", "r", "--project", str(root), "--json"
    ).json()["id"]
    env.run("claim", "release", cid, "--agent", "sam")
    release = _claim_entries(env)[-1].entry
    assert release.type == "release" and release.agent == "sam" and "ella's" in release.summary
    claims = claimlog.refresh(env.vault).claims()
    assert claims[cid].status == "released" and claims[cid].released_by == "sam"
    assert env.run("claims", "--json").json() == {"claims": []}
    (ended,) = env.run("claims", "--all", "--json").json()["claims"]
    assert (ended["id"], ended["status"], ended["released_by"]) == (cid, "released", "sam")
    env.run("claim", "src/a.py", "--agent", "lyra", "--reason", "mine now", "--project", str(root))


def test_an_expired_claim_frees_itself(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In process: refused while it holds, taken once it expired, with nothing released. The clock is
    moved past the expiry rather than waited for (a 2 s claim under load could expire before the
    refusal was even tried)."""
    from nexus.errors import ClaimHeldError
    from nexus.operations import claims
    from nexus.operations.spec import Call
    from nexus.settings import DEFAULTS

    root = _project(tmp_path)
    ella, lyra = (Call(env.vault, agent=a, settings=DEFAULTS, keys=env.keys_home) for a in ("ella", "lyra"))
    got = claims.claim(ella, patterns=["src/a.py"], reason="short", ttl="60s", project=str(root))
    expires = entries.decode_id_ms(got.data["id"]) / 1000 + 60
    with pytest.raises(ClaimHeldError, match="held by ella"):
        claims.claim(lyra, patterns=["src/a.py"], reason="r", project=str(root))
    assert time.time() < expires  # (the refusal above came while it held)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 61)  # a minute on: the claim has expired
    claims.claim(lyra, patterns=["src/a.py"], reason="r", project=str(root))
    statuses = sorted(c.status for c in claimlog.refresh(env.vault).claims().values())
    assert statuses == ["active", "expired"]


def test_claims_md_is_written_again_by_the_watcher_once_a_claim_it_lists_expires(
    env: Env, tmp_path: Path
) -> None:
    """Claims.md says when each claim it lists expires (true when read later); reads (`nexus claims`,
    the brief) never write it; a watcher rescan writes it again once a listed claim has expired, under
    the log lock, and leaves it alone before that and after."""
    from nexus.operations import claims
    from nexus.operations.spec import Call
    from nexus.settings import DEFAULTS

    root = _project(tmp_path)
    ella = Call(env.vault, agent="ella", settings=DEFAULTS, keys=env.keys_home)
    got = claims.claim(ella, patterns=["src/a.py"], reason="short", ttl="2s", project=str(root))
    note = env.vault.root / claimlog.NOTE
    written = note.read_bytes()
    expires = got.data["expires"]
    assert f"`src/a.py` in proj (exclusive) until {expires[:16].replace('T', ' ')}Z".encode() in written
    expires_ms = iso_ms(expires)
    assert not claimlog.note_due(env.vault, expires_ms - 1)  # (the clock as given, not as it runs)
    assert claimlog.note_due(env.vault, expires_ms)
    assert not claimlog.expire_note(env.vault, expires_ms - 1) and note.read_bytes() == written

    time.sleep(max(0.0, expires_ms / 1000 - time.time()) + 0.2)
    stamp = note.stat().st_mtime_ns
    assert env.run("claims", "--json").json()["claims"] == []  # what holds now: nothing
    assert "ella holds" not in env.run("brief", "--agent", "lyra").stdout  # (its claims section)
    assert note.read_bytes() == written and note.stat().st_mtime_ns == stamp  # a read never writes

    watched = env.run("watch", "--once", "--json", process=True)
    events = [json.loads(line) for line in watched.stdout.splitlines() if line.startswith("{")]
    assert {"event": "claims", "file": "Claims.md"} in [
        {k: v for k, v in e.items() if k != "at"} for e in events
    ], watched.stdout
    again = note.read_text()
    assert "_Nobody holds anything._" in again and "src/a.py" not in again
    stamp = note.stat().st_mtime_ns
    env.run("watch", "--once", process=True)  # nothing expired since: left alone
    assert note.stat().st_mtime_ns == stamp and note.read_text() == again


def test_tasks_and_the_free_list(env: Env, tmp_path: Path) -> None:
    root = _project(tmp_path)
    a = env.run("claim", "task:parser", "--agent", "ella", "--reason", "r", "--project", str(root), "--json")
    env.run("claim", "task:lexer", "--agent", "ella", "--reason", "r", "--project", str(root))
    out = env.run(
        "claim", "task:parser", "--agent", "lyra", "--reason", "r", "--project", str(tmp_path), check=False
    )
    assert out.returncode == 3 and "held by ella" in out.stderr  # a task is one across projects
    assert env.run("claims", "--free", "task:*", "--json").json() == {"free": []}
    env.run("claim", "release", a.json()["id"], "--agent", "ella")
    assert env.run("claims", "--free", "task:*", "--json").json() == {"free": ["task:parser"]}
    assert env.run("claims", "--free", "src/*", check=False).returncode == 2
    elsewhere = _project(tmp_path, "elsewhere")
    env.run("claim", "src/x.py", "--agent", "lyra", "--reason", "r", "--project", str(elsewhere))
    here = env.run("claims", "--project", str(root), "--json").json()["claims"]
    assert [c["patterns"] for c in here] == [["task:lexer"]]  # tasks everywhere; elsewhere's path not
    assert len(env.run("claims", "--json").json()["claims"]) == 2


def test_only_verified_entries_claim(env: Env) -> None:
    """A claim entry signed by no one's key holds nothing (only the log's verified entries count)."""
    env.append(
        "ella",
        "claim `x` (exclusive)",
        channel=CHANNEL,
        type="claim",
        body="mode: exclusive\nproject: proj\npatterns: `x`\nexpires: 2099-01-01T00:00:00Z\nreason: r",
    )
    seg = log.segment_files(env.vault)[-1][1]
    seg.write_bytes(seg.read_bytes().replace(b"reason: r", b"reason: R"))  # edited after signing
    assert claimlog.refresh(env.vault).claims() == {}
    entry = list(log.iter_entries(env.vault))[-1].entry
    assert event_of(entry, "log/x.md") is not None  # (it reads as a claim; it just does not verify)


def test_the_fold_is_the_same_in_any_order() -> None:
    """The merge rule: of two overlapping claims written apart, the one with the smaller id holds."""
    from nexus.team.claims import Event

    a = Event(
        "01M96DX84KSJMJX3T9X8XCK73B",
        "claim",
        "ella",
        "log/2026-12.md",
        None,
        "p",
        ("src/**",),
        "exclusive",
        "2099-01-01T00:00:00Z",
        "a",
    )
    b = Event(
        "01M96DXQW0TN1RCMNM31J3RHV4",
        "claim",
        "lyra",
        "log/2026-12.md",
        None,
        "p",
        ("src/a.py",),
        "exclusive",
        "2099-01-01T00:00:00Z",
        "b",
    )
    now = int(time.time() * 1000)
    for events in ([a, b], [b, a]):
        claims = fold(events, now)
        assert claims[a.id].status == "active"
        assert claims[b.id].status == "lost" and claims[b.id].lost_to == a.id


@pytest.mark.slow
def test_eight_processes_race_for_one_path(env: Env, tmp_path: Path) -> None:
    """8 processes x 200 rounds: exactly one holder at a time, every refusal names the real holder at
    that moment, and every claim and release a process was told of is in the log."""
    root = _project(tmp_path)
    agents = [f"racer-{i}" for i in range(8)]
    for name in agents:
        identity.add(env.vault, env.keys_home, name)
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-W",
                "error",
                str(ROOT / "tests" / "claim_worker.py"),
                str(env.vault.root),
                str(env.keys_home),
                name,
                "200",
                str(root),
                str(go),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in agents
    ]
    go.touch()
    reports = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    lines = [json.loads(x) for out in reports for x in out.splitlines()]
    ok = {x["ok"]: x for x in lines if "ok" in x}
    released = {x["released"] for x in lines if "released" in x}
    refused = [x for x in lines if "refused" in x]
    assert len(ok) + len(refused) == 8 * 200 and ok and refused
    # the log, in order: claim, its release, claim, its release... never two holders at once
    found = _claim_entries(env)
    claims = [x.entry for x in found if x.entry.type == "claim"]
    releases = [x.entry for x in found if x.entry.type == "release"]
    assert {e.id for e in claims} == set(ok) and len(releases) == len(released) == len(ok)  # nothing lost
    holder = None
    released_at: dict[str, int] = {}
    claimed_at: dict[str, tuple[str, int]] = {}
    for loc in found:
        e = loc.entry
        ms = entries.decode_id_ms(e.id)
        if e.type == "claim":
            assert holder is None, f"{e.id} claimed while {holder} held it"
            holder = e.id
            claimed_at[e.id] = (e.agent, ms)
        else:
            assert holder is not None and f"claim: {holder}" == e.body
            released_at[holder] = ms
            holder = None
    for x in refused:
        named = re.search(r"held by (\S+) \(exclusive, claim (\w+)\)", x["refused"])
        assert named, x["refused"]
        agent, cid = named.groups()
        assert claimed_at[cid][0] == agent  # the real holder of that claim
        # ... and it held it while this refusal was made: claimed before the attempt ended, released
        # after the attempt began
        assert claimed_at[cid][1] <= x["t1"] and released_at[cid] >= x["t0"] - 1
    assert claimlog.refresh(env.vault).claims()[max(ok)].status == "released"
    assert env.run("verify").returncode == 0


def test_the_default_tool_set_stays_within_9000_characters(env: Env) -> None:
    from mcp import Client

    from nexus import workspace
    from nexus.surfaces import mcp_server

    async def go() -> list[object]:
        ws = workspace.for_vault(env.vault, {}, keys=env.keys_home)
        async with Client(mcp_server.build_server(ws, "ella", tools="agent")) as client:
            return list((await client.list_tools()).tools)

    import asyncio

    tools = asyncio.run(go())
    names = {t.name for t in tools}  # type: ignore[attr-defined]
    assert {"claim", "release"} <= names
    size = len(
        json.dumps(
            [t.model_dump(mode="json", exclude_none=True, by_alias=True) for t in tools],  # type: ignore[attr-defined]
            ensure_ascii=False,
        )
    )
    assert size <= 9000, size


def _pre_tool(env: Env, agent: str, event: object, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            "-m",
            "nexus.surfaces.hooks",
            "pre-tool",
            "--agent",
            agent,
            "--vault",
            str(env.vault.root),
            "--home",
            str(env.keys_home),
            *extra,
        ],
        input=event if isinstance(event, str) else json.dumps(event),
        capture_output=True,
        text=True,
        env=env.environ,
        timeout=60,
    )


def test_the_pre_tool_hook_denies_an_edit_of_what_another_holds(env: Env, tmp_path: Path) -> None:
    """Claude Code's PreToolUse: the documented deny (holder, reason, expiry, how to ask) for a path
    another agent holds exclusively; nothing at all for the holder, a free path, a shared claim, or a
    tool that edits nothing; never exit 2, whatever comes in."""
    root = _project(tmp_path)
    cid = env.run(
        "claim",
        "src/parser/**",
        "--agent",
        "ella",
        "--reason",
        "lexer rewrite",
        "--project",
        str(root),
        "--json",
    ).json()["id"]
    env.run(
        "claim", "docs/**", "--agent", "ella", "--mode", "shared", "--reason", "r", "--project", str(root)
    )

    def event(tool: str, path: Path | str, key: str = "file_path") -> dict[str, object]:
        return {
            "session_id": "s",
            "cwd": str(root),
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": {key: str(path), "content": "x"},
        }

    for tool, key in (
        ("Edit", "file_path"),
        ("Write", "file_path"),
        ("MultiEdit", "file_path"),
        ("NotebookEdit", "notebook_path"),
    ):
        out = _pre_tool(env, "lyra", event(tool, root / "src" / "parser" / "lexer.py", key))
        assert out.returncode == 0 and out.stderr == ""
        decision = json.loads(out.stdout)["hookSpecificOutput"]
        assert decision["hookEventName"] == "PreToolUse" and decision["permissionDecision"] == "deny"
        reason = decision["permissionDecisionReason"]
        assert (
            "held by ella" in reason and "lexer rewrite" in reason and cid in reason and "ask ella" in reason
        )
    relative = _pre_tool(env, "lyra", event("Edit", "src/parser/x.py"))  # relative to the session's cwd
    assert json.loads(relative.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    for agent, ev in (
        ("ella", event("Edit", root / "src" / "parser" / "lexer.py")),  # the holder
        ("lyra", event("Edit", root / "src" / "main.py")),  # nobody holds it
        ("lyra", event("Write", root / "docs" / "a.md")),  # shared
        ("lyra", event("Bash", root / "src" / "parser" / "lexer.py")),  # not an edit tool
        ("lyra", event("Edit", tmp_path / "elsewhere" / "src" / "parser" / "x.py")),  # another project
        ("lyra", "not json"),
        ("lyra", {"tool_name": "Edit", "tool_input": "a string"}),
        ("lyra", {"tool_name": "Edit", "tool_input": {"file_path": 7}}),
    ):
        out = _pre_tool(env, agent, ev)
        assert (out.returncode, out.stdout, out.stderr) == (0, "", ""), (agent, ev, out)
    assert _pre_tool(env, "lyra", event("Edit", root), "--bogus").returncode == 0  # a usage error: 0
    env.run("claim", "release", cid, "--agent", "ella")
    after = _pre_tool(env, "lyra", event("Edit", root / "src" / "parser" / "lexer.py"))
    assert (after.returncode, after.stdout) == (0, "")


def test_the_pre_tool_hook_denies_a_codex_patch_touching_what_another_holds(env: Env, tmp_path: Path) -> None:
    """Codex's PreToolUse for `apply_patch`: the patch (``tool_input.command``) names each file it adds,
    updates, deletes or moves to, relative to the session's folder; one of them held by another agent
    denies the whole patch; a patch of free files, or anything not a patch, gets nothing."""
    root = _project(tmp_path)
    cid = env.run(
        "claim", "src/parser/**", "--agent", "ella", "--reason", "lexer rewrite", "--project", str(root),
        "--json",
    ).json()["id"]  # fmt: skip

    def patch(*headers: str) -> dict[str, object]:
        body = "".join(f"*** {h}\n@@\n-a\n+b\n" for h in headers)
        command = f"*** Begin Patch\n{body}*** End Patch\n"
        return {
            "session_id": "s",
            "cwd": str(root),
            "tool_name": "apply_patch",
            "tool_input": {"command": command},
        }

    for headers in (
        ("Update File: src/parser/lexer.py",),
        ("Update File: src/main.py", "Add File: src/parser/new.py"),
        ("Delete File: src/parser/old.py",),
        ("Update File: src/main.py", "Move to: src/parser/main.py"),
        (f"Update File: {root / 'src' / 'parser' / 'lexer.py'}",),  # an absolute path
    ):
        out = _pre_tool(env, "lyra", patch(*headers))
        decision = json.loads(out.stdout)["hookSpecificOutput"]
        assert decision["permissionDecision"] == "deny", headers
        assert (
            "held by ella" in decision["permissionDecisionReason"]
            and cid in decision["permissionDecisionReason"]
        )
    for agent, ev in (
        ("ella", patch("Update File: src/parser/lexer.py")),  # the holder
        ("lyra", patch("Update File: src/main.py", "Add File: docs/a.md")),  # nobody holds them
        ("lyra", {"tool_name": "apply_patch", "tool_input": {"command": "not a patch"}}),
        ("lyra", {"tool_name": "apply_patch", "tool_input": {"command": 7}}),
        ("lyra", {**patch("Update File: src/parser/lexer.py"), "tool_name": "Bash"}),  # not the patch tool
    ):
        out = _pre_tool(env, agent, ev)
        assert (out.returncode, out.stdout, out.stderr) == (0, "", ""), (agent, ev, out)


def test_the_commit_guard_in_a_real_repository(env: Env, tmp_path: Path) -> None:
    root = _project(tmp_path, "code")
    for key, value in (("user.name", "t"), ("user.email", "t@example.invalid")):
        subprocess.run(["git", "config", key, value], cwd=root, check=True)
    done = env.run("git", "setup", "--guard", str(root), "--json").json()
    hook = Path(done["guard"])
    assert hook.exists() and hook.stat().st_mode & 0o111
    env.run("git", "setup", "--guard", str(root))  # again: the same hook, no error
    cid = env.run(
        "claim",
        "src/parser/**",
        "--agent",
        "ella",
        "--reason",
        "lexer rewrite",
        "--project",
        str(root),
        "--json",
    ).json()["id"]
    (root / "src" / "parser" / "lexer.py").write_text("x\n")
    (root / "README").write_text("hi\n")
    (root / "cost $5 <draft>.txt").write_text("a file name with characters no pattern may hold\n")
    git_env = {**env.environ, "NEXUS_AGENT": "lyra"}

    def commit(*paths: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        subprocess.run(["git", "add", *paths], cwd=root, check=True)
        return subprocess.run(
            ["git", "commit", "-q", "-m", "change"],
            cwd=root,
            capture_output=True,
            text=True,
            env={**git_env, **(extra or {})},
        )

    refused = commit("README", "src/parser/lexer.py")
    assert (
        refused.returncode != 0
        and "src/parser/lexer.py" in refused.stderr
        and "held by ella" in refused.stderr
    )
    assert cid in refused.stderr and "NEXUS_CLAIMS_OVERRIDE" in refused.stderr
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True).returncode != 0  # none
    subprocess.run(["git", "reset", "-q", "src/parser/lexer.py"], cwd=root, check=True)
    assert commit("README", "cost $5 <draft>.txt").returncode == 0  # paths nobody holds
    assert commit("src/parser/lexer.py", extra={"NEXUS_AGENT": "ella"}).returncode == 0  # the holder's own
    (root / "src" / "parser" / "lexer.py").write_text("y\n")
    assert commit("src/parser/lexer.py").returncode != 0
    forced = commit("src/parser/lexer.py", extra={"NEXUS_CLAIMS_OVERRIDE": "1"})
    assert forced.returncode == 0 and "NEXUS_CLAIMS_OVERRIDE is set" in forced.stderr
    # someone else's pre-commit hook is never replaced
    other = _project(tmp_path, "other")
    (other / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    out = env.run("git", "setup", "--guard", str(other), check=False)
    assert out.returncode == 2 and "already exists" in out.stderr
    assert (other / ".git" / "hooks" / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"
    assert env.run("git", "setup", "--guard", str(tmp_path / "nowhere"), check=False).returncode == 2


def test_the_brief_and_the_handoff_show_claims(env: Env, tmp_path: Path) -> None:
    root, elsewhere = _project(tmp_path), _project(tmp_path, "other")
    mine = env.run(
        "claim",
        "src/a.py",
        "--agent",
        "ella",
        "--ttl",
        "10m",
        "--reason",
        "soon over",
        "--project",
        str(root),
        "--json",
    ).json()["id"]
    env.run(
        "claim", "src/b.py", "--agent", "ella", "--ttl", "2h", "--reason", "long work", "--project", str(root)
    )
    env.run(
        "claim", "task:release-notes", "--agent", "lyra", "--reason", "writing them", "--project", str(root)
    )
    gone = env.run(
        "claim",
        "docs/x.md",
        "--agent",
        "lyra",
        "--ttl",
        "1s",
        "--reason",
        "crashed",
        "--project",
        str(root),
        "--json",
    ).json()["id"]

    def brief(agent: str, cwd: Path) -> str:
        out = subprocess.run(
            [sys.executable, "-W", "error", "-m", "nexus", "brief", "--agent", agent, "--peek"],
            cwd=cwd,
            env=env.environ,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout

    ella = brief("ella", root)
    assert "## Claims" in ella and f"your claim {mine} on `src/a.py` expires at" in ella
    assert "src/b.py" not in ella  # not soon
    assert "lyra holds `task:release-notes`" in ella
    lyra = brief("lyra", root)
    assert "ella holds `src/a.py` in proj" in lyra and "ella holds `src/b.py`" in lyra
    assert "ella holds" not in brief("lyra", elsewhere)  # another project: only tasks
    time.sleep(1.1)
    page = env.run("handoff", "--since", "1h").stdout
    claims_part = page.split("## Claims", 1)[1]
    assert "Held now" in claims_part and "**ella** holds `src/b.py`" in claims_part
    assert "Expired without a release" in claims_part and gone in claims_part and "crashed" in claims_part
    assert "expired without a release or lost on merge" in page.split("## Waiting for you", 1)[1]


def test_the_mcp_tools_claim_and_release(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over MCP (the official client, in process) the project is the server's folder's repository."""
    import asyncio

    from mcp import Client

    from nexus import workspace
    from nexus.surfaces import mcp_server

    root = _project(tmp_path)
    monkeypatch.chdir(root / "src")

    async def go() -> list[object]:
        ws = workspace.for_vault(env.vault, {}, keys=env.keys_home)
        async with (
            Client(mcp_server.build_server(ws, "ella", tools="agent")) as ella,
            Client(mcp_server.build_server(ws, "lyra", tools="all")) as lyra,
        ):
            got = await ella.call_tool(
                "claim", {"patterns": ["src/parser/**"], "reason": "lexer", "ttl": "45m"}
            )
            refused = await lyra.call_tool("claim", {"patterns": ["src/parser/x.py"], "reason": "mine"})
            listed = await lyra.call_tool("claims", {})
            bad = await ella.call_tool("claim", {"patterns": ["../up"], "reason": "r"})
            cid = got.structured_content["id"]
            renewed = await lyra.call_tool("claim_renew", {"id": cid})
            released = await ella.call_tool("release", {"id": cid})
            return [got, refused, listed, bad, renewed, released]

    got, refused, listed, bad, renewed, released = asyncio.run(go())
    assert not got.is_error and got.structured_content["project"] == "proj"  # type: ignore[attr-defined]
    text = refused.content[0].text  # type: ignore[attr-defined]
    assert refused.is_error and "held by ella" in text and "lexer" in text and "\n" not in text  # type: ignore[attr-defined]
    assert [c["agent"] for c in listed.structured_content["claims"]] == ["ella"]  # type: ignore[attr-defined]
    assert bad.is_error and "leaves the project" in bad.content[0].text  # type: ignore[attr-defined]
    assert renewed.is_error and "only its holder renews" in renewed.content[0].text  # type: ignore[attr-defined]
    assert not released.is_error  # type: ignore[attr-defined]
    assert claimlog.refresh(env.vault).claims()[got.structured_content["id"]].status == "released"  # type: ignore[attr-defined]


def test_nexus_setup_claude_code_wires_the_pre_tool_hook(env: Env, tmp_path: Path) -> None:
    """The PreToolUse hook `nexus setup claude-code` writes, run as Claude Code runs it (its command
    line through a shell, the event on stdin, no NEXUS_* in the environment), denies lyra's edit of
    ella's path; a second setup changes nothing."""
    import shlex

    root = _project(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    run_env = {k: v for k, v in env.environ.items() if not k.startswith("NEXUS_")} | {"HOME": str(home)}
    run_env["NEXUS_HOOK_SERVER"] = "off"  # (the suite's switch: the warm hook server has its own tests)
    argv = [
        sys.executable,
        "-W",
        "error",
        "-m",
        "nexus",
        "--vault",
        str(env.vault.root),
        "setup",
        "claude-code",
        "--agent",
        "lyra",
        "--project",
        str(root),
    ]
    subprocess.run(argv, env={**run_env, "NEXUS_HOME": str(env.keys_home)}, check=True, capture_output=True)
    settings = json.loads((root / ".claude" / "settings.json").read_text())
    (group,) = settings["hooks"]["PreToolUse"]
    assert group["matcher"] == "Edit|Write|MultiEdit|NotebookEdit"
    command = group["hooks"][0]["command"]
    assert shlex.split(command)[1:4] == ["pre-tool", "--agent", "lyra"]
    env.run("claim", "src/**", "--agent", "ella", "--reason", "refactor", "--project", str(root))
    event = {
        "session_id": "s",
        "cwd": str(root),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(root / "src" / "new.py"), "content": "x"},
    }
    out = subprocess.run(
        command,
        shell=True,
        input=json.dumps(event),
        capture_output=True,
        text=True,
        cwd=root,
        env=run_env,
        timeout=60,
    )
    assert (
        out.returncode == 0 and json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    )
    again = subprocess.run(
        argv, env={**run_env, "NEXUS_HOME": str(env.keys_home)}, capture_output=True, text=True
    )
    assert again.returncode == 0 and json.loads((root / ".claude" / "settings.json").read_text()) == settings
