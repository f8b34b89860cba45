"""The demo night: two agents, ella and lyra, and a person, sam, share a fresh vault.

    python agents/demo.py [VAULT_DIR]      (default ./demo-vault, recreated each run)

Every step runs a real ``python -m nexus`` process and the transcript shows the command and what it
printed. During the night the agents append and read each other's entries, ella records a decision,
lyra sends a correction and ella supersedes the decision, both agents race once and reconcile, the
project state gets a stale edit (refused) and a fresh one, sam edits the state in Obsidian, ella's
session is SIGKILLed mid-task and a new session resumes from its checkpoint. The morning handoff ends
the demo. The story is a night, but it runs in about a minute: each scene is headed with the real UTC
time it starts at, the time every entry in it is stamped with.

Private keys go to ``NEXUS_HOME`` when it is set, else to a folder beside the vault, outside it
(``./demo-keys`` for ``./demo-vault``, recreated with it): the vault the demo leaves can be written to
as its agents afterwards, and the demo's last lines say how.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

HERE = Path(__file__).resolve().parent
COLOUR = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
DIM, BOLD, CYAN, RESET = ("\033[2m", "\033[1m", "\033[36m", "\033[0m") if COLOUR else ("", "", "", "")


def _quote(arg: str) -> str:
    """An argument as a person would type it in a POSIX shell."""
    if arg and shlex.quote(arg) == arg:
        return arg
    if "'" in arg and not any(c in arg for c in '"$`\\!'):
        return f'"{arg}"'
    return shlex.quote(arg)


class Night:
    def __init__(self, vault: Path, keys: Path) -> None:
        self.vault = vault
        self.env = dict(os.environ, NEXUS_VAULT=str(vault), NEXUS_HOME=str(keys))
        self.env.pop("NO_COLOR", None) if COLOUR else None

    def scene(self, title: str) -> None:
        title = f"{time.strftime('%H:%M:%SZ', time.gmtime())} · {title}"
        print(f"\n{BOLD}{CYAN}── {title} {'─' * max(0, 72 - len(title))}{RESET}", flush=True)

    def show(self, args: tuple[str, ...], program: str = "nexus", comment: str = "") -> None:
        shown = " ".join(_quote(a) for a in args)
        note = f"   {DIM}# {comment}{RESET}" if comment else ""
        print(f"{DIM}${RESET} {program} {shown}{note}", flush=True)

    def nexus(
        self, *args: str, quiet: bool = False, ok: tuple[int, ...] = (0,), stdin: str | None = None
    ) -> str:
        """Run one real nexus process; print the command as typed and its output (``quiet``: only how
        much it printed, for reads whose answer the agent takes in)."""
        self.show(args)
        proc = subprocess.run(
            [sys.executable, "-m", "nexus", *args], capture_output=True, text=True, env=self.env, input=stdin
        )
        out = proc.stdout.rstrip("\n")
        if quiet and out:
            n = out.count("\n") + 1
            print(
                f"  {DIM}({n} line{'s' if n > 1 else ''} of output, read by the agent; not shown){RESET}",
                flush=True,
            )
        elif out:
            print("\n".join("  " + line for line in out.split("\n")), flush=True)
        if proc.stderr.strip():
            print("\n".join("  " + line for line in proc.stderr.rstrip("\n").split("\n")), flush=True)
        if proc.returncode not in ok:
            raise SystemExit(f"demo: `nexus {' '.join(args)}` failed with exit {proc.returncode}")
        return proc.stdout.strip()

    def append(self, agent: str, channel: str, type: str, summary: str, *extra: str) -> str:
        return self.nexus(
            "log",
            "append",
            "--agent",
            agent,
            "--channel",
            channel,
            "--type",
            type,
            "--summary",
            summary,
            *extra,
        )

    def spawn(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, *args], env=self.env, text=True)


ROLES = {
    "ella": (
        "## Role\nPorts the parser to the new grammar and owns the parser's tests.\n\n"
        "## Priorities\n- Correct parses before speed.\n- Every grammar change lands with a test.\n\n"
        "## Never without asking\n- Change the public API.\n- Touch secrets or CI configuration.\n\n"
        "## Relations to the other agents\n- Hands finished work to lyra for docs and review.\n"
    ),
    "lyra": (
        "## Role\nWrites the migration guide and keeps the test suite reliable.\n\n"
        "## Priorities\n- Docs match the code.\n- No flaky tests.\n\n"
        "## Never without asking\n- Merge ella's parser work.\n- Delete a test.\n\n"
        "## Relations to the other agents\n"
        "- Reviews ella's work; corrects her in the log, never in her files.\n"
    ),
}


def fill_identity(vault: Path, name: str, sections: str) -> None:
    """Do what a person does in Obsidian: replace the identity note's placeholder sections."""
    note = vault / "agents" / name / "identity.md"
    text = note.read_text(encoding="utf-8")
    head = text[: text.index("\n> [!note]")]
    keep = text.rfind("\n%% nexus:meta ")  # the key, in the comment at the end: a person leaves it
    note.write_text(head + "\n" + sections + (text[keep:] if keep >= 0 else ""), encoding="utf-8")


