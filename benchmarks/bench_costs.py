"""Costs that grow with new work, not with history (issue 15): verify, handoff, index build, brief and
log read as whole processes on logs of 10k, 100k and 1M entries, beside `python -c pass` and the old
full pass (``verify.verify_exact``, the in-memory serial check every verify used to be) in the same run.

    .venv/bin/python benchmarks/bench_costs.py [--sizes 10000,100000,1000000] [--new 1000] [--runs 3]

Vaults come from ``bench_brief.generate`` (three agents, signed and chained, monthly segments) and are
kept under benchmarks/results/vaults/N (generating 1M entries takes minutes); each run works on a copy.
For each size, in this order:

* ``python -c pass`` (median of 5), the baseline every ratio uses;
* the old full pass, in one process (time, entries/s, peak RSS);
* ``nexus verify --full`` (time, entries/s, peak RSS of the largest process: the parent or a worker);
* ``nexus verify`` with nothing new, then after ``--new`` new entries (appended in this process,
  untimed), ``--runs`` times;
* ``nexus handoff`` after ``--new`` new entries, ``--runs`` times (the first handoff, untimed, is
  written with ``--since 1h``);
* ``nexus index rebuild`` (the first index build; time, entries/s, peak RSS), unless ``--no-index``;
* ``nexus brief --agent lyra --peek`` and ``nexus log read --agent lyra`` after one new entry.

Peak memory is ``ru_maxrss`` from ``wait4`` (the largest of the process and the children it waited
for). JSON goes to benchmarks/results/bench_costs.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_brief import AGENTS, generate  # noqa: E402

from nexus.keys import identity  # noqa: E402
from nexus.ledger import log  # noqa: E402
from nexus.storage.vault import Vault, init  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
VAULTS = [RESULTS / "vaults"]  # (--vaults: somewhere with room; a 1M-entry vault is ~500 MB)


CPU: list[float] = [0.0]  # CPU seconds of the last ``measure`` (the process and the children it waited for)


def measure(cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB, stdout) of one run of ``cmd`` as a whole process (``cwd``: the code
    ``python -m nexus`` runs); its CPU seconds go to ``CPU[0]``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.DEVNULL, cwd=cwd)
        _pid, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        CPU[0] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
    if proc.returncode not in (0, 1):  # (verify exits 1 on problems; none are expected here)
        raise SystemExit(f"{cmd} failed ({proc.returncode})")
    return elapsed, usage.ru_maxrss / 1024, text


def prepare(n: int) -> Path:
    """The generated vault for ``n`` entries (made once, then kept)."""
    folder = VAULTS[0] / str(n)
    if (folder / "done").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    keys = folder / "keys"
    vault, _ = init(folder / "vault")
    for name in AGENTS:
        identity.add(vault, keys, name)
    identity.add(vault, keys, "sam", human=True)
    t0 = time.perf_counter()
    generate(vault, keys, n)
    (folder / "done").write_text(f"{time.perf_counter() - t0:.1f}\n")
    return folder


def append_many(vault: Vault, keys: Path, count: int, tag: str) -> None:
    signers = [identity.load_signer(vault, keys, name) for name in AGENTS]
    writer = log.writer(vault)
    for i in range(count):
        signer = signers[i % len(signers)]
        log.unread(vault, signer.name)  # agents read before they write: no burst of races
        writer.append(
            signer,
            channel="bench",
            type="note",
            summary=f"new work {tag} {i}",
            body="done since the last verify",
        )
    writer.flush()


def signatures_per_cpu_second(count: int = 3000) -> float:
    """Bare Ed25519 verifications a CPU-second in this process (the ceiling of one core, measured
    beside the runs under the same load)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    data = b"x" * 400
    sig, public = key.sign(data), key.public_key()
    t0 = time.process_time()
    for _ in range(count):
        public.verify(sig, data)
    return count / (time.process_time() - t0)


