"""Search relevance: a small vault's worth of entries, decisions and notes (English, Spanish, Italian),
queries a person or an agent would type, and the hits that should come first.

    .venv/bin/python benchmarks/relevance.py [--json]

Prints precision at 5 and MRR over the set. tests/test_search_relevance.py plays the same set and
holds the figures above a floor, so a change that makes search worse fails.

* precision at 5: of the top five hits, the share that are relevant, divided by the most that could
  be (``min(5, relevant)``), so a query with one right answer found in the top five scores 1.0;
* MRR: the mean over queries of 1 / rank of the first relevant hit (0 when none is in the top 10).

A hit counts as the document it came from: a log entry by the label of the entry, a note section by
the label of its note. A superseded decision is never relevant when the query is about what holds now.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# label -> (agent, channel, type, summary, body)
ENTRIES: dict[str, tuple[str, str, str, str, str | None]] = {
    "tok-q": (
        "ella",
        "security",
        "question",
        "Where do the API tokens live?",
        "Plain files in ~/.config are readable by any process.",
    ),
    "tok-d1": ("ella", "security", "decision", "D-0001: API tokens live in the OS keychain", None),
    "tok-ci": (
        "lyra",
        "ci",
        "note",
        "CI runners have no keychain",
        "The keychain is unavailable on headless CI machines; jobs fail to start.",
    ),
    "tok-d2": (
        "lyra",
        "security",
        "decision",
        "D-0002: Tokens: keychain locally, CI secret store on CI",
        None,
    ),
    "pag-1": (
        "ella",
        "api",
        "note",
        "The invoices endpoint paginates with cursors",
        "Offsets broke when invoices were deleted mid-scan; a cursor is the last id seen.",
    ),
    "pag-2": ("lyra", "api", "question", "Should the customers list paginate too?", None),
    "pag-3": ("ella", "api", "note", "Pagination limit is 100 per page", "Larger pages time out."),
    "cache": (
        "lyra",
        "build",
        "note",
        "Build cache moved to the shared volume",
        "Warm builds take 40 s instead of 6 minutes.",
    ),
    "flaky": (
        "ella",
        "build",
        "correction",
        "The flaky watcher test was a race, not the disk",
        "It waited on a sleep; now it waits on the event.",
    ),
    "deploy": (
        "lyra",
        "ops",
        "handoff",
        "Deploy to staging done; production tomorrow",
        "Migrations ran cleanly; rollback script tested.",
    ),
    "es-fact": (
        "ella",
        "facturas",
        "note",
        "Las facturas se paginan por cursor",
        "La paginación por desplazamiento fallaba cuando se borraban facturas.",
    ),
    "es-err": ("lyra", "facturas", "correction", "Corrección: el límite de páginas es 100, no 50", None),
    "es-clave": (
        "ella",
        "seguridad",
        "note",
        "Las claves de la API se guardan en el llavero del sistema",
        "Nunca en archivos de texto.",
    ),
    "it-pars": (
        "lyra",
        "parser",
        "note",
        "Il parser è stato portato alla nuova grammatica",
        "Le regole della grammatica sono state riscritte; mancano i test delle espressioni.",
    ),
    "it-ril": (
        "ella",
        "ops",
        "note",
        "Rilascio previsto per giovedì",
        "Il rilascio dipende dai test di integrazione.",
    ),
    "it-cache": (
        "lyra",
        "build",
        "note",
        "La cache delle compilazioni è condivisa",
        "Compilare di nuovo richiede quaranta secondi.",
    ),
    "noise-1": ("max", "general", "note", "Lunch order for Friday", "Pizza for everyone."),
    "noise-2": ("max", "general", "note", "Office wifi password rotated", "Ask sam for the new one."),
    "noise-3": ("max", "general", "note", "Team offsite dates", "Second week of March."),
    "noise-4": (
        "max",
        "general",
        "note",
        "Token bucket rate limiter for the webhook sender",
        "Bursts of 20, refilled at 5 per second.",
    ),
}

NOTES: dict[str, tuple[str, str]] = {
    "n-release": (
        "notes/release-checklist.md",
        "# Release checklist\n\n## Steps\n1. Bump the version\n2. Tag and push\n3. Announce in #ops\n",
    ),
    "n-parser": (
        "notes/parser-port.md",
        "# Parser port\n\n## Status\nThe lexer is ported; the grammar rules are next.\n\n"
        "## Risks\nOperator precedence differs between the old and the new grammar.\n",
    ),
    "n-onboard": (
        "notes/onboarding.md",
        "# Onboarding\n\n## Accounts\nEvery newcomer needs a keychain entry for the VPN.\n",
    ),
    "n-guia": (
        "notes/guia-facturacion.md",
        "# Guía de facturación\n\n## Paginación\nCada página devuelve como máximo 100 facturas; "
        "el cursor es el último identificador.\n",
    ),
    "n-rilascio": (
        "notes/rilascio.md",
        "# Procedura di rilascio\n\n## Passi\nAggiornare la versione, creare il tag, "
        "pubblicare le note di rilascio.\n",
    ),
}

# Decisions: label -> (author, title, decision, rationale, supersedes label)
DECISIONS: dict[str, tuple[str, str, str, str, str | None]] = {
    "D1": (
        "ella",
        "API tokens live in the OS keychain",
        "Store every API token in the OS keychain.",
        "Plain files leak to any process; the keychain asks the user.",
        None,
    ),
    "D2": (
        "lyra",
        "Tokens: keychain locally, CI secret store on CI",
        "Locally the OS keychain; on CI the runner's secret store.",
        "CI machines have no keychain, so D-0001 cannot hold there.",
        "D1",
    ),
    "D3": (
        "ella",
        "Invoices paginate with cursors",
        "Every list endpoint paginates with an opaque cursor.",
        "Offsets skip rows when rows are deleted during a scan.",
        None,
    ),
}

# (query, relevant labels, best first)
QUERIES: list[tuple[str, list[str]]] = [
    ("keychain", ["D2", "tok-d2", "tok-ci"]),
    ("why keychain", ["D2", "tok-d2", "tok-ci"]),
    ("where do tokens live", ["D2", "tok-d2", "tok-q"]),
    ("paginate", ["D3", "pag-1", "pag-2"]),
    ("invoices paginate", ["D3", "pag-1"]),
    ("pagination limit", ["pag-3", "es-err"]),
    ("cursor pagination offsets", ["D3", "pag-1"]),
    ("flaky test race", ["flaky"]),
    ("build cache volume", ["cache"]),
    ("deploy staging rollback", ["deploy"]),
    ("release steps", ["n-release"]),
    ("grammar rules lexer", ["n-parser"]),
    ("VPN keychain newcomer", ["n-onboard"]),
    ("facturas paginación", ["es-fact", "n-guia"]),
    ("factura paginada", ["es-fact", "n-guia"]),
    ("llavero claves", ["es-clave"]),
    ("límite de páginas", ["es-err", "n-guia"]),
    ("grammatica parser", ["it-pars"]),
    ("rilasci", ["it-ril", "n-rilascio"]),
    ("cache compilazione", ["it-cache"]),
    ("token rate limiter", ["noise-4"]),
    ("CI secret store", ["D2", "tok-d2"]),
]

LANGUAGES = ("en", "es", "it")
SUPERSEDED = {"D1", "tok-d1"}  # D-0001 and its entry: a hit here above D-0002's is a dead decision first
REPLACEMENT = {"D2", "tok-d2"}


def build(root: Path, keys: Path) -> tuple[object, dict[str, str]]:
    """The relevance vault under ``root``; returns (vault, {entry id or note path: label})."""
    from nexus.keys import identity
    from nexus.ledger import log
    from nexus.project import decisions
    from nexus.storage.vault import init

    vault, _ = init(root)
    cfg = vault.root / "nexus.md"
    text = cfg.read_text(encoding="utf-8")
    cfg.write_text(text.replace("---\n", "---\nsearch_languages: [en, es, it]\n", 1), encoding="utf-8")
    for name in ("ella", "lyra", "max"):
        identity.add(vault, keys, name)
    signers = {n: identity.load_signer(vault, keys, n) for n in ("ella", "lyra", "max")}
    labels: dict[str, str] = {}
    ids: dict[str, str] = {}
    for label, (agent, channel, type_, summary, body) in ENTRIES.items():
        if label in ("tok-d1", "tok-d2"):
            continue  # written by decide()
        e = log.append(
            vault, signers[agent], channel=channel, type=type_, summary=summary, body=body
        ).located.entry
        labels[e.id] = label
        ids[label] = e.id
        if label == "tok-q":
            d = DECISIONS["D1"]
            one = decisions.decide(
                vault, signers[d[0]], title=d[1], decision=d[2], rationale=d[3], refs=(e.id,)
            )
            labels[one.path], labels[str(one.entry)] = "D1", "tok-d1"
        if label == "tok-ci":
            d = DECISIONS["D2"]
            two = decisions.decide(
                vault,
                signers[d[0]],
                title=d[1],
                decision=d[2],
                rationale=d[3],
                supersedes="D-0001",
                refs=(e.id,),
            )
            labels[two.path], labels[str(two.entry)] = "D2", "tok-d2"
    d = DECISIONS["D3"]
    three = decisions.decide(
        vault, signers[d[0]], title=d[1], decision=d[2], rationale=d[3], refs=(ids["pag-1"],)
    )
    labels[three.path] = "D3"
    labels[str(three.entry)] = "D3"  # the decision's own entry is the same document for a reader
    for label, (rel, body) in NOTES.items():
        path = vault.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
        labels[rel] = label
    return vault, labels


def label_of(hit: object, labels: dict[str, str]) -> str | None:
    entry_id = getattr(hit, "entry_id", None)
    if entry_id and entry_id in labels:
        return labels[entry_id]
    return labels.get(getattr(hit, "path", ""))


def evaluate(vault: object, labels: dict[str, str]) -> dict[str, Any]:
    import inspect

    from nexus import search

    extra: dict[str, object] = {}
    if "languages" in inspect.signature(search.search).parameters:  # (absent before issue 13)
        extra["languages"] = LANGUAGES
    per_query: list[dict[str, Any]] = []
    for text, relevant in QUERIES:
        hits = search.search(vault, text, limit=10, **extra)  # type: ignore[arg-type]
        ranked: list[str] = []
        for hit in hits:
            label = label_of(hit, labels)
            if label is not None and label not in ranked:
                ranked.append(label)
        top5 = ranked[:5]
        p5 = sum(1 for x in top5 if x in relevant) / min(5, len(relevant))
        rr = next((1 / (i + 1) for i, x in enumerate(ranked) if x in relevant), 0.0)
        dead = [i for i, x in enumerate(ranked) if x in SUPERSEDED]
        live = [i for i, x in enumerate(ranked) if x in REPLACEMENT]
        above = bool(dead and live and min(dead) < min(live))
        per_query.append(
            {
                "query": text,
                "p5": round(p5, 3),
                "rr": round(rr, 3),
                "top": ranked[:5],
                "superseded_above_replacement": above,
            }
        )
    n = len(per_query)
    return {
        "queries": n,
        "precision_at_5": round(sum(q["p5"] for q in per_query) / n, 3),
        "mrr": round(sum(q["rr"] for q in per_query) / n, 3),
        "superseded_above_replacement": sum(1 for q in per_query if q["superseded_above_replacement"]),
        "per_query": per_query,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nexus-relevance-") as tmp:
        vault, labels = build(Path(tmp) / "vault", Path(tmp) / "keys")
        result = evaluate(vault, labels)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    for q in result["per_query"]:
        print(f"  p@5 {q['p5']:.2f}  rr {q['rr']:.2f}  {q['query']!r:32} → {', '.join(q['top'])}")
    print(
        f"precision@5 {result['precision_at_5']:.3f}   MRR {result['mrr']:.3f}   "
        f"superseded above its replacement in {result['superseded_above_replacement']} queries   "
        f"({result['queries']} queries)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
