"""Merging nexus's entries into a runtime's own configuration files, never clobbering the rest.

Each merge is a pure function from the file's current text (``None`` when it does not exist) to its
new text. It keeps every entry the user already had; it refuses (``InputError``, one line naming the
file) a file it cannot parse rather than overwrite it. Formats: JSON, JSON5 read (OpenClaw; written
back as JSON, which is JSON5), TOML through ``tomlkit`` (comments and order kept), YAML (PyYAML; the
values are kept, comments are not — the backup keeps the original) and a marked block in a Markdown
file (``<!-- nexus:begin -->`` … ``<!-- nexus:end -->``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import InputError

Edit = Callable[[dict[str, Any]], None]  # changes the parsed document in place

BLOCK_BEGIN = "<!-- nexus:begin (written by `nexus setup`; edit outside this block) -->"
BLOCK_END = "<!-- nexus:end -->"


def _refuse(path: Path, kind: str, err: Exception) -> InputError:
    detail = " ".join(str(err).split())[:160]
    return InputError(f"{path} is not valid {kind} ({detail}); fix it or move it aside, nothing was changed")


def json_merge(path: Path, edit: Edit, *, json5: bool = False) -> Callable[[str | None], str]:
    def merge(old: str | None) -> str:
        data: Any = {}
        if old is not None and old.strip():
            try:
                if json5:
                    import json5 as json5_mod

                    data = json5_mod.loads(old)
                else:
                    data = json.loads(old)
            except ValueError as err:
                raise _refuse(path, "JSON5" if json5 else "JSON", err) from None
        if not isinstance(data, dict):
            raise InputError(f"{path} does not hold a JSON object; nothing was changed")
        before = copy.deepcopy(data)
        _edited(path, edit, data)
        if old is not None and data == before:
            return old  # nothing to add: the file keeps its own formatting (and comments)
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    return merge


def toml_merge(path: Path, edit: Callable[[Any], None]) -> Callable[[str | None], str]:
    def merge(old: str | None) -> str:
        import tomlkit
        from tomlkit.exceptions import TOMLKitError

        try:
            doc = tomlkit.parse(old or "")
        except TOMLKitError as err:
            raise _refuse(path, "TOML", err) from None
        before = doc.unwrap()
        _edited(path, edit, doc)
        if old is not None and doc.unwrap() == before:
            return old
        return tomlkit.dumps(doc)

    return merge


def yaml_merge(path: Path, edit: Edit) -> Callable[[str | None], str]:
    def merge(old: str | None) -> str:
        import yaml

        try:
            data = yaml.safe_load(old or "") or {}
        except yaml.YAMLError as err:
            raise _refuse(path, "YAML", err) from None
        if not isinstance(data, dict):
            raise InputError(f"{path} does not hold a YAML mapping; nothing was changed")
        before = json.dumps(data, sort_keys=True, default=str)
        _edited(path, edit, data)
        if old is not None and json.dumps(data, sort_keys=True, default=str) == before:
            return old
        return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))

    return merge


def block_merge(body: str) -> Callable[[str | None], str]:
    """Put ``body`` between nexus's markers: replace the block if there is one, else append it."""
    block = f"{BLOCK_BEGIN}\n{body.strip()}\n{BLOCK_END}\n"

    def merge(old: str | None) -> str:
        text = old or ""
        start, end = text.find(BLOCK_BEGIN), text.find(BLOCK_END)
        if start != -1 and end > start:
            return text[:start] + block + text[end + len(BLOCK_END) :].lstrip("\n")
        sep = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        return text + sep + block

    return merge


def exact(content: str) -> Callable[[str | None], str]:
    """A file nexus owns entirely (a hook handler, a plugin): its content, whatever was there."""
    return lambda _old: content


def hook_groups(
    current: Any, command: str, marker: str, extra: dict[str, Any] | list[dict[str, Any]] | None = None
) -> list[Any]:
    """A Claude-style hook list for one event with nexus's command in it exactly once (once per group
    when ``extra`` is a list: one group for each, a matcher apiece): groups holding a command with
    ``marker`` (an earlier nexus wiring for the same agent and event) are replaced; every other group
    is kept as it was."""
    groups: list[Any] = list(current) if isinstance(current, list) else []
    hook = {"type": "command", "command": command, "timeout": 30}
    extras = extra if isinstance(extra, list) else [extra or {}]
    ours = [{"hooks": [dict(hook)], **x} for x in extras]

    def nexus_group(g: Any) -> bool:
        return isinstance(g, dict) and any(
            isinstance(h, dict) and marker in str(h.get("command", "")) for h in g.get("hooks", []) or []
        )

    if [g for g in groups if nexus_group(g)] == ours:
        return groups  # (as it is: the user's groups keep their places around ours)
    return [*(g for g in groups if not nexus_group(g)), *ours]


def table(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data[key]``, created when missing; a value of another kind is refused, never replaced."""
    if key not in data or data[key] is None:
        data[key] = {}
    value = data[key]
    if not isinstance(value, dict):
        raise InputError(f"`{key}` is a {type(value).__name__}, not a table of settings")
    return value


def _edited(path: Path, edit: Callable[[Any], None], doc: Any) -> None:
    try:
        edit(doc)
    except InputError as err:
        raise InputError(f"{path}: {err}; nothing was changed") from None


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read {path}: {err}") from None