def full_verify(n: int, nexus: list[str], env: dict[str, str], code: Path, key: str) -> dict[str, Any]:
    """``nexus verify --full`` (of the code in ``code``): time, rate, peak memory, CPU seconds (the
    parent and its pool), entries per CPU-second beside bare signature checks a CPU-second, and the
    utilisation of the machine's cores (CPU seconds / (seconds x cores))."""
    sigs = signatures_per_cpu_second()
    load = os.getloadavg()[0]
    t, rss, text = measure([*nexus, "verify", "--full", "--json"], env, code)
    report = json.loads(text)
    assert report["ok"] and report["full"] and report["entries"] == n, report
    cpu = CPU[0]
    return {
        f"{key}_s": round(t, 2),
        f"{key}_mb": round(rss),
        f"{key}_per_s": round(n / t),
        f"{key}_cpu_s": round(cpu, 1),
        f"{key}_per_cpu_s": round(n / cpu),
        f"{key}_sigs_per_cpu_s": round((sigs + signatures_per_cpu_second()) / 2),
        f"{key}_utilisation": round(cpu / (t * (os.cpu_count() or 1)), 2),
        f"{key}_load": round((load + os.getloadavg()[0]) / 2, 1),
    }


def same_verify_code(before: Path) -> bool:
    """The code in ``before`` checks entries with the same modules as this code: the verify state one
    saves is used by the other (else every handoff of one would verify the whole log again, and
    their handoffs cannot take turns on one vault)."""
    from nexus.audit import verify_state

    here = ROOT / "nexus"
    for module in verify_state.CONTEXT_MODULES:
        try:
            if (here / module).read_bytes() != (before / "nexus" / module).read_bytes():
                return False
        except OSError:
            return False
    return True


def handoffs(
    vault: Vault, keys: Path, new: int, runs: int, nexus: list[str], env: dict[str, str], before: Path | None
) -> dict[str, Any]:
    """``nexus handoff`` after ``new`` new entries, ``runs`` times: time, CPU seconds, peak memory
    (medians; the largest peak); with ``before``, that code's handoff takes turns with this one's."""
    codes = {"handoff": ROOT}
    if before is not None and same_verify_code(before):
        codes["before_handoff"] = before
    found: dict[str, list[tuple[float, float, float]]] = {key: [] for key in codes}
    for r in range(runs):
        for key, code in codes.items():
            append_many(vault, keys, new, f"h{r}{key}")
            t, rss, text = measure([*nexus, "handoff", "--json"], env, code)
            data = json.loads(text)
            assert f"> {new} entries by" in data["markdown"], data["markdown"][:400]
            found[key].append((t, CPU[0], rss))
    row: dict[str, Any] = {}
    for key, got in found.items():
        row[f"{key}_after_new_s"] = round(statistics.median(g[0] for g in got), 3)
        row[f"{key}_after_new_cpu_s"] = round(statistics.median(g[1] for g in got), 3)
        row[f"{key}_after_new_mb"] = round(max(g[2] for g in got))
    return row


