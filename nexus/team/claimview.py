"""The claims that hold, as the last reader of the log left them in ``.nexus/claims.json``, and how a
path is matched against a claim's pattern. The standard library only: the pre-tool hook, which runs
before every edit, answers from this when no segment changed since (``claimlog.py`` reads the log
otherwise, and writes the file).
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

FILE = "claims.json"
TASK = "task:"


@lru_cache(maxsize=1024)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A pattern as a regular expression: ``*`` and ``?`` within a path part, ``**`` any number of
    parts, and whatever lies under what it names."""
    out = []
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append("(?:.*)" if last else "(?:[^/]+/)*")
            continue
        piece = "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in part)
        out.append(piece + ("" if last else "/"))
    return re.compile("".join(out) + "(?:/.*)?")


def matches(pattern: str, path: str) -> bool:
    """``path`` (relative to the project, ``/``-separated) is one ``pattern`` names or lies under it."""
    if pattern.startswith(TASK) or path.startswith(TASK):
        return pattern == path
    return glob_regex(pattern).fullmatch(path) is not None


def holding(state: Path, log_dir: Path) -> list[list[Any]] | None:
    """The claims that held when ``claims.json`` was written (``[id, agent, project, [patterns], mode,
    expires ms]`` each), when every segment still has the size it was read at; None when the log moved
    on since (or the file is missing or of another shape): read the log then."""
    try:
        raw = json.loads((state / FILE).read_bytes())
        marks, held = raw["marks"], raw["holding"]
        names = sorted(n[:-3] for n in os.listdir(log_dir) if n.endswith(".md") and _segment(n[:-3]))
        if names != sorted(marks):
            return None
        for name in names:
            if os.stat(log_dir / f"{name}.md").st_size != marks[name][3]:
                return None
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    return held if isinstance(held, list) else None


def _segment(name: str) -> bool:
    return len(name) == 7 and name[4] == "-" and name[:4].isdigit() and name[5:].isdigit()


def exclusive_holder(held: list[list[Any]], folders: list[Path], path: Path, agent: str, now_ms: int) -> bool:
    """Whether another agent's exclusive claim among ``held``, still unexpired, names ``path`` (in the
    project of one of ``folders``, its ancestors)."""
    for _id, holder, project, patterns, mode, expires in held:
        if holder == agent or mode != "exclusive" or expires <= now_ms:
            continue
        for folder in folders:
            if folder.name == project:
                rel = path.relative_to(folder).as_posix()
                if any(matches(p, rel) for p in patterns if not p.startswith(TASK)):
                    return True
    return False
