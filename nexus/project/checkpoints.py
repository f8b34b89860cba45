"""Per-agent checkpoints: what an agent is doing, what is done, what is next – so a new session resumes.

* ``agents/A/checkpoint.md`` – the current checkpoint, replaced atomically (temp file, fsync, rename,
  fsync the folder): a reader always sees the old or the new version, never a mix.
* ``agents/A/checkpoint-history.md`` – every version ever saved, one line each, append-only (a person
  reads the line; the JSON comment at its end holds the whole record).

``save`` is on the hot path (agents call it every few tool calls): it imports neither YAML nor the
crypto library. It writes to the log only when the status or the task changes (a signed
``checkpoint`` entry); ``resume`` logs a ``resume`` entry so the handoff shows recoveries. The entry
is appended before the note is written (``ledger/pairs.py``): a failed append writes nothing, and the
retry of a save whose note failed after its entry landed reuses that entry, so a save that exits 0
has written both.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from ..errors import InputError, NotFoundError
from ..records import Checkpoint
from ..storage import durable, meta, properties
from ..storage.locks import exclusive
from ..storage.text import check_body, check_line, check_name
from ..storage.vault import Vault
from ..trust import Trust

STATUSES = ("in-progress", "blocked", "done")
HISTORY_MARK = "%% nexus:checkpoint "
_HISTORY_HEAD = """\
---
tags: ["nexus/checkpoint-history"]
---
# Checkpoint history — {agent}

Every checkpoint {agent} saved, oldest first (append-only; the current one is [[agents/{agent}/checkpoint]]).

"""


def checkpoint_path(vault: Vault, agent: str) -> Path:
    return vault.inside(vault.agent_dir(agent) / "checkpoint.md")


def history_path(vault: Vault, agent: str) -> Path:
    return vault.inside(vault.agent_dir(agent) / "checkpoint-history.md")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _known_agent(vault: Vault, agent: str) -> str:
    check_name(agent)
    if not vault.identity_path(agent).is_file():
        raise vault.unknown_agent(agent)
    return agent


def render(cp: Checkpoint) -> str:
    """The checkpoint note: JSON-valued properties (no YAML needed to read them), a readable body, and
    its version number (``seq``) in the ``nexus:meta`` comment (older notes: a property)."""
    props = {
        "agent": cp.agent,
        "task": cp.task,
        "step": cp.step,
        "next": cp.next,
        "status": cp.status,
        "files": list(cp.files),
        "saved": cp.saved,
        "tags": ["nexus/checkpoint"],
    }
    kind = {"in-progress": "info", "blocked": "warning", "done": "success"}[cp.status]
    lines = [
        f"# Checkpoint — {cp.agent}",
        "",
        f"> [!{kind}] {cp.status} · saved {cp.saved.replace('T', ' ')} · version {cp.seq}",
        f"> **Task:** {cp.task}",
        f"> **Done so far:** {cp.step}",
        f"> **Next:** {cp.next}",
        "",
    ]
    if cp.files:
        lines += ["## Files touched", *[f"- `{f}`" for f in cp.files], ""]
    lines += [
        "## Notes",
        "",
        "%% nexus:notes %%",
        cp.notes or "",
        "%% nexus:end-notes %%",
        "",
        f"History: [[agents/{cp.agent}/checkpoint-history]]",
    ]
    return properties.render(props, meta.attach("\n".join(lines), {"seq": cp.seq}))


def parse(text: str, source: str) -> Checkpoint:
    """Read a checkpoint note back (InputError when it is not one)."""
    props, body = meta.merged(*properties.parse(text, source), meta.CHECKPOINT)
    notes = ""
    start, end = body.find("%% nexus:notes %%\n"), body.find("\n%% nexus:end-notes %%")
    if start >= 0 and start + 17 <= end:
        notes = body[start + 18 : end]
    try:
        return Checkpoint(
            agent=str(props["agent"]),
            task=str(props["task"]),
            step=str(props["step"]),
            next=str(props["next"]),
            status=str(props["status"]),
            files=tuple(str(f) for f in props.get("files") or ()),
            notes=notes,
            saved=str(props["saved"]),
            seq=int(props["seq"]),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(f"{source} is not a checkpoint note (missing or bad property {err})") from None


def load(vault: Vault, agent: str) -> Checkpoint | None:
    """The agent's current checkpoint, or None when it has never saved one."""
    path = checkpoint_path(vault, check_name(agent))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return parse(text, vault.rel(path))