def run_size(
    n: int, new: int, runs: int, index: bool, old: bool = True, before: Path | None = None
) -> dict[str, Any]:
    source = prepare(n)
    work = Path(tempfile.mkdtemp(prefix=f"bench-costs-{n}-", dir=VAULTS[0]))
    try:
        shutil.copytree(source / "vault", work / "vault", symlinks=True)
        shutil.copytree(source / "keys", work / "keys")
        vault = Vault(work / "vault")
        keys = work / "keys"
        cursors = vault.state / "cursors"
        for name in AGENTS:  # every agent has read the generated log (the generator saves lyra's)
            if name != "lyra":
                shutil.copyfile(cursors / "lyra.json", cursors / f"{name}.json")
        env = dict(os.environ, NEXUS_VAULT=str(vault.root), NEXUS_HOME=str(keys))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        py = sys.executable
        nexus = [py, "-m", "nexus"]
        row: dict[str, Any] = {
            "entries": n,
            "log_mb": round(sum(p.stat().st_size for _, p in log.segment_files(vault)) / 1e6, 1),
        }
        base = [measure([py, "-c", "pass"], env)[0] for _ in range(5)]
        b = statistics.median(base)
        row["python_pass_ms"] = round(b * 1000, 1)

        old_code = (
            "import sys; from pathlib import Path; from nexus.storage.vault import Vault; "
            "from nexus.audit.verify import verify_exact; r = verify_exact(Vault(Path(sys.argv[1]))); "
            "print(r.entries, len(r.errors))"
        )
        if old:
            t, rss, text = measure([py, "-c", old_code, str(vault.root)], env)
            row["old_full_s"], row["old_full_mb"] = round(t, 2), round(rss)
            row["old_full_per_s"] = round(n / t)
            assert text.split()[1] == "0", text

        if before is not None:  # (first: the verify state this code leaves is the one used next)
            row.update(full_verify(n, nexus, env, before, "before_full"))
        row.update(full_verify(n, nexus, env, ROOT, "full"))
        if old:
            row["full_vs_old"] = round(row["old_full_s"] / row["full_s"], 2)

        t, rss, text = measure([*nexus, "verify", "--json"], env)
        assert json.loads(text)["checked"] == 0
        row["verify_nothing_new_s"] = round(t, 3)

        inc, inc_mb = [], []
        for r in range(runs):
            append_many(vault, keys, new, f"v{r}")
            t, rss, text = measure([*nexus, "verify", "--json"], env)
            report = json.loads(text)
            assert report["ok"] and not report["full"] and report["checked"] == new, report
            inc.append(t)
            inc_mb.append(rss)
        row["verify_after_new_s"] = round(statistics.median(inc), 3)
        row["verify_after_new_mb"] = round(max(inc_mb))
        row["verify_after_new_ratio"] = round(statistics.median(inc) / b, 1)

        t, _rss, _ = measure([*nexus, "handoff", "--since", "1h", "--json"], env)
        row["handoff_first_s"] = round(t, 2)
        row["handoff_first_cpu_s"], row["handoff_first_mb"] = round(CPU[0], 1), round(_rss)
        row.update(handoffs(vault, keys, new, runs, nexus, env, before))
        row["handoff_after_new_ratio"] = round(row["handoff_after_new_s"] / b, 1)

        if index:
            t, rss, text = measure([*nexus, "index", "rebuild", "--json"], env)
            row["index_build_s"], row["index_build_mb"] = round(t, 2), round(rss)
            row["index_build_per_s"] = round(json.loads(text)["documents_added"] / t)

        ella = identity.load_signer(vault, keys, "ella")
        brief, read = [], []
        for r in range(max(runs, 5)):
            log.append(vault, ella, channel="bench", type="note", summary=f"one more {r}")
            brief.append(measure([*nexus, "brief", "--agent", "lyra", "--peek"], env)[0])
            read.append(measure([*nexus, "log", "read", "--agent", "lyra"], env)[0])
        row["brief_ms"] = round(statistics.median(brief) * 1000, 1)
        row["log_read_ms"] = round(statistics.median(read) * 1000, 1)
        row["brief_ratio"] = round(statistics.median(brief) / b, 1)
        row["log_read_ratio"] = round(statistics.median(read) / b, 1)
        row["load_average"] = round(os.getloadavg()[0], 1)
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--new", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-index", action="store_true", help="skip the index build")
    parser.add_argument("--no-old", action="store_true", help="skip the old full pass")
    parser.add_argument("--generate-only", action="store_true", help="only make the vaults")
    parser.add_argument(
        "--before",
        type=Path,
        help="a folder holding another nexus package (e.g. `git archive` of the code before): its "
        "verify --full and handoff after new entries run beside this code's, taking turns",
    )
    parser.add_argument("--vaults", type=Path, default=VAULTS[0], help="where generated vaults are kept")
    args = parser.parse_args()
    VAULTS[0] = args.vaults
    RESULTS.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        if args.generate_only:
            prepare(n)
            continue
        row = run_size(n, args.new, args.runs, not args.no_index, not args.no_old, args.before)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if rows:
        name = "bench_costs-" + args.sizes.replace(",", "-") + ".json"
        (RESULTS / name).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
