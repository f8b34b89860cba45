"""``nexus mcp --agent A``: every nexus capability as MCP tools, over stdio (the only module that
imports the MCP SDK, and only when that command runs).

Each tool is a thin adapter over one library function, acting as the agent the server was started
for (its appends are signed with that agent's key). Tools carry read-only / destructive / idempotent
annotations; a refused input or a conflict comes back as a ``ToolError`` holding nexus's own one-line
message, which a model can act on. Results are JSON objects (lists are wrapped as ``{"items": [...]}``).

Resources: ``nexus://log/tail`` (the live log's last entries), ``nexus://decisions`` (the active
decisions) and ``nexus://checkpoint/{agent}`` (an agent's checkpoint note).

Tools with no CLI command of the same name: ``acknowledge`` (``log append --ack``) and ``reconcile``
(``log append --type reconcile --ack A --ack B``). CLI commands with no tool are listed in
``CLI_WITHOUT_TOOL`` with the reason.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from .errors import NexusError, StaleEditError
from .vault import Vault

F = TypeVar("F", bound=Callable[..., Any])

# CLI command -> why it has no MCP tool (the test walks the parser against this and the tool list).
CLI_WITHOUT_TOOL = {
    "init": "creates a vault: set-up, done once by a person in a shell",
    "agent add": "creates a key pair on the machine: set-up, done by a person",
    "watch": "a long-running process, not a call",
    "mcp": "this server itself",
    "memory import-hermes": "a one-off migration from files on disk, run from a shell",
}
# CLI command -> its MCP tool, when the names differ. `review` lists pending facts only: approving or
# rejecting is the human gate, a person's act (`nexus review --approve ID --agent PERSON`), never a tool.
TOOL_FOR_CLI = {"review": "review_pending"}
TOOLS_WITHOUT_CLI = {"acknowledge": "log append --ack",
                     "reconcile": "log append --type reconcile --ack A --ack B"}


def _hints(read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations:
    return ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive,
                           idempotent_hint=idempotent, open_world_hint=False)


READ = _hints(True, False, True)
ADD = _hints(False, False, False)
SET = _hints(False, False, True)
CHANGE = _hints(False, True, False)
# reading the log advances the agent's cursor: not read-only, but nothing is lost
CURSOR = _hints(False, False, False)


def _adapter(fn: F) -> F:
    """Turn nexus's own errors into ToolError with the same message."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except StaleEditError as err:
            raise ToolError(f"{err}\n{err.diff}") from None
        except NexusError as err:
            raise ToolError(str(err)) from None
        except (FileNotFoundError, PermissionError, IsADirectoryError) as err:
            raise ToolError(f"{err.strerror}: {err.filename}") from None

    return wrapper  # type: ignore[return-value]


def _items(values: list[Any]) -> dict[str, Any]:
    return {"items": [v.to_json() if hasattr(v, "to_json") else v for v in values]}


