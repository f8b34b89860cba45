"""Issue 13, item 18: a fresh install printed ~40 lines of setuptools warning because a folder of the
vault template (memory/) was importable but not in the `packages` list. Every folder shipped inside a
package must be listed, so the build has nothing to warn about and nothing is left out."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_folder_shipped_is_a_listed_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(config["packages"])
    expected = set()
    for pkg in ("nexus", "nexus.vault_template"):
        base = ROOT / pkg.replace(".", "/")
        for folder in [base, *(p for p in base.rglob("*") if p.is_dir())]:
            rel = folder.relative_to(base)
            if "__pycache__" in rel.parts or any(part.startswith(".") for part in rel.parts):
                continue
            expected.add(".".join([pkg, *rel.parts]))
    assert expected <= listed, f"folders shipped but not listed in packages: {sorted(expected - listed)}"
    # and the template's Markdown is shipped from each of them
    data = config["package-data"]
    assert "*.md" in data["nexus.vault_template"] and "*.md" in data["nexus.vault_template.memory"]
