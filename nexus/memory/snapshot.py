"""The frozen memory snapshot: both stores (an agent's MEMORY.md, the shared USER.md) as the block a
runtime puts in its system prompt (Hermes's frame and usage header), each entry scanned again and
what the scan flags held back; cached under ``.nexus/cache/`` for the brief, whose memory slot it
also makes (with the memory index). The stores themselves are ``bounded.py``'s.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# records' types are named through the package (as in bounded.py): the memory family loads when a
# snapshot is made, not when the brief's cached one is read
from .. import records
from ..errors import InputError, VaultError
from ..storage import durable, markers
from ..storage.text import check_name
from ..storage.vault import Vault
from ..team.hints import say
from . import facts, scan
from .bounded import BAR, DELIM, encode, parse, read_raw, result, store


def render_block(target: str, entries: Sequence[str], limit: int) -> str:
    """Hermes's system-prompt block: a 46-``═`` frame, a usage header, the entries."""
    if not entries:
        return ""
    content = DELIM.join(entries)
    current = len(content)
    pct = min(100, current * 100 // limit) if limit > 0 else 0
    over = " ⚠ OVER BUDGET" if current > limit else ""
    name = "USER PROFILE (who the user is)" if target == "user" else "MEMORY (your personal notes)"
    return f"{BAR}\n{name} [{pct}% — {current:,}/{limit:,} chars{over}]\n{BAR}\n{content}"


@dataclass(frozen=True)
class Snapshot:
    """An agent's frozen memory for a session: the text, both files' results, and what was held back."""

    agent: str
    text: str
    memory: records.MemoryResult
    user: records.MemoryResult
    blocked: tuple[str, ...]  # what was held back, as "FILE: rule, …"

    @property
    def warnings(self) -> list[str]:
        return [w for w in (self.memory.warning, self.user.warning) if w]

    def to_json(self) -> dict[str, object]:
        return {
            "agent": self.agent,
            "text": self.text,
            "memory": self.memory.to_json(),
            "user": self.user.to_json(),
            "blocked": list(self.blocked),
            "warnings": self.warnings,
        }


def snapshot(vault: Vault, agent: str, *, memory_limit: int, user_limit: int) -> Snapshot:
    """Both stores as the block a runtime puts in its system prompt, each entry scanned again."""
    check_name(agent)
    blocks: list[str] = []
    blocked: list[str] = []
    results: list[records.MemoryResult] = []
    for target, limit in (("memory", memory_limit), ("user", user_limit)):
        rel = "USER.md" if target == "user" else f"agents/{agent}/MEMORY.md"
        try:  # read what can be read: one store that cannot be read never hides the other
            st = store(vault, target, agent)
            raw = read_raw(st)
            if markers.regions(encode(raw)):
                raise InputError(
                    "it holds git conflict markers (a merge without the nexus driver): `nexus git resolve`"
                )
            entries = list(dict.fromkeys(parse(raw)))
        except (InputError, VaultError) as err:
            blocked.append(f"{rel}: not shown: {err}")
            results.append(
                records.MemoryResult(
                    target,
                    agent if target == "memory" else None,
                    rel,
                    f"not shown: {err}",
                    (),
                    0,
                    limit,
                    False,
                )
            )
            continue
        shown = []
        for e in entries:
            found = scan.findings(e, vault.root)
            if found:
                blocked.append(f"{vault.rel(st.path)}: " + ", ".join(f.rule for f in found))
                shown.append(scan.blocked_placeholder(vault.rel(st.path), found))
            else:
                shown.append(e)
        block = render_block(target, shown, limit)
        if block:
            blocks.append(block)
        results.append(result(vault, st, "", entries, limit, False, None))
    return Snapshot(agent, "\n\n".join(blocks), results[0], results[1], tuple(blocked))


def _stamp(path: Path) -> list[int]:
    try:
        st = path.stat()
    except FileNotFoundError:
        return [0, 0]
    return [st.st_ino, st.st_mtime_ns, st.st_size]


def cached_snapshot(vault: Vault, agent: str, *, memory_limit: int, user_limit: int) -> dict[str, object]:
    """``snapshot(...).to_json()``, cached under ``.nexus/cache/`` by the stamps of both stores and the
    rule files, so the brief (a hot path) scans only when something changed."""
    check_name(agent)
    deps = [
        store(vault, "memory", agent).path,
        vault.root / "USER.md",
        vault.root / scan.VAULT_RULES_FILE,
        Path(scan.__file__).parent / scan.RULES_FILE,
    ]
    key = [[_stamp(p) for p in deps], memory_limit, user_limit]
    cache = vault.state / "cache" / f"memory-snapshot-{agent}.json"
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
        if data.get("key") == key:
            return dict(data["snapshot"])
    except (FileNotFoundError, ValueError, KeyError, TypeError, AttributeError):
        pass
    snap = snapshot(vault, agent, memory_limit=memory_limit, user_limit=user_limit).to_json()
    durable.replace(cache, json.dumps({"key": key, "snapshot": snap}).encode("utf-8"), durable=False)
    return snap


def brief_section(
    vault: Vault, agent: str, limit: int, *, memory_limit: int, user_limit: int, surface: str = "cli"
) -> records.BriefSection | None:
    """The brief's memory slot: usage warnings, the snapshot, the memory index (cut to ``limit``).
    ``memory_limit`` and ``user_limit``: the settings' ``memory_chars`` and ``user_chars``."""
    snap = cached_snapshot(vault, agent, memory_limit=memory_limit, user_limit=user_limit)
    warnings = snap.get("warnings")
    parts: list[str] = [f"⚠ {w}" for w in warnings] if isinstance(warnings, list) else []
    if snap.get("text"):
        parts.append(str(snap["text"]))
    index = facts.index_text(vault)
    lines = [line for line in (index or "").split("\n") if line.startswith("- [[")]
    if lines:
        parts.append(
            f"Memory index ({len(lines)} fact{'s' if len(lines) != 1 else ''}; open a note with "
            f"{say(surface, 'fact')}):\n" + "\n".join(lines)
        )
    if not parts:
        return None
    text = "\n\n".join(parts)
    if len(text) > limit:
        hint = f"\n… (cut; the whole snapshot: {say(surface, 'snapshot', agent=agent)})"
        text = text[: max(0, limit - len(hint))] + hint
    return records.BriefSection("memory", "Your memory", text)
