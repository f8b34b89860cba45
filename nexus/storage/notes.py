"""Markdown notes with frontmatter properties: read safely, write atomically.

Properties are YAML, parsed with a safe loader that refuses anchors and aliases (so a "billion laughs"
YAML bomb is an error, not a hang) and bounded in size. Writing renders block-style YAML that Obsidian's
property editor shows as properties.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import frontmatter
import yaml

from ..errors import InputError
from . import durable
from .text import TEXT_KEYS

MAX_NOTE_BYTES = 1024 * 1024
MAX_FRONTMATTER_BYTES = 64 * 1024


class _NoAliasLoader(yaml.SafeLoader):
    """A safe loader that refuses anchors/aliases (YAML bombs) outright."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.constructor.ConstructorError(
                None, None, "YAML aliases are not allowed in nexus notes", event.start_mark
            )
        event = self.peek_event()  # type: ignore[no-untyped-call]
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise yaml.constructor.ConstructorError(
                None, None, "YAML anchors are not allowed in nexus notes", event.start_mark
            )
        return super().compose_node(parent, index)


# YAML 1.2 booleans, as Obsidian reads them: only true/false. PyYAML's YAML 1.1 default would turn a
# property named `on`, `off`, `yes` or `no` into a boolean key.
_NoAliasLoader.yaml_implicit_resolvers = {
    first: [r for r in resolvers if r[0] != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_NoAliasLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)

_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"


def _as_text(node: Any) -> None:
    """Read a text property's plain scalars (and list items) as the text written, not a number,
    date or boolean; an empty or ``null`` value stays null."""
    if isinstance(node, yaml.ScalarNode):
        if node.tag not in (_STR, _NULL) and node.style is None:
            node.tag = _STR
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _as_text(item)


def _construct_mapping(self: _NoAliasLoader, node: Any, deep: bool = False) -> Any:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value in TEXT_KEYS:
                _as_text(value_node)
    return yaml.SafeLoader.construct_mapping(self, node, deep=deep)


_NoAliasLoader.construct_mapping = _construct_mapping  # type: ignore[assignment,method-assign]


class _Handler(frontmatter.YAMLHandler):  # type: ignore[misc,name-defined]
    def load(self, fm: str, **kwargs: Any) -> Any:
        if len(fm.encode("utf-8")) > MAX_FRONTMATTER_BYTES:
            raise InputError(f"frontmatter is larger than {MAX_FRONTMATTER_BYTES} bytes")
        return yaml.load(fm, Loader=_NoAliasLoader)  # a SafeLoader subclass


def parse(text: str, source: str = "note") -> tuple[dict[str, Any], str]:
    """Split a note's text into (properties, body). Bad YAML raises InputError naming ``source``."""
    if len(text.encode("utf-8")) > MAX_NOTE_BYTES:
        raise InputError(f"{source} is larger than {MAX_NOTE_BYTES} bytes")
    try:
        props, content = frontmatter.parse(text, handler=_Handler())
    except InputError:
        raise
    except yaml.YAMLError as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(f"{source}: invalid frontmatter: {first}") from None
    except RecursionError:  # (PyYAML composes recursively: deep nesting below the size cap)
        raise InputError(f"{source}: invalid frontmatter: nested too deeply") from None
    if not isinstance(props, dict):
        raise InputError(f"{source}: frontmatter is not a set of properties")
    bad = [k for k in props if not isinstance(k, str)]
    if bad:
        raise InputError(f"{source}: property names must be text, not {bad[0]!r}")
    return dict(props), str(content)


def read(path: Path, vault_root: Path | None = None) -> tuple[dict[str, Any], str]:
    source = str(path.relative_to(vault_root)) if vault_root else str(path)
    return parse(path.read_text(encoding="utf-8"), source)


def render(props: dict[str, Any], body: str) -> str:
    """A note's text: YAML frontmatter block, then the body (ending with a newline)."""
    fm = yaml.safe_dump(props, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)
    body = body if body.endswith("\n") else body + "\n"
    return f"---\n{fm}---\n{body}"


def write(path: Path, props: dict[str, Any], body: str) -> None:
    """Replace the note atomically and durably."""
    durable.replace(path, render(props, body).encode("utf-8"))
