"""Operations that look over the whole vault: verify, the identities and the keys this machine
trusts, the morning handoff, and search with its index."""

from __future__ import annotations

from typing import Any

from .spec import Answer, Call


def _listing(items: list[Any], text: str) -> Answer:
    data = [i.to_json() if hasattr(i, "to_json") else i for i in items]
    return Answer(data, text, mcp={"items": data})


def _progress(call: Call, label: str) -> Any:
    return call.progress(label) if call.progress else None


def verify(call: Call, *, full: bool = False) -> Answer:
    from ..audit.verify_state import verify as verify_vault
    from ..team import heartbeat

    report = verify_vault(
        call.vault, trust=call.trust, full=full, progress=_progress(call, "verifying the log")
    )
    lines = [str(p) for p in report.problems]
    status = "clean" if report.ok else f"{len(report.errors)} problem(s)"
    lines.append(f"{report.entries} entries in {report.segments} segment(s): {status}")
    dead = heartbeat.problem(call.vault)
    if dead:  # (a warning: the log itself is what verify judges)
        lines.append(f"warning: {dead}")
    data = report.to_json()
    return Answer({**data, "watcher": dead}, "\n".join(lines), mcp=data, exit_code=0 if report.ok else 1)


def agents(call: Call) -> Answer:
    from ..keys import identity

    idents = list(identity.all_identities(call.vault).values())
    lines = [f"{i.name:<20} {i.kind:<6} key {i.key_id}  {i.path}" for i in idents]
    return _listing(idents, "\n".join(lines) or "no identities yet")


def trusted(call: Call) -> Answer:
    from ..keys import trust

    rows = trust.listing(call.vault, call.keys_home)
    lines = [
        f"{r['name']:<20} key {r['key_id']} {'current' if r['current'] else 'older  '} "
        f"since {r['since']} ({r['how']})"
        + (
            f"  ! identity note declares {r['note_key_id']}, NOT trusted"
            if r["changed"] and r["current"]
            else ""
        )
        for r in rows
    ]
    return _listing(rows, "\n".join(lines) or "no keys pinned yet")


def handoff(call: Call, *, since: str | None = "last") -> Answer:
    from ..team import handoff as handoff_mod

    report = handoff_mod.build(
        call.vault,
        call.settings,
        since=since,
        progress=_progress(call, "verifying the log"),
        trust=call.trust,
    )
    path = call.vault.rel(handoff_mod.write(call.vault, report))
    text = report.for_terminal(colour=call.colour) + f"\n(written to {path})\n"
    return Answer({**report.to_json(), "path": path}, text)


def _hit_text(n: int, hit: Any) -> str:
    when = (hit.time or "")[:16].replace("T", " ")
    who = " · ".join(x for x in (when, hit.agent, hit.channel, hit.type) if x)
    mark = ""
    if hit.verified is not None:
        mark = "  ✓ signed" if hit.verified else "  ✗ SIGNATURE DOES NOT VERIFY"
    if hit.superseded:
        mark += f"  (superseded by {hit.superseded_by})" if hit.superseded_by else "  (superseded)"
    lines = [
        f"{n}. {hit.title}{mark}",
        f"   {who}" if who else "",
        f"   {hit.path}:{hit.line_start}-{hit.line_end}  {hit.link}",
        f"   {hit.snippet}",
    ]
    return "\n".join(line for line in lines if line)


def search(
    call: Call,
    *,
    query: str,
    agent: str | None = None,
    type: str | None = None,
    channel: str | None = None,
    since: str | None = None,
    until: str | None = None,
    path: str | None = None,
    mode: str = "hybrid",
    n: int = 10,
) -> Answer:
    from .. import search as search_mod

    hits = search_mod.search(
        call.vault,
        query,
        agent=agent,
        type=type,
        channel=channel,
        since=since,
        until=until,
        path=path,
        limit=n,
        progress=_progress(call, "indexing the vault"),
        languages=call.settings.search_languages,
        mode=mode,
        trust=call.trust,
    )
    return _listing(hits, "\n\n".join(_hit_text(i + 1, h) for i, h in enumerate(hits)) or "no matches")


def index_rebuild(call: Call) -> Answer:
    from .. import search as search_mod

    stats = search_mod.rebuild(
        call.vault,
        progress=_progress(call, "indexing the vault"),
        languages=call.settings.search_languages,
        trust=call.trust,
    )
    text = (
        f"index rebuilt: {stats.documents_added} documents from {stats.files_indexed} files "
        f"in {stats.seconds:.1f} s"
    )
    return Answer(stats.to_json(), text)


def _status_text(st: Any) -> str:
    if st.damaged:
        return (
            f"{st.path}: damaged ({st.damaged}); the next search rebuilds it (or run `nexus index rebuild`)"
        )
    if not st.exists:
        return f"no index at {st.path} yet: the next search builds it (or run `nexus index rebuild`)"
    text = (
        f"{st.path}: {st.documents} documents ({st.entries} log entries, {st.sections} note "
        f"sections) from {st.files} files, {st.size_bytes / 1e6:.1f} MB; built {st.built}, "
        f"updated {st.updated}"
    )
    if st.stale_files:
        return text + (
            f"\n{len(st.stale_files)} file(s) changed since indexed (taken in at the next "
            f"search): " + ", ".join(st.stale_files[:10])
        )
    return text + "\nup to date"


def index_status(call: Call) -> Answer:
    from .. import search as search_mod
    from ..team import heartbeat

    st = search_mod.status(call.vault)
    dead = heartbeat.problem(call.vault)
    text = _status_text(st)
    if dead:
        text += f"\nwarning: {dead} (the index is kept current only while it runs)"
    data = st.to_json()
    return Answer({**data, "watcher": dead}, text, mcp=data)