def _last_history_seq(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - 65536))
            tail = f.read()
    except FileNotFoundError:
        return 0
    for raw in reversed(tail.split(b"\n")):
        record = _history_record(raw.decode("utf-8", "replace"))
        if record is not None:
            return int(record.get("seq", 0))
    return 0


def _history_record(line: str) -> dict[str, Any] | None:
    at = line.find(HISTORY_MARK)
    if at < 0 or not line.endswith(" %%"):
        return None
    try:
        data = json.loads(line[at + len(HISTORY_MARK) : -3])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def save(
    vault: Vault,
    agent: str,
    *,
    task: str,
    step: str,
    next: str,
    status: str = "in-progress",
    files: tuple[str, ...] = (),
    notes: str | None = None,
    keys_home: Path | None = None,
) -> tuple[Checkpoint, bool]:
    """Save a checkpoint durably; return it and whether the change was logged.

    The status or task changing is logged (signed) when ``keys_home`` is given; plain progress is not.
    """
    _known_agent(vault, agent)
    task, step, next = (
        check_line(task, "task", 300),
        check_line(step, "step", 500),
        check_line(next, "next", 500),
    )
    if status not in STATUSES:
        raise InputError(f"status {status!r} is not one of {', '.join(STATUSES)}")
    files = tuple(check_line(f, "file", 500) for f in files)
    for label, value in (("task", task), ("step", step), ("next", next), *(("file", f) for f in files)):
        if "%%" in value:
            raise InputError(f"{label} must not contain '%%' (Obsidian would hide the text after it)")
    body = check_body(notes) or ""
    if "%% nexus:" in body:
        raise InputError("notes must not contain '%% nexus:' framing")
    path, hist = checkpoint_path(vault, agent), history_path(vault, agent)
    with exclusive(vault.lock(f"checkpoint-{agent}")):
        try:
            old: Checkpoint | None = load(vault, agent)
        except InputError:
            old = None  # a damaged note is replaced; its earlier versions are in the history
        seq = max(old.seq if old else 0, _last_history_seq(hist)) + 1
        cp = Checkpoint(agent, task, step, next, status, files, body, _now(), seq)
        record = json.dumps(cp.to_json(), ensure_ascii=False, separators=(",", ":"))
        line = (
            f"- {cp.saved.replace('T', ' ')} · #{seq} · {status} · {task} — {step} → {next} "
            f"{HISTORY_MARK}{record} %%\n"
        )
        logged = False
        if keys_home is not None and (old is None or old.status != status or old.task != task):
            # the entry first: a failed append writes nothing; a retry reuses an entry that landed
            logged = True
            _log(
                vault,
                keys_home,
                agent,
                "checkpoint",
                f"checkpoint {status}: {task} — {step}",
                f"Next: {next}\n\nSee [[agents/{agent}/checkpoint]].",
                once=True,
            )
        if not hist.exists():
            with contextlib.suppress(FileExistsError):
                durable.create_exclusive(hist, _HISTORY_HEAD.format(agent=agent).encode())
        before = hist.stat().st_size
        try:
            durable.append(hist, _complete_line(hist) + line.encode("utf-8"))
            _sweep_temp_files(path)
            durable.replace(path, render(cp).encode("utf-8"))
        except OSError:
            with contextlib.suppress(OSError):  # the history names no version the note never held
                os.truncate(hist, before)
            raise
    return cp, logged


def _sweep_temp_files(path: Path) -> None:
    """Remove temp files a writer killed before its rename left behind (the caller holds the lock)."""
    prefix = f".{path.name}."
    for name in os.listdir(path.parent):
        if name.startswith(prefix) and name.endswith(".tmp"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path.parent / name)


def _complete_line(path: Path) -> bytes:
    """A newline to end a line torn by a killed writer, so the next record starts on its own line."""
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return b""
        f.seek(size - 1)
        return b"" if f.read(1) == b"\n" else b"\n"


