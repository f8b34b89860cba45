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
    "lock": (
        "lyra",
        "ops",
        "note",
        "A lock file guards the release job",
        "Only one release runs at a time: the job takes flock on release.lock and a second one waits.",
    ),
    "backup": (
        "ella",
        "ops",
        "note",
        "Nightly database backups are copied to cold storage",
        "Snapshots older than thirty days are pruned.",
    ),
    "oncall": (
        "max",
        "ops",
        "note",
        "On-call rotation changes every Monday",
        "Pager alerts go to the engineer on duty.",
    ),
    "memleak": (
        "lyra",
        "build",
        "correction",
        "The worker leaked memory through an unbounded cache",
        "Results were never evicted: functools.lru_cache(maxsize=None) was the culprit.",
    ),
    "retry": (
        "ella",
        "api",
        "note",
        "HttpClient.send_with_retry backs off exponentially",
        "It waits 1, 2, 4 then 8 seconds before giving up.",
    ),
    "de-sich": (
        "max",
        "betrieb",
        "note",
        "Die Datenbank wird jede Nacht gesichert",
        "Die Sicherungen liegen drei Wochen im Archiv.",
    ),
    "de-urlaub": (
        "max",
        "team",
        "note",
        "Urlaubsanträge bitte zwei Wochen vorher einreichen",
        "Der Kalender des Teams zeigt, wer abwesend ist.",
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

# Queries that share no word (no stem, in any of the index's languages) with the note they should
# find: only meaning finds them. benchmarks/relevance.py checks that they share none.
PARAPHRASE: list[tuple[str, list[str]]] = [
    ("how do we prevent simultaneous deployments", ["lock"]),
    ("where are old DB dumps kept offsite", ["backup", "de-sich"]),
    ("who answers emergencies this week", ["oncall"]),
    ("why did the background process keep growing in RAM", ["memleak"]),
    ("credentials for automated pipelines", ["D2", "tok-d2"]),
    ("intermittent unit check caused by timing", ["flaky"]),
    ("shipping to the preproduction environment finished", ["deploy"]),
    ("what must a new hire set up on day one", ["n-onboard"]),
    ("prebuilt outputs kept across runs", ["cache", "it-cache"]),
    ("food for the end of the week", ["noise-1"]),
    ("throttling outgoing notifications", ["noise-4"]),
    ("breaking huge responses into smaller batches", ["pag-3", "D3"]),
]

# Spanish and German queries for English notes, and English queries for Spanish, Italian and German
# notes.
CROSS_LANGUAGE: list[tuple[str, list[str]]] = [
    ("¿cómo evitamos dos despliegues a la vez?", ["lock"]),
    ("copias de seguridad de la base de datos", ["backup", "de-sich"]),
    ("prueba inestable por una condición de carrera", ["flaky"]),
    ("¿quién está de guardia esta semana?", ["oncall"]),
    ("Wo werden die Zugangsschlüssel gespeichert?", ["D2", "tok-d2"]),
    ("Wer hat diese Woche Bereitschaftsdienst?", ["oncall"]),
    ("Speicherleck im Hintergrundprozess", ["memleak"]),
    ("Blättern durch die Rechnungsliste", ["D3", "pag-1", "es-fact", "n-guia"]),
    ("API keys are stored in the system keyring", ["es-clave", "D2", "tok-d2"]),
    ("release planned for Thursday", ["it-ril"]),
    ("the database is saved every night", ["de-sich", "backup"]),
    ("how to request vacation", ["de-urlaub"]),
]

# A code identifier with a paraphrase of the rest.
CODE_MIX: list[tuple[str, list[str]]] = [
    ("lru_cache made RAM balloon", ["memleak"]),
    ("send_with_retry delay between attempts", ["retry"]),
    ("flock prevents parallel shipping", ["lock"]),
    ("HttpClient gives up after how long", ["retry"]),
]

SETS: dict[str, list[tuple[str, list[str]]]] = {
    "word": QUERIES,
    "paraphrase": PARAPHRASE,
    "cross_language": CROSS_LANGUAGE,
    "code_mix": CODE_MIX,
}
MODES = ("text", "meaning", "hybrid")

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


def evaluate(
    vault: object,
    labels: dict[str, str],
    queries: list[tuple[str, list[str]]] | None = None,
    mode: str | None = None,
) -> dict[str, Any]:
    """Precision (= recall) at 5 and MRR of ``queries`` (default: the word queries) in ``mode``
    (default: search's own default)."""
    import inspect

    from nexus import search

    extra: dict[str, object] = {}
    params = inspect.signature(search.search).parameters
    if "languages" in params:  # (absent before issue 13)
        extra["languages"] = LANGUAGES
    if mode is not None and "mode" in params:
        extra["mode"] = mode
    per_query: list[dict[str, Any]] = []
    for text, relevant in QUERIES if queries is None else queries:
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


def shared_words(query: str, relevant: list[str]) -> set[str]:
    """The stems (in every language of the set) a query shares with the texts it should find."""
    from nexus.search.language import analysis

    words = analysis(LANGUAGES)
    texts = []
    for label in relevant:
        if label in ENTRIES:
            texts.append(" ".join(x or "" for x in ENTRIES[label][3:]))
        elif label in NOTES:
            texts.append(NOTES[label][1])
        else:
            texts.append(" ".join(x or "" for x in DECISIONS[label][1:4]))
    mine = set(words.counts(query)[0])
    return {s for text in texts for s in words.counts(text)[0] if s in mine}


def table(vault: object, labels: dict[str, str], verbose: bool = False) -> dict[str, dict[str, Any]]:
    """{set: {mode: result}} over every query set and mode."""
    out: dict[str, dict[str, Any]] = {}
    for name, queries in SETS.items():
        out[name] = {}
        for mode in MODES:
            result = evaluate(vault, labels, queries, mode)
            out[name][mode] = result
            if verbose:
                for q in result["per_query"]:
                    top = ", ".join(q["top"])
                    print(f"  {mode:7} r@5 {q['p5']:.2f} rr {q['rr']:.2f} {q['query']!r:48} → {top}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("-v", "--verbose", action="store_true", help="every query's top five")
    args = parser.parse_args()
    for name in ("paraphrase",):
        for text, relevant in SETS[name]:
            if shared_words(text, relevant):
                shared = shared_words(text, relevant)
                raise SystemExit(f"{name} query {text!r} shares {shared} with its notes")
    with tempfile.TemporaryDirectory(prefix="nexus-relevance-") as tmp:
        vault, labels = build(Path(tmp) / "vault", Path(tmp) / "keys")
        result = table(vault, labels, args.verbose and not args.json)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    print(f"{'queries':16} {'mode':8} {'R@5':>6} {'MRR':>6}  superseded first")
    for name, modes in result.items():
        for mode, r in modes.items():
            label = f"{name} ({r['queries']})"
            print(
                f"{label:16} {mode:8} {r['precision_at_5']:6.3f} {r['mrr']:6.3f}"
                f"  {r['superseded_above_replacement']}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
