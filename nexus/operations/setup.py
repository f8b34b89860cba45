"""Operations only a person runs, from a shell: creating a vault, identities and their keys, ending
a fork, importing Hermes memories, setting a clone up for git, importing file-sync conflict copies.
None has an MCP tool (each says why in the registry)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from .spec import Answer, Call


def init(call: Call, *, path: str = ".", force: bool = False) -> Answer:
    from ..storage.vault import HOME, INTRODUCTION
    from ..storage.vault import init as init_vault

    vault, created = init_vault(Path(path), force=force)
    data: dict[str, Any] = {"vault": str(vault.root), "created": created}
    text = f"vault ready at {vault.root} ({len(created)} files created)"
    if INTRODUCTION in created:
        data["kept"] = [HOME]
        text += (
            f"\nkept your {HOME} as it was; nexus's introduction is in {INTRODUCTION} "
            f"(link it from {HOME}: [[{INTRODUCTION[:-3]}]])"
        )
    if created:
        # the commands that follow find the vault from the folder they run in: say how to get there
        here = vault.root.resolve() == Path.cwd().resolve()
        go = "" if here else f"cd {shlex.quote(path)} && "
        text += f"\nnext: {go}nexus agent add NAME   (and `nexus agent add YOU --human` for yourself)"
        if not here:
            text += (
                f"\n      (from any other folder, give each command --vault {shlex.quote(str(vault.root))})"
            )
    return Answer(data, text)


def agent_add(call: Call, *, name: str, human: bool = False) -> Answer:
    from ..keys import identity, trust
    from ..suggest import closest

    close = closest(name, call.vault.identity_names())  # (before: the new one is a name too)
    ident = identity.add(call.vault, call.keys_home, name, human=human)
    trust.load(call.vault, call.trust.home)  # pin the new key on this machine now (trust on first use)
    return Answer(
        ident.to_json(),
        f"added {ident.kind} {ident.name} (key {ident.key_id}); fill in {ident.path}",
        notes=(f"note: {name!r} is close to the identity {close!r} (a typo? `nexus agent list`)",)
        if close
        else (),
    )


def agent_trust(call: Call, *, name: str) -> Answer:
    from ..keys import roster, trust
    from ..ledger import rotation

    vault, home = call.vault, call.keys_home
    ring = trust.load(vault, home)
    declared = roster.roster(vault).get(name, {}).get("public_key")
    found = (
        rotation.announcement(vault, ring, name, declared)
        if isinstance(declared, str) and name in ring.changed
        else None
    )
    announced = found[0] if found else None
    new, old = trust.accept(vault, home, name, how="rotation-entry" if announced else "trust")
    text = (
        f"{name}: key {new} already trusted"
        if new == old
        else f"{name}: now trusting key {new}"
        + (f" (previous key {old} stays trusted for older entries)" if old else "")
    )
    if new != old:
        text += (
            f"\nthe rotation was announced by entry {announced}, signed with a key you already trusted"
            if announced
            else "\nno rotation entry signed with a trusted key names this key: it is trusted on your word"
        )
    return Answer({"name": name, "key_id": new, "previous": old, "announced_by": announced}, text)


def agent_rotate(call: Call, *, name: str) -> Answer:
    from ..ledger import rotation

    done = rotation.rotate(call.vault, call.keys_home, name)
    data = {
        "name": done.name,
        "old_key_id": done.old_key_id,
        "new_key_id": done.new_key_id,
        "announced": done.announced,
        "confirmed": done.confirmed,
    }
    text = (
        f"{done.name}: now signing with key {done.new_key_id} (was {done.old_key_id}); announced by "
        f"entry {done.announced}, signed with the old key, confirmed by {done.confirmed}\n"
        f"on every other machine: nexus agent trust {done.name}"
    )
    return Answer(data, text)


def resolve_fork(call: Call, *, keep: str) -> Answer:
    from ..ledger import log

    result = log.resolve_fork(call.vault, call.signer(), keep, call.trust)
    return Answer(result.to_json(), f"{result.located.entry.id}: {result.located.entry.summary}")


def import_hermes(call: Call, *, folder: str) -> Answer:
    from ..memory import bounded as memory
    from .memory import _store_text

    limits = call.limits()
    results = memory.import_hermes(
        call.vault, Path(folder), call.agent, memory_limit=limits["memory"], user_limit=limits["user"]
    )
    notes = tuple(f"skipped: {why}" for r in results for why in r.skipped)
    code = 1 if notes else 0  # a partial import is not a success: what was imported stays imported
    return Answer(
        [r.to_json() for r in results],
        "\n".join(_store_text(r) for r in results),
        notes=notes,
        exit_code=code,
    )


def git_setup(call: Call, *, guard: str | None = None) -> Answer:
    if guard is not None:
        from ..sync import guard as claims_guard

        hook = claims_guard.install(call.vault, Path(guard).expanduser())
        return Answer(
            {"guard": str(hook)},
            f"claims guard installed: {hook} (override one commit with {claims_guard.OVERRIDE}=1)",
        )
    from ..sync import gitsync

    data = gitsync.setup(call.vault)
    what = ", ".join(data["changed"]) or "nothing (already set up)"
    return Answer(data, f"git repository {data['repository']}: merge driver registered; wrote {what}")


def git_resolve(call: Call) -> Answer:
    from ..sync import resolve

    done = resolve.resolve(call.vault)
    lines = [
        f"{r.file}: {r.regions} conflict region{'s' if r.regions != 1 else ''} resolved by the {r.kind} rule"
        + "".join(f"\n  {c}" for c in r.conflicts)
        for r in done
    ]
    return Answer([r.to_json() for r in done], "\n".join(lines) or "no conflict markers in the vault")


def import_copies(call: Call) -> Answer:
    from ..sync import copies

    done = copies.import_all(call.vault, call.trust)
    lines = [
        f"{c.copy}: {len(c.imported)} entries imported into {c.segment}; archived as {c.archived}"
        for c in done
    ]
    return Answer([c.to_json() for c in done], "\n".join(lines) or "no conflict copies")