def history(vault: Vault, agent: str) -> list[Checkpoint]:
    """Every saved version, oldest first (a line torn by a killed writer is skipped)."""
    try:
        text = history_path(vault, check_name(agent)).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    out = []
    for line in text.split("\n"):
        data = _history_record(line)
        if data is not None:
            try:
                out.append(Checkpoint.from_json(data))
            except (KeyError, TypeError, ValueError):
                continue
    return out


def epoch(ts: str) -> float:
    """Seconds since 1970 of a ``2026-11-30T04:41:07Z`` time: ``calendar.timegm``'s count (the
    Gregorian calendar, UTC), without importing ``calendar`` (with ``datetime`` and ``locale``, ~3 ms of
    every session start that shows a checkpoint)."""
    try:
        year, month, day = int(ts[0:4]), int(ts[5:7]), int(ts[8:10])
        seconds = int(ts[11:13]) * 3600 + int(ts[14:16]) * 60 + int(ts[17:19])
    except ValueError:
        raise InputError(f"bad time {ts!r}: expected 2026-11-30T04:41:07Z") from None
    if not 1 <= month <= 12:
        raise InputError(f"bad time {ts!r}: expected 2026-11-30T04:41:07Z")
    # days since 1970-01-01, in 400-year eras of years starting in March (the leap day last)
    year -= month <= 2
    era, year_of_era = divmod(year, 400)
    day_of_year = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return float((era * 146097 + day_of_era - 719468) * 86400 + seconds)


def age_seconds(cp: Checkpoint, now: float | None = None) -> float:
    return (time.time() if now is None else now) - epoch(cp.saved)


def probable_crash(
    cp: Checkpoint, stale_minutes: float, *, last_activity: str | None = None, now: float | None = None
) -> bool:
    """An ``in-progress`` checkpoint with no activity (save, or a later log entry) for too long."""
    if cp.status != "in-progress":
        return False
    age = age_seconds(cp, now)
    if last_activity and last_activity > cp.saved:
        age = min(age, (time.time() if now is None else now) - epoch(last_activity))
    return age >= stale_minutes * 60


def all_checkpoints(vault: Vault) -> dict[str, Checkpoint]:
    out: dict[str, Checkpoint] = {}
    if not vault.agents_dir.is_dir():
        return out
    for child in sorted(vault.agents_dir.iterdir()):
        if (child / "checkpoint.md").is_file():
            try:
                cp = load(vault, child.name)
            except InputError:
                continue
            if cp is not None:
                out[child.name] = cp
    return out


def resume(vault: Vault, agent: str, keys_home: Path | None = None) -> dict[str, Any]:
    """What a new session needs: the checkpoint and every log entry written since it was saved.

    A resumed ``in-progress`` checkpoint is logged (``resume`` entry) when ``keys_home`` is given.
    """
    from ..ledger import log
    from ..storage import entries

    _known_agent(vault, agent)
    cp = load(vault, agent)
    if cp is None:
        raise NotFoundError(f"{agent} has no checkpoint yet (nexus checkpoint save --agent {agent} …)")
    floor = entries.encode_id(int(epoch(cp.saved) * 1000), 0)
    since = [loc for loc in log.iter_entries(vault) if loc.entry.id >= floor]
    resumed = None
    if keys_home is not None and cp.status == "in-progress":
        resumed = _log(
            vault,
            keys_home,
            agent,
            "resume",
            f"resumed {cp.task} after: {cp.step}",
            f"Next: {cp.next}\n\nFrom [[agents/{agent}/checkpoint]] (version {cp.seq}).",
        )
    return {"checkpoint": cp, "since": since, "resume_entry": resumed}


def _log(
    vault: Vault, keys_home: Path, agent: str, type: str, summary: str, body: str, *, once: bool = False
) -> Any:
    from ..keys import identity
    from ..ledger import log, pairs

    signer = identity.load_signer(vault, keys_home, agent)
    trust = Trust(keys_home)  # (the pins live beside the keys)
    if once:
        return pairs.append_once(
            vault, signer, channel="checkpoints", type=type, summary=summary[:200], body=body, trust=trust
        )
    return log.append(
        vault, signer, channel="checkpoints", type=type, summary=summary[:200], body=body, trust=trust
    ).located
