"""What the machine fields' move into the ``%% nexus:meta %%`` comment costs the per-turn commands.

    .venv/bin/python benchmarks/bench_notes.py --before PATH [--runs 30]

PATH is a checkout of nexus from before the comment (notes with every field in the frontmatter). Two
vaults: one written by that nexus (the older form), one by this code (the new form), each with two
agents, a decision and a checkpoint. Interleaved in one loop, so every command sees the same disk and
load: ``python -c pass``; then ``nexus log append``, ``nexus checkpoint save`` and ``nexus brief`` run by
the earlier nexus on its vault, by this code on the new vault, and by this code on the older vault.
Reported as p50 and the p50 ratio to the earlier nexus. Then, in this process, the hot readers on one
note of each form: ``Vault.key_id_of`` (every append) and ``checkpoints.parse`` (every save), in µs.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import pct, timed  # noqa: E402

from nexus.project import checkpoints  # noqa: E402
from nexus.storage.vault import Vault  # noqa: E402


def _make(vault: Path, keys: Path, code: Path) -> None:
    """A small vault written by the nexus in ``code`` (run with that folder as the working folder)."""
    env = dict(os.environ, NEXUS_HOME=str(keys), NEXUS_VAULT=str(vault), PYTHONPATH=str(code))

    def n(*args: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "nexus", *args], cwd=code, env=env, check=True, stdout=subprocess.DEVNULL
        )

    n("init", str(vault))
    n("agent", "add", "ella")
    n("agent", "add", "lyra")
    n("decide", "--agent", "ella", "--title", "Tokens in the keychain", "--decision", "d", "--rationale", "r")
    n("checkpoint", "save", "--agent", "ella", "--task", "t", "--step", "s", "--next", "n")


def _timed_in(code: Path, argv: list[str], env: dict[str, str]) -> float:
    """Milliseconds of ``python -m nexus ARGV`` run from ``code`` (its nexus first on the path)."""
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "nexus", *argv],
        cwd=code,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return (time.perf_counter() - t0) * 1000


def _micro(fn: object, runs: int = 2000) -> float:
    assert callable(fn)
    fn()
    t0 = time.perf_counter()
    for _ in range(runs):
        fn()
    return (time.perf_counter() - t0) / runs * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, required=True, help="a checkout of nexus before the comment")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    before = args.before.resolve()
    for code in (before, ROOT):  # bytecode compiled for both (PYTHONDONTWRITEBYTECODE would hide a stale one)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(code / "nexus")], check=True)
    with tempfile.TemporaryDirectory(prefix="bench-notes-") as tmp:
        t = Path(tmp)
        _make(t / "old", t / "keys-old", before)
        _make(t / "new", t / "keys-new", ROOT)
        shutil.copytree(t / "old", t / "old-copy")  # (this code's derived files are not the earlier one's)
        sides = {  # name -> (code folder, vault, keys)
            "before": (before, t / "old", t / "keys-old"),
            "now": (ROOT, t / "new", t / "keys-new"),
            "now, older vault": (ROOT, t / "old-copy", t / "keys-old"),
        }
        commands = {
            "log append": [
                "log",
                "append",
                "--agent",
                "ella",
                "--channel",
                "c",
                "--type",
                "note",
                "--summary",
                "x",
            ],
            "checkpoint save": [
                "checkpoint",
                "save",
                "--agent",
                "ella",
                "--task",
                "t",
                "--step",
                "s",
                "--next",
                "n",
            ],
            "brief": ["brief", "--agent", "lyra"],
        }
        times: dict[str, list[float]] = {"python -c pass": []}
        for _ in range(args.runs):
            times["python -c pass"].append(timed([sys.executable, "-c", "pass"], dict(os.environ)))
            for label, argv in commands.items():
                for side, (code, vault, keys) in sides.items():
                    env = dict(os.environ, NEXUS_HOME=str(keys), NEXUS_VAULT=str(vault), PYTHONPATH=str(code))
                    times.setdefault(f"{label} · {side}", []).append(_timed_in(code, argv, env))
        base = pct(times["python -c pass"], 0.5)
        print(f"{'command · code, vault':<42} {'p50 ms':>8} {'p90 ms':>8} {'× before':>9}")
        for name, values in times.items():
            label = name.split(" · ")[0]
            ref = times.get(f"{label} · before")
            ratio = pct(values, 0.5) / pct(ref, 0.5) if ref else pct(values, 0.5) / base
            print(f"{name:<42} {pct(values, 0.5):8.1f} {pct(values, 0.9):8.1f} {ratio:9.2f}")
        new, old = Vault(t / "new"), Vault(t / "old-copy")
        cp_new = checkpoints.checkpoint_path(new, "ella").read_text(encoding="utf-8")
        cp_old = checkpoints.checkpoint_path(old, "ella").read_text(encoding="utf-8")
        print("\nin this process (µs per call):")
        print(
            f"  Vault.key_id_of    new form {_micro(lambda: new.key_id_of('ella')):6.1f}"
            f"   older form {_micro(lambda: old.key_id_of('ella')):6.1f}"
        )
        print(
            f"  checkpoints.parse  new form {_micro(lambda: checkpoints.parse(cp_new, 'x')):6.1f}"
            f"   older form {_micro(lambda: checkpoints.parse(cp_old, 'x')):6.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