def build_server(vault: Vault, keys_home: Path, agent: str, env: dict[str, str] | None = None) -> MCPServer:
    """The server, with every tool bound to ``vault`` and acting as ``agent``."""
    from . import identity, log
    from .settings import resolve
    from .text import check_name

    check_name(agent)
    if not vault.identity_path(agent).is_file():
        from .errors import IdentityError

        raise IdentityError(f"unknown agent {agent!r}: run `nexus agent add {agent}` first")
    st = resolve({}, os.environ if env is None else env, vault.config())
    limits = {"memory": int(st.memory_chars), "user": int(st.user_chars)}
    server = MCPServer(
        "nexus", version=_version(),
        instructions=(f"nexus: shared, durable memory for agents working together. You are {agent!r}. "
                      "Call `brief` before each response; append what you did with `log_append`; "
                      "acknowledge what others wrote with `acknowledge`; search the vault with `search`."),
    )

    def signer() -> Any:
        return identity.load_signer(vault, keys_home, agent)

    def tool(annotations: ToolAnnotations, name: str | None = None) -> Callable[[F], F]:
        def register(fn: F) -> F:
            server.tool(name=name or fn.__name__, annotations=annotations)(_adapter(fn))
            return fn

        return register

    # ------------------------------------------------------------ brief and the log
    @tool(CURSOR)
    def brief(peek: bool = False, max_chars: int | None = None) -> dict[str, Any]:
        """What to load before a turn: identity, unread entries from the others, what you owe (acks,
        races), active decisions, your checkpoint and memory. Advances your read cursor unless peek."""
        from . import brief as brief_mod

        b = brief_mod.build(vault, agent, max_chars=max_chars or st.brief_max_chars, ack_types=st.ack_types,
                            race_window=st.race_window_seconds, stale_minutes=st.stale_checkpoint_minutes,
                            peek=peek)
        return {"text": brief_mod.render(b), **b.to_json()}

    @tool(ADD)
    def log_append(channel: str, type: str, summary: str, body: str | None = None,
                   ack: list[str] | None = None) -> dict[str, Any]:
        """Append one signed entry to the live log (type: note, question, correction, decision,
        handoff, reconcile…; summary: one line). Returns the entry with its file, lines and link."""
        result = log.append(vault, signer(), channel=channel, type=type, summary=summary, body=body,
                            ack=tuple(ack or ()))
        return result.to_json()

    @tool(ADD)
    def acknowledge(ids: list[str], summary: str = "acknowledged", channel: str = "general",
                    body: str | None = None) -> dict[str, Any]:
        """Acknowledge entries by the others (an `ack` entry naming them), so you no longer owe them."""
        result = log.append(vault, signer(), channel=channel, type="ack", summary=summary, body=body,
                            ack=tuple(ids))
        return result.to_json()

    @tool(CURSOR)
    def log_read(peek: bool = False) -> dict[str, Any]:
        """Entries by the others you have not read, oldest first; advances your cursor unless peek."""
        return _items(log.unread(vault, agent, advance=not peek))

    @tool(READ)
    def log_tail(n: int = 10) -> dict[str, Any]:
        """The last n entries of the live log, oldest first."""
        return _items(log.tail(vault, n))

    @tool(READ)
    def log_owed() -> dict[str, Any]:
        """Entries by the others that wait for your acknowledgement."""
        from . import acks

        return _items(acks.owed(vault, agent, st.ack_types, race_window=st.race_window_seconds))

    @tool(SET)
    def log_repair() -> dict[str, Any]:
        """Move a torn tail (a writer killed mid-write) out of the log into .nexus/quarantine/."""
        return {"quarantined": log.repair_tail(vault)}

    @tool(READ)
    def log_recover(id: str) -> dict[str, Any]:
        """The original text of an entry as the watcher first saw it (after a history edit)."""
        from . import shadow

        return shadow.original(vault, id).to_json()

    @tool(READ)
    def races(unresolved: bool = False) -> dict[str, Any]:
        """Pairs of entries by different agents written without seeing each other."""
        from . import races as races_mod

        return _items(races_mod.find_races(vault, st.race_window_seconds, ack_types=st.ack_types,
                                           unresolved=unresolved))

    @tool(ADD)
    def reconcile(a: str, b: str, summary: str, body: str | None = None,
                  channel: str = "general") -> dict[str, Any]:
        """Resolve a race: a `reconcile` entry that acknowledges both entries (both stay in the log)."""
        result = log.append(vault, signer(), channel=channel, type="reconcile", summary=summary,
                            body=body, ack=(a, b))
        return result.to_json()

    @tool(READ)
    def verify() -> dict[str, Any]:
        """Check the log's framing, signatures, chains and ids, and the decision notes."""
        from . import verify as verify_mod

        report: dict[str, Any] = verify_mod.verify(vault).to_json()
        return report

    @tool(READ)
    def agent_list() -> dict[str, Any]:
        """The identities in the vault (agents and people)."""
        return _items(list(identity.all_identities(vault).values()))

    # ------------------------------------------------------------ decisions, state, checkpoints, handoff
    @tool(ADD)
    def decide(title: str, decision: str, rationale: str, alternatives: str | None = None,
               supersedes: str | None = None, refs: list[str] | None = None) -> dict[str, Any]:
        """Record a decision (a signed note and a decision entry); `supersedes` marks an older one."""
        from . import decisions as dec

        return dec.decide(vault, signer(), title=title, decision=decision, rationale=rationale,
                          alternatives=alternatives, supersedes=supersedes, refs=tuple(refs or ())).to_json()

    @tool(READ)
    def decisions(all: bool = False) -> dict[str, Any]:
        """The active decisions (all=True: superseded ones too)."""
        from . import decisions as dec

        items = dec.all_decisions(vault)
        return _items(items if all else [d for d in items if d.status == "active"])

    @tool(READ)
    def state_show() -> dict[str, Any]:
        """The project state note: its content and version (pass the version to state_set)."""
        from . import project_state

        version, content, _absorbed = project_state.show(vault, keys_home)
        return {"version": version, "content": content}

    @tool(CHANGE)
    def state_set(content: str, expect: int, summary: str | None = None) -> dict[str, Any]:
        """Replace the project state, only if it is still at version `expect` (else: the current
        version and a diff). The previous version is kept and restorable."""
        from . import project_state

        v = project_state.set_state(vault, signer(), expect=expect, content=content, summary=summary,
                                    keys_home=keys_home)
        return {k: val for k, val in v.to_json().items() if k != "content"}

    @tool(READ)
    def state_history() -> dict[str, Any]:
        """Every accepted version of the project state (who, when, one line)."""
        from . import project_state

        return _items([{k: val for k, val in v.to_json().items() if k != "content"}
                       for v in project_state.versions(vault)])

    @tool(READ)
    def state_diff(old: int, new: int | None = None) -> dict[str, Any]:
        """The difference between two versions of the project state (new: the current one)."""
        from . import project_state

        a = project_state.load_version(vault, old)
        b = project_state.load_version(vault, new if new is not None else project_state.show(vault)[0])
        return {"old": a.version, "new": b.version,
                "diff": project_state.diff(a.content, b.content, f"v{a.version}", f"v{b.version}")}

    @tool(CHANGE)
    def state_restore(version: int, expect: int) -> dict[str, Any]:
        """Make an earlier version of the project state current again (as a new version)."""
        from . import project_state

        v = project_state.restore(vault, signer(), version=version, expect=expect, keys_home=keys_home)
        return {k: val for k, val in v.to_json().items() if k != "content"}

    @tool(SET)
    def checkpoint_save(task: str, step: str, next: str, status: str = "in-progress",
                        files: list[str] | None = None, notes: str | None = None) -> dict[str, Any]:
        """Save your working context (task, step done, next step, status, files, notes), atomically."""
        from . import checkpoints

        cp, logged = checkpoints.save(vault, agent, task=task, step=step, next=next, status=status,
                                      files=tuple(files or ()), notes=notes, keys_home=keys_home)
        return {**cp.to_json(), "logged": logged}

    @tool(READ)
    def checkpoint_show(of: str | None = None, history: bool = False) -> dict[str, Any]:
        """A checkpoint (yours unless `of` names another agent), flagged when it looks like a crash."""
        from . import checkpoints
        from .errors import NotFoundError

        who = of or agent
        cp = checkpoints.load(vault, who)
        if cp is None:
            raise NotFoundError(f"{who} has no checkpoint yet")
        data = {**cp.to_json(), "probable_crash": checkpoints.probable_crash(cp, st.stale_checkpoint_minutes)}
        if history:
            data["history"] = [c.to_json() for c in checkpoints.history(vault, who)]
        return data

    @tool(ADD)
    def checkpoint_resume() -> dict[str, Any]:
        """What a new session needs to continue: your checkpoint and the log entries since it."""
        from . import checkpoints

        got = checkpoints.resume(vault, agent, keys_home=keys_home)
        return {"checkpoint": got["checkpoint"].to_json(), "since": [x.to_json() for x in got["since"]],
                "resume_entry": got["resume_entry"].entry.id if got["resume_entry"] else None}

    @tool(ADD)
    def handoff(since: str | None = "last") -> dict[str, Any]:
        """Write the morning handoff note (handoff/YYYY-MM-DD.md) and return it."""
        from . import handoff as handoff_mod

        report = handoff_mod.build(vault, since=since, stale_minutes=st.stale_checkpoint_minutes)
        path = handoff_mod.write(vault, report)
        return {**report.to_json(), "path": vault.rel(path)}

    # ------------------------------------------------------------ search
    @tool(READ)
    def search(query: str, agent: str | None = None, type: str | None = None, channel: str | None = None,
               since: str | None = None, until: str | None = None, path: str | None = None,
               n: int = 10) -> dict[str, Any]:
        """Ranked search over the log and every note. Query syntax: words, "phrases", prefix*,
        field:value (agent, type, channel, status, path, kind), AND OR NOT, parentheses. Each hit says
        where it came from (file, lines, Obsidian link, author, time, signature verified)."""
        from . import search as search_mod

        return _items(search_mod.search(vault, query, agent=agent, type=type, channel=channel, since=since,
                                        until=until, path=path, limit=n))

    @tool(READ)
    def index_status() -> dict[str, Any]:
        """What the search index holds and which files changed since they were indexed."""
        from . import search as search_mod

        return search_mod.status(vault).to_json()

    @tool(SET)
    def index_rebuild() -> dict[str, Any]:
        """Rebuild the search index from the vault (it is derived; nothing is lost)."""
        from . import search as search_mod

        return search_mod.rebuild(vault).to_json()

    # ------------------------------------------------------------ memory, facts, bank
    @tool(ADD)
    def memory_add(content: str, target: str = "memory") -> dict[str, Any]:
        """Add an entry to your MEMORY.md (target=memory) or the shared USER.md (target=user)."""
        from . import memory

        return memory.add(vault, target, agent, content, limit=limits.get(target, 0)).to_json()

    @tool(CHANGE)
    def memory_replace(old_text: str, content: str, target: str = "memory") -> dict[str, Any]:
        """Replace the memory entry containing old_text (an exact whole-entry match wins)."""
        from . import memory

        return memory.replace(vault, target, agent, old_text, content, limit=limits.get(target, 0)).to_json()

    @tool(CHANGE)
    def memory_remove(old_text: str, target: str = "memory") -> dict[str, Any]:
        """Remove the memory entry containing old_text."""
        from . import memory

        return memory.remove(vault, target, agent, old_text, limit=limits.get(target, 0)).to_json()

    @tool(READ)
    def memory_snapshot() -> dict[str, Any]:
        """Your memory and the user profile as the block a runtime puts in its system prompt."""
        from . import memory

        snap = memory.snapshot(vault, agent, memory_limit=limits["memory"], user_limit=limits["user"])
        return snap.to_json()

    @tool(CHANGE)
    def memory_sweep(older_than_days: float | None = None) -> dict[str, Any]:
        """Archive plan-shaped memory entries older than the sweep age (restorable)."""
        from . import archive

        days = older_than_days if older_than_days is not None else float(st.sweep_days)
        return archive.sweep(vault, older_than_days=days, agent=agent, limits=limits).to_json()

    @tool(ADD)
    def memory_restore(ids: list[str] | None = None) -> dict[str, Any]:
        """Bring archived memory entries or retired facts back (no ids: list what is archived)."""
        from . import archive, facts

        if not ids:
            items = [a.to_json() | {"kind": "memory-entry"} for a in archive.archived(vault)]
            items += [f.to_json() | {"kind": "fact", "id": f.name} for f in facts.retired(vault)]
            return {"items": items}
        out = [archive.restore(vault, i, limits=limits).to_json() if archive.ID_RE.fullmatch(i)
               else facts.restore(vault, i).to_json() for i in ids]
        return {"items": out}

    @tool(CHANGE)
    def memory_consolidate(text: str, target: str = "memory",
                           archive: list[str] | None = None) -> dict[str, Any]:
        """Replace all entries with a rewritten set (§-separated), only if no old fact is lost."""
        from . import archive as archive_mod

        res, moved = archive_mod.consolidate(vault, target, agent, text, limit=limits.get(target, 0),
                                             archive=tuple(archive or ()))
        return res.to_json() | {"archived": [m.to_json() for m in moved]}

    @tool(ADD)
    def memory_facts_add(description: str, type: str, body: str = "",
                         name: str | None = None) -> dict[str, Any]:
        """Add a fact note to the memory index (type: user, feedback, project, reference)."""
        from . import facts

        return facts.add(vault, name=name, description=description, type=type, body=body).to_json()

    @tool(READ)
    def memory_facts_list(retired: bool = False) -> dict[str, Any]:
        """The facts of the memory index (retired=True: the archived ones)."""
        from . import facts

        return _items(facts.retired(vault) if retired else facts.all_facts(vault))

    @tool(READ)
    def memory_facts_show(name: str) -> dict[str, Any]:
        """One fact of the memory index, with its body."""
        from . import facts

        return facts.get(vault, name).to_json()

    @tool(CHANGE)
    def memory_facts_retire(name: str) -> dict[str, Any]:
        """Move a fact to the archive (memory_restore brings it back)."""
        from . import facts

        return facts.retire(vault, name).to_json()

    @tool(ADD)
    def retain(type: str, content: str, source: str | None = None) -> dict[str, Any]:
        """Keep a curated fact in your bank (type: decision, fact, failure, preference); it reaches
        memory only after a person approves it."""
        from . import bank

        return bank.retain(vault, agent, type=type, content=content, source=source).to_json()

    @tool(READ)
    def recall(query: str, n: int = 10) -> dict[str, Any]:
        """Your banked facts relevant to the query, ranked."""
        from . import bank

        return _items(bank.recall(vault, agent, query, limit=n))

    @tool(READ)
    def review_pending() -> dict[str, Any]:
        """Banked facts waiting for a person's approval."""
        from . import bank

        return _items(bank.pending(vault))

    _resources(server, vault)
    return server


