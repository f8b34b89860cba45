"""The layers of ``docs/architecture.md`` hold: no import cycle, and no import reaching up a layer but
the few listed here, each with its reason. Every module is parsed (``ast``), so imports made inside
functions count as much as those at the top; only imports under ``if TYPE_CHECKING:`` (never run) do
not."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "nexus"

# Bottom to top: a module imports from its own layer and the layers below. The modules directly in
# nexus/ (records, errors, settings, workspace…) are the lowest layer.
LAYERS = (
    "",
    "storage",
    "keys",
    "ledger",
    "project",
    "search",
    "memory",
    "team",
    "sync",
    "audit",
    "watch",
    "operations",
    "surfaces",
)

# (importer, imported): why it reaches up. Keep it short: a new entry needs a reason a reader accepts.
ALLOWED_UP = {
    ("nexus.__main__", "nexus.surfaces.program"): "`python -m nexus` is the `nexus` program",
    ("nexus.workspace", "nexus.storage.vault"): "an entry point's workspace opens the vault it names",
    ("nexus.ledger.log", "nexus.memory.scan"): "an append runs the safety scan on its body",
    ("nexus.search.verdicts", "nexus.memory.scan"): "an entry's hit is marked when the scan flags it",
    ("nexus.search.hits", "nexus.memory.scan"): "a section's hit is marked when the scan flags it",
    ("nexus.memory.snapshot", "nexus.team.hints"): "the brief's memory slot names the command to open a fact",
    ("nexus.search.proof", "nexus.audit.verify"): "an index build seals what verify proved",
    ("nexus.search.proof", "nexus.audit.verify_state"): "(the proof is verify's saved state)",
    ("nexus.sync.gitsync", "nexus.audit.verify_state"): "a sync refuses a merge that does not verify",
    ("nexus.team.handoff_window", "nexus.audit.verify_state"): "a handoff lists what verify finds",
}


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else 0


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(module: str) -> list[tuple[str, int]]:
    """The nexus modules ``module`` imports (anywhere in it) and the line of each import."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    visit_one(other)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.append((sub if sub in MODULES else target, node.lineno))
        elif isinstance(node, ast.Import):
            out.extend((alias.name, node.lineno) for alias in node.names)
        else:
            visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return [(t, line) for t, line in out if t in MODULES and t != module]


GRAPH = {m: imports(m) for m in MODULES}


def _reachable(module: str) -> set[str]:
    seen: set[str] = set()
    todo = [t for t, _ in GRAPH[module]]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(t for t, _ in GRAPH[m])
    return seen


def _cycles() -> list[list[str]]:
    """Each group of modules that reach one another through imports."""
    reach = {m: _reachable(m) for m in GRAPH}
    groups = {frozenset(n for n in reach[m] if m in reach[n]) for m in GRAPH if m in reach[m]}
    return sorted(sorted(g) for g in groups)


def test_the_parser_sees_every_kind_of_import() -> None:
    """The graph really holds top-level, relative, function-local and package imports."""
    assert "nexus.errors" in dict(GRAPH["nexus.surfaces.cli"])  # (top level, relative)
    handlers = dict(GRAPH["nexus.surfaces.commands"])
    assert any(t.startswith("nexus.watch") for t in handlers)  # (inside a handler function)
    assert ("nexus.ledger.check", 0) not in GRAPH["nexus.ledger.logfiles"]
    assert "nexus.ledger.check" in dict(GRAPH["nexus.ledger.logfiles"])  # (local, under a condition)
    assert len(MODULES) > 100


def test_no_import_cycle() -> None:
    cycles = _cycles()
    detail = [
        f"{' -> '.join(group)}: "
        + "; ".join(f"{m}:{line} imports {t}" for m in group for t, line in GRAPH[m] if t in group)
        for group in cycles
    ]
    assert not cycles, "import cycles (function-local imports included):\n" + "\n".join(detail)


def test_no_import_reaches_up_but_the_listed_few() -> None:
    up = {(m, t): line for m, found in GRAPH.items() for t, line in found if _layer(t) > _layer(m)}
    unlisted = [f"{m}:{line} imports {t}" for (m, t), line in sorted(up.items()) if (m, t) not in ALLOWED_UP]
    assert not unlisted, (
        "imports reaching up a layer (docs/architecture.md); move the code, pass the value in, or add "
        "the pair to ALLOWED_UP with its reason:\n" + "\n".join(unlisted)
    )
    stale = sorted(set(ALLOWED_UP) - set(up))
    assert not stale, f"ALLOWED_UP lists imports that no longer exist: {stale}"


def test_the_per_entry_check_sits_low_in_the_ledger() -> None:
    """Every reader imports the per-entry check: it reaches only keys/, storage/, the nexus/ modules
    and the two ledger modules that keep what it compares with (renames, the shadow)."""
    reached = _reachable("nexus.ledger.check")
    assert reached, "the check imports nothing?"
    above = sorted(m for m in reached if _layer(m) > LAYERS.index("keys"))
    assert above == ["nexus.ledger.renames", "nexus.ledger.shadow"], above