def play(vault: Path, keys: Path) -> str:
    n = Night(vault, keys)
    n.scene("Evening: a fresh vault, two agents and a person")
    n.nexus("init", str(vault))
    for name in ("ella", "lyra"):
        n.nexus("agent", "add", name)
    n.nexus("agent", "add", "sam", "--human")
    for name, text in ROLES.items():
        fill_identity(vault, name, text)
    print(f"{DIM}  (sam fills in each agent's identity note in Obsidian: role, priorities, limits){RESET}")

    n.scene("night, scene 1: ella starts on the parser; lyra on the docs; each reads the other")
    plan = n.append(
        "ella",
        "parser",
        "plan",
        "Plan: port the parser to the new grammar, lexer first",
        "--body",
        "Steps: lexer, grammar rules, error messages, tests. Config comes from env.",
    )
    n.nexus(
        "checkpoint",
        "save",
        "--agent",
        "ella",
        "--task",
        "Port the parser to the new grammar",
        "--step",
        "plan written",
        "--next",
        "lexer ported",
    )
    n.nexus("log", "read", "--agent", "lyra")
    n.append("lyra", "docs", "note", "Writing the migration guide for the new grammar")

    n.scene("scene 2: ella records a decision")
    n.nexus("log", "read", "--agent", "ella")
    n.nexus(
        "decide",
        "--agent",
        "ella",
        "--title",
        "API tokens live in the OS keychain",
        "--decision",
        "Agents read API tokens from the OS keychain, never from .env files or the repo.",
        "--rationale",
        "A token in a .env file leaked twice this year.",
        "--alternatives",
        "A .env file outside the repo; an encrypted file in the repo.",
        "--ref",
        plan,
    )

    n.scene("scene 3: lyra sends a correction; ella supersedes the decision")
    n.nexus("brief", "--agent", "lyra", "--max-chars", "1500")
    d1_entry = json.loads(n.nexus("decisions", "show", "D-0001", "--json"))["entry"]
    correction = n.append(
        "lyra",
        "decisions",
        "correction",
        "CI runners have no OS keychain: D-0001 breaks every CI job",
        "--ack",
        d1_entry,
    )
    n.nexus(
        "retain",
        "--agent",
        "lyra",
        "--type",
        "failure",
        "--content",
        "CI runners have no OS keychain: tokens on CI come from the runner's secret store",
        "--source",
        correction,
    )
    n.nexus("log", "read", "--agent", "ella")
    n.nexus(
        "decide",
        "--agent",
        "ella",
        "--title",
        "API tokens: OS keychain locally, CI secret store on CI",
        "--decision",
        "Locally agents read tokens from the OS keychain; on CI from the runner's "
        "secret store. Never from .env files or the repo.",
        "--rationale",
        "Lyra's correction: CI runners have no keychain.",
        "--supersedes",
        "D-0001",
        "--ref",
        correction,
    )
    n.nexus("decisions", "--all")

    n.scene("scene 4: they race: both say they will take the flaky watcher test in the same second")
    n.nexus("log", "read", "--agent", "lyra", quiet=True)
    cmd = ["-m", "nexus", "log", "append", "--channel", "tests", "--type", "note"]
    for who in ("ella", "lyra"):
        n.show(
            (
                "log",
                "append",
                "--agent",
                who,
                "--channel",
                "tests",
                "--type",
                "note",
                "--summary",
                "I'll take the flaky watcher test",
            )
        )
    racers = [
        n.spawn(*cmd, "--agent", who, "--summary", "I'll take the flaky watcher test")
        for who in ("ella", "lyra")
    ]
    for p in racers:
        p.wait()
    races = json.loads(n.nexus("races", "--unresolved", "--json", quiet=True))
    print(f"  → {len(races)} race found: both entries stay; one reconcile entry settles it")
    race = races[0]
    a, b = race["a"]["id"], race["b"]["id"]
    n.nexus("log", "read", "--agent", "lyra", quiet=True)
    n.append(
        "lyra",
        "tests",
        "reconcile",
        "Reconciled: lyra takes the flaky test, ella stays on the parser",
        "--ack",
        a,
        "--ack",
        b,
    )
    n.nexus("races")

    n.scene("scene 5: project state: a stale edit is refused, a fresh one applied")
    n.nexus("log", "read", "--agent", "ella", quiet=True)
    n.nexus("state", "show")
    # each agent pipes its new state into `state set --file -`
    n.nexus(
        "state",
        "set",
        "--agent",
        "ella",
        "--expect",
        "0",
        "--file",
        "-",
        stdin="# Project state\n\n- Parser port: in progress (ella)\n- Docs: migration guide (lyra)\n",
    )
    n.nexus("log", "read", "--agent", "lyra", quiet=True)
    n.nexus(
        "state",
        "set",
        "--agent",
        "lyra",
        "--expect",
        "0",
        "--file",
        "-",
        ok=(3,),
        stdin="# Project state\n\n- Docs: migration guide drafted (lyra)\n",
    )
    n.nexus(
        "state",
        "set",
        "--agent",
        "lyra",
        "--expect",
        "1",
        "--file",
        "-",
        stdin="# Project state\n\n- Parser port: in progress (ella)\n"
        "- Docs: migration guide drafted (lyra)\n- Flaky watcher test: lyra\n",
    )

    n.scene("scene 6: ella's session works the parser task… and is SIGKILLed mid-task")
    n.show(("agents/worker.py", "--agent", "ella", "&"), "python")
    worker = subprocess.Popen(
        [sys.executable, str(HERE / "worker.py"), "--agent", "ella", "--pause", "0.3"],
        env=n.env,
        text=True,
        stdout=subprocess.PIPE,
    )
    assert worker.stdout is not None
    for line in worker.stdout:  # the session's own output, as it prints it
        print("  " + line.rstrip("\n"), flush=True)
        if "checkpoint: grammar rules ported" in line:
            break
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    worker.stdout.close()
    print(f"  → session process {worker.pid} killed with SIGKILL (exit {worker.returncode})")
    n.nexus("checkpoint", "show", "--agent", "ella", "--stale-minutes", "0")

    n.scene("scene 7: lyra keeps going; asks a question; corrects ella; sam edits the state in Obsidian")
    n.nexus("log", "read", "--agent", "lyra", quiet=True)
    n.nexus(
        "checkpoint",
        "save",
        "--agent",
        "lyra",
        "--task",
        "Fix the flaky watcher test",
        "--step",
        "reproduced it: the test sleeps instead of waiting on the event",
        "--next",
        "wait on the observer event",
        "--files",
        "tests/test_watch.py",
    )
    n.append("lyra", "tests", "question", "May the watcher test wait up to 5 s on a slow CI runner?")
    n.append("lyra", "docs", "correction", "ella: the migration guide says Python 3.10; it must say 3.11")
    project = vault / "state" / "project.md"
    print(
        f"{DIM}${RESET} echo '- Release: after the parser port lands (sam)' >> state/project.md"
        f"   {DIM}# sam, typing in Obsidian{RESET}",
        flush=True,
    )
    with open(project, "a", encoding="utf-8") as f:
        f.write("- Release: after the parser port lands (sam)\n")
    n.nexus("watch", "--once")  # (the watcher, running beside Obsidian, records sam's edit as a version)
    n.nexus("state", "show")

    n.scene("scene 8: a new ella session resumes from the checkpoint")
    n.show(("agents/worker.py", "--agent", "ella", "--resume"), "python")
    resumed = subprocess.run(
        [sys.executable, str(HERE / "worker.py"), "--agent", "ella", "--resume", "--pause", "0.05"],
        env=n.env,
        capture_output=True,
        text=True,
        check=True,
    )
    print("\n".join("  " + line for line in resumed.stdout.rstrip().split("\n")))
    n.nexus("checkpoint", "show", "--agent", "ella")
    n.nexus("verify")

    n.scene("morning: the handoff sam reads")
    return n.nexus("handoff")