def _resources(server: MCPServer, vault: Vault) -> None:
    from mcp.server.mcpserver.exceptions import ResourceError

    @server.resource("nexus://log/tail", name="live-log", mime_type="text/markdown",
                     description="The last 50 entries of the live-context log")
    def live_log() -> str:
        from . import entries, log

        return "\n".join(entries.render(x.entry) for x in log.tail(vault, 50)) or "(the log is empty)\n"

    @server.resource("nexus://decisions", name="decisions", mime_type="text/markdown",
                     description="The active decisions, one line each")
    def active_decisions() -> str:
        from . import decisions

        lines = [f"- **{d.id}** {d.title}: {decisions.one_line(d, 160)} ({d.author}, {d.date[:10]})"
                 for d in decisions.active(vault)]
        return "\n".join(lines) + "\n" if lines else "(no active decisions)\n"

    @server.resource("nexus://checkpoint/{agent}", name="checkpoint", mime_type="text/markdown",
                     description="An agent's checkpoint note")
    def checkpoint(agent: str) -> str:
        from . import checkpoints
        from .text import check_name

        try:
            path = checkpoints.checkpoint_path(vault, check_name(agent))
            return path.read_text(encoding="utf-8")
        except (NexusError, FileNotFoundError) as err:
            raise ResourceError(f"{agent} has no checkpoint yet" if isinstance(err, FileNotFoundError)
                                else str(err)) from None


def _version() -> str:
    from . import __version__

    return str(__version__)


def run(vault: Vault, keys_home: Path, agent: str) -> int:
    """Serve over stdio until the client closes the stream."""
    server = build_server(vault, keys_home, agent)
    server.run("stdio")
    return 0
