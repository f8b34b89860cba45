"""Frontmatter notes: YAML bombs and odd properties get a clear error and change nothing."""

from __future__ import annotations

import pytest
from conftest import Env

from nexus.errors import InputError
from nexus.storage import notes

BOMB = (
    "---\n"
    'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
    "d: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "---\nbody\n"
)


def test_yaml_bomb_is_refused() -> None:
    with pytest.raises(InputError, match="anchors are not allowed"):
        notes.parse(BOMB, "bomb.md")


def test_a_bare_alias_is_refused() -> None:
    with pytest.raises(InputError, match=r"invalid frontmatter|aliases"):
        notes.parse("---\na: *x\n---\n", "alias.md")


def test_yaml_12_booleans_as_obsidian_reads_them() -> None:
    props, body = notes.parse("---\non: yes\nno: off\ndone: true\n---\ntext\n")
    assert props == {"on": "yes", "no": "off", "done": True}
    assert body == "text"


def test_non_text_property_names_and_bad_yaml_are_clear_errors() -> None:
    with pytest.raises(InputError, match="property names must be text"):
        notes.parse("---\n1: a\n---\n")
    with pytest.raises(InputError, match="invalid frontmatter"):
        notes.parse("---\na: [\n---\n")
    with pytest.raises(InputError, match="larger than"):
        notes.parse("---\na: " + "x" * (70 * 1024) + "\n---\n")


def test_a_bomb_in_the_settings_note_is_refused_by_every_command(env: Env) -> None:
    marker = env.vault.root / "nexus.md"
    original = marker.read_text(encoding="utf-8")
    marker.write_text(BOMB, encoding="utf-8")
    run = env.run("agent", "add", "nova", check=False)
    assert run.returncode != 0
    assert "anchors are not allowed" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (env.vault.root / "agents" / "nova").exists()
    marker.write_text(original, encoding="utf-8")
