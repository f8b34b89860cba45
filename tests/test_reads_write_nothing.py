"""No read-only operation changes a byte of the vault: every operation the registry declares as reading
(MCP annotations ``read``, and the cursor-moving readers whose only write is the agent's cursor under
``.nexus/``) runs on a vault a person has edited by hand, and the vault's notes hash the same after it.
``.nexus/`` is machine state (caches, cursors, derived indexes) and is left out of the hash."""

from __future__ import annotations

import hashlib
import shlex
import subprocess
import sys
from pathlib import Path

from conftest import Env

from nexus.operations import registry
from nexus.operations.spec import CURSOR, READ, Operation

# A read-only operation's flags that make it write (its example shows the writing form).
WRITING_FLAGS = {"--restore", "--approve", "--reject"}


def vault_hash(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".nexus" or rel.startswith(".nexus/") or not path.is_file():
            continue
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _reading_operations() -> list[Operation]:
    return [
        op
        for op in registry.OPERATIONS
        if op.kind in (READ, CURSOR) and (op.tool is not None or op.hook is not None)
    ]


def _command(op: Operation) -> list[str]:
    """The operation's own example, its writing flags dropped."""
    words = shlex.split(op.example.split("\n")[0])
    out: list[str] = []
    skip = False
    for w in words[1:]:
        if skip:
            skip = False
            continue
        if w in WRITING_FLAGS:
            skip = w != "--restore"
            continue
        out.append(w)
    return out


def test_every_read_only_operation_leaves_the_vault_byte_for_byte(env: Env) -> None:
    ops = _reading_operations()
    assert len(ops) >= 20  # the registry is read, not a hand-kept list
    env.run("memory", "add", "--agent", "ella", "--content", "Keep this fact.")
    env.run("memory", "add", "--agent", "ella", "--content", "Wrong fact, delete me.")
    env.run("memory", "add", "--agent", "ella", "--target", "user", "--content", "Sam likes tea.")
    env.run(
        "log",
        "append",
        "--agent",
        "lyra",
        "--channel",
        "general",
        "--type",
        "note",
        "--summary",
        "search engine chosen",
    )
    env.run(
        "decide", "--agent", "ella", "--title", "Search engine", "--decision", "Whoosh", "--rationale", "pure"
    )
    env.run(
        "state", "set", "--agent", "ella", "--expect", "0", "--file", "-", input="# Project\n\nphase one\n"
    )
    env.run(
        "state", "set", "--agent", "ella", "--expect", "1", "--file", "-", input="# Project\n\nphase two\n"
    )
    for v in (2, 3):
        env.run(
            "state",
            "set",
            "--agent",
            "lyra",
            "--expect",
            str(v),
            "--file",
            "-",
            input=f"# Project\n\nv{v + 1}\n",
        )
    env.run("checkpoint", "save", "--agent", "ella", "--task", "t", "--step", "s", "--next", "n")
    env.run(
        "memory",
        "facts",
        "add",
        "--name",
        "search-engine",
        "--description",
        "we use whoosh",
        "--type",
        "project",
    )
    env.run("retain", "--agent", "ella", "--type", "fact", "--content", "ella-3 fact")
    # a person's edits, not recorded yet
    (env.vault.root / "agents/ella/MEMORY.md").write_text("Keep this fact.", encoding="utf-8")
    state = env.vault.root / "state/project.md"
    state.write_text(state.read_text(encoding="utf-8") + "\nedited by hand\n", encoding="utf-8")
    codes: dict[str, int] = {}
    for op in ops:
        before = vault_hash(env.vault.root)
        args = _command(op)
        if op.hook is not None:
            args = [a for a in args if a not in ("--vault", "~/vault")]
            where = ["--vault", str(env.vault.root), "--home", str(env.keys_home)]
            cmd = [sys.executable, "-W", "error", "-m", "nexus.surfaces.hooks", *args, *where]
            event = '{"session_id": "s-1", "hook_event_name": "x", "prompt": "hello"}'
            run = subprocess.run(
                cmd, capture_output=True, text=True, env=env.environ, input=event, timeout=60
            )
            code = run.returncode
        else:
            code = env.run(*args, check=False).returncode
        after = vault_hash(env.vault.root)
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        codes[op.name] = code
        assert not changed, f"{op.name} ({' '.join(args)}, exit {code}) changed {changed}"
    # every one ran (the example's made-up entry id is the one not found)
    assert {name for name, code in codes.items() if code != 0} == {"log_recover"}, codes