def key_home(environ: Mapping[str, str], vault: Path) -> tuple[Path, bool]:
    """Where the demo's private keys go: ``NEXUS_HOME`` when set (True: the person's own folder),
    else the folder beside the vault (``demo-keys`` beside ``demo-vault``), outside it."""
    if environ.get("NEXUS_HOME"):
        return Path(environ["NEXUS_HOME"]).expanduser(), True
    return vault.parent / f"{vault.name.removesuffix('-vault')}-keys", False


def _is_demo_keys(folder: Path) -> bool:
    """A keys folder a previous demo left (only nexus's ``keys/`` and ``trust/`` in it)."""
    return folder.is_dir() and {p.name for p in folder.iterdir()} <= {"keys", "trust"}


def main(argv: list[str]) -> int:
    target = Path(argv[0] if argv else "demo-vault").resolve()
    if target.exists():
        if not (target / "nexus.md").is_file() and any(target.iterdir()):
            raise SystemExit(f"demo: {target} exists and is not a nexus vault; pick another folder")
        shutil.rmtree(target)
    keys, own = key_home(os.environ, target)
    if not own and keys.exists():
        if not _is_demo_keys(keys):
            raise SystemExit(f"demo: {keys} exists and is not the demo's keys folder; pick another folder")
        shutil.rmtree(keys)  # the keys of the vault just removed: a new vault gets new keys
    started = time.time()
    play(target, keys)
    took = time.time() - started
    print(f"\n{DIM}demo vault: {target} (open it in Obsidian) · keys: {keys} · {took:.1f} s{RESET}")
    print(
        f"to act as its agents:  export NEXUS_VAULT={shlex.quote(str(target))} "
        f"NEXUS_HOME={shlex.quote(str(keys))}\n"
        "                        nexus brief --agent ella   (or lyra; sam is the person)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
