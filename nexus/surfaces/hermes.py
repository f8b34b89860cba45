"""nexus as a Hermes Agent memory provider (``hermes-agent`` 0.19's ``MemoryProvider`` calls).

Hermes runs in its own Python environment, so nexus never runs inside it: ``nexus setup hermes``
installs a small plugin (``runtimes/hermes_plugin.py``) in ``$HERMES_HOME/plugins/nexus/`` that starts
``nexus hermes-provider`` (:func:`serve`) once per session and hands it each provider call as one JSON
line. The provider here answers them; every method is a thin adapter over the operations the CLI and
the MCP tools call (``session``, ``log``, ``memory``, ``search``, ``decisions``, ``checkpoints``):

- ``initialize``: maps the Hermes profile (``agent_identity``) to a nexus agent and starts the session
  (``session.start``: identity, what it owes, decisions, checkpoint, memory and memory index, unread)
  in the background: Hermes goes on building its agent meanwhile, and the calls that need the
  session (``system_prompt_block`` first) wait for it;
- ``system_prompt_block``: that session-start text, frozen for the session;
- ``prefetch``: what is new and owed since the last turn (``session.turn``) and the top search hits
  for the query (approved facts first), within a budget; hits only once the search index is open
  (opened in the background after the first prefetch, so it never holds up the session's start or
  a turn);
- ``sync_turn``: appends a signed entry on a background thread (never blocks the turn);
- ``on_memory_write``: mirrors Hermes' built-in memory writes into nexus memory, through the safety
  scan (a refused write is logged and left out);
- ``on_pre_compress``: saves the checkpoint; ``on_session_end``: retains the session's decisions in
  the agent's bank, pending a person's approval;
- ``get_tool_schemas``/``handle_tool_call``: brief, log append, acknowledge, search, decide,
  checkpoint (``hermes_tools.py``).

Configuration (``get_config_schema``/``save_config``) lives under ``plugins.nexus`` in Hermes'
``config.yaml`` (``vault``, ``agent``, ``keys_home``, and ``agents``: profile → nexus agent); the
environment (``NEXUS_VAULT``, ``NEXUS_HOME``, ``NEXUS_AGENT``) wins. Storage never follows ``~/.hermes``:
everything is in the nexus vault.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..trust import NO_PINS
from . import hermes_tools

if TYPE_CHECKING:
    from ..workspace import Workspace

logger = logging.getLogger("nexus.surfaces.hermes")
PREFETCH_CHARS = 4_000
SEARCH_WAIT = 2.0  # seconds prefetch waits for search hits once the index is open; a slower search still
# finishes in the background, and what is new is never held back by it
CHANNEL = "hermes"


def _words(text: str, n: int = 8) -> str:
    """A plain word query from free text (no query syntax reaches the parser)."""
    words = [w for w in re.findall(r"[^\W_]{3,}", text.lower())][:n]
    return " ".join(dict.fromkeys(words))


def _one_line(text: str, limit: int = 110) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _config(hermes_home: str | None, env: Mapping[str, str]) -> dict[str, Any]:
    import yaml

    home = Path(hermes_home or env.get("HERMES_HOME") or Path.home() / ".hermes")
    try:
        data = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8")) or {}
        plugins = data.get("plugins") if isinstance(data, dict) else None
        cfg = plugins.get("nexus") if isinstance(plugins, dict) else None
        return dict(cfg) if isinstance(cfg, dict) else {}
    except (OSError, yaml.YAMLError):
        return {}


class NexusMemoryProvider:
    """The nexus vault as Hermes' external memory provider (the calls of Hermes' ``MemoryProvider``)."""

    def __init__(self) -> None:
        self._vault: Any = None
        self._agent = ""
        self._keys_home = Path()
        self._session_id = "default"
        self._writes = True
        self._frozen = ""
        self._started: Future[str] | None = None  # the session's start (the brief), begun by initialize
        self._warmed = threading.Event()  # the search index is open: a turn's search is quick
        self._warming = False  # its opening has begun (after the first prefetch)
        self._settings: Any = None
        self._trust = NO_PINS  # what this machine trusts (the pins beside the keys), from initialize
        self._pool: ThreadPoolExecutor | None = None
        self._search: ThreadPoolExecutor | None = None
        self._pending: list[Future[Any]] = []
        self._lock = threading.Lock()
        self._shown: set[str] = set()  # the facts prefetch already gave this session
        self.refused: list[str] = []  # memory writes the safety scan refused (also logged)

    # ------------------------------------------------------------------ lifecycle
    @property
    def name(self) -> str:
        return "nexus"

    @staticmethod
    def _resolve(
        env: Mapping[str, str], hermes_home: str | None, profile: str | None
    ) -> tuple[Workspace, str]:
        """The workspace and agent from ``env`` (``NEXUS_*`` wins), else the plugin's config."""
        from .. import workspace
        from ..storage.vault import find

        cfg = _config(hermes_home, env)
        agents: dict[str, Any] = cfg["agents"] if isinstance(cfg.get("agents"), dict) else {}
        agent = (
            env.get("NEXUS_AGENT")
            or (agents.get(profile) if profile else None)
            or cfg.get("agent")
            or profile
            or ""
        )
        keys = None if env.get("NEXUS_HOME") or not cfg.get("keys_home") else Path(cfg["keys_home"])
        vault = find(env.get("NEXUS_VAULT") or cfg.get("vault"), None, Path.cwd())
        return workspace.for_vault(vault, env, keys=keys), str(agent)

    def is_available(self) -> bool:
        """Configured, and the vault, the agent and its private key are there (nothing written); else
        False, and the reason logged (it reaches Hermes' log)."""
        from ..keys import identity

        try:
            ws, agent = self._resolve(os.environ, None, None)
            if not agent:
                raise LookupError("no agent: set plugins.nexus.agent in Hermes' config.yaml")
            if not ws.vault.identity_path(agent).is_file():
                raise LookupError(
                    f"unknown agent {agent!r} in {ws.vault.root}: run `nexus agent add {agent}`"
                )
            key = identity.private_key_path(ws.vault, ws.keys_home, agent)
            if not key.is_file():  # (the file's presence: reading the key waits for the first append)
                raise LookupError(f"no private key for {agent!r} at {key} (set plugins.nexus.keys_home)")
            return True
        except Exception as err:
            logger.warning("nexus is not available: %s", err)
            return False

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        from ..team import session

        hermes_home = kwargs.get("hermes_home")
        profile = kwargs.get("agent_identity")
        ws, self._agent = self._resolve(
            os.environ, str(hermes_home) if hermes_home else None, str(profile) if profile else None
        )
        self._vault, self._keys_home, self._settings = ws.vault, ws.keys_home, ws.settings
        self._trust = ws.trust
        self._session_id = session_id or "default"
        # cron, subagent and flush contexts read but never write (Hermes' own advice)
        self._writes = kwargs.get("agent_context", "primary") == "primary"
        resumed = session.record_path(self._vault, self._agent, self._session_id).is_file()
        self._started = self._background().submit(self._start, resumed)

    def _start(self, resumed: bool) -> str:
        """The session's start: the brief, recorded as told (on the background thread)."""
        from ..team import session

        if resumed:
            # a session Hermes resumes (`--resume`, another process) sends its stored system prompt
            # again, not this block: what is new since the session's last turn is left to prefetch,
            # so the brief is rendered here without being recorded as told
            from ..team import brief

            text = brief.render(brief.build(self._vault, self._agent, self._settings, trust=self._trust))
            return text.replace("\n", " (session resumed: continue from your checkpoint below)\n", 1)
        return session.start(self._vault, self._agent, self._session_id, self._settings, trust=self._trust)

    def _ready(self) -> None:
        """Wait for the session's start (a failed start raises here, and Hermes logs it)."""
        started, self._started = self._started, None
        if started is not None:
            self._frozen = started.result()

    def _background(self) -> ThreadPoolExecutor:
        """The one background thread: the session's start, then the turns' appends, in order."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nexus-sync")
            return self._pool

    def system_prompt_block(self) -> str:
        self._ready()
        return self._frozen

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        from ..team import session

        if self._vault is None:
            return ""
        self._ready()
        st = self._settings
        parts = [
            session.turn(
                self._vault,
                self._agent,
                self._session_id,
                dataclasses.replace(st, brief_max_chars=PREFETCH_CHARS),
                prompt=query,
                trust=self._trust,
            ).strip()
        ]
        words = _words(query)
        if words and not self._warmed.is_set():
            logger.info("nexus: the search index is still opening; this turn goes without search hits")
        elif words:
            found = self._searcher().submit(self._hits, words, PREFETCH_CHARS - len(parts[0]))
            try:
                parts.append(found.result(timeout=SEARCH_WAIT))
            except TimeoutError:
                logger.info("nexus: search hits not ready in %.1fs; this turn goes without them", SEARCH_WAIT)
        self._warm_search()
        return "\n\n".join(p for p in parts if p)

    def _searcher(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._search is None:
                self._search = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nexus-search")
            return self._search

    def _warm_search(self) -> None:
        """Open the search index in the background, once, after the session's first prefetch: the
        later turns find it ready. Not sooner: opening the index (its meaning model: about a second of
        CPU) during the session's start took this process's interpreter from the brief's thread and a
        core from Hermes while they made the first model request (``bench_hermes_openclaw.py``)."""
        from .. import search

        with self._lock:
            if self._warming:
                return
            self._warming = True

        def warm() -> None:
            try:
                search.search(
                    self._vault,
                    "nexus",
                    path="memory/",
                    limit=1,
                    languages=self._settings.search_languages,
                    trust=self._trust,
                )
            except Exception as err:
                logger.info("nexus: the search index could not be opened yet: %s", err)
            finally:
                self._warmed.set()

        self._searcher().submit(warm)

    def _hits(self, words: str, room: int) -> str:
        """Approved facts of the memory index that match the turn, each once a session: what is new in
        the log already came with the brief and the turns, and is never sent twice."""
        from .. import search

        lines: list[str] = []
        try:
            hits = search.search(
                self._vault,
                words,
                path="memory/",
                limit=3,
                languages=self._settings.search_languages,
                trust=self._trust,
            )
        except Exception as err:  # a search problem never costs the turn
            logger.warning("nexus search failed: %s", err)
            return ""
        for h in hits:
            if h.link in self._shown:
                continue
            line = f"- {h.title} — {_one_line(h.snippet.replace('**', ''), 160)} ({h.link})"
            if sum(len(x) + 1 for x in lines) + len(line) > room - 60:
                break
            lines.append(line)
            self._shown.add(h.link)
        return "## Related in the vault\n" + "\n".join(lines) if lines else ""

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        """Append the turn as a signed entry, on a background thread."""
        if self._vault is None or not self._writes or not (user_content or "").strip():
            return
        summary = "turn: " + _one_line(user_content, 100)
        body = (assistant_content or "").strip()[:1500] or None
        pool = self._background()
        with self._lock:
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(pool.submit(self._append, summary, body))

    def _append(self, summary: str, body: str | None) -> None:
        from ..keys import identity
        from ..ledger import log

        try:
            signer = identity.load_signer(self._vault, self._keys_home, self._agent)
            log.append(
                self._vault,
                signer,
                channel=CHANNEL,
                type="note",
                summary=summary,
                body=body,
                trust=self._trust,
            )
        except Exception as err:
            logger.warning("nexus: the turn could not be logged: %s", err)

    def flush(self, timeout: float | None = 30) -> None:
        """Wait for the background appends (shutdown calls it)."""
        for fut in list(self._pending):
            fut.result(timeout=timeout)

    def shutdown(self) -> None:
        self.flush()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._search is not None:
            self._search.shutdown(wait=False, cancel_futures=True)
            self._search = None

    def on_memory_write(
        self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None
    ) -> None:
        """Mirror a built-in memory write; the safety scan may refuse it (logged, left out)."""
        from ..errors import NexusError
        from ..memory import bounded as memory

        if self._vault is None or not self._writes:
            return
        store = "user" if target == "user" else "memory"
        limit = int(self._settings.user_chars if store == "user" else self._settings.memory_chars)
        old = (metadata or {}).get("old_text")
        try:
            if action == "add":
                memory.add(self._vault, store, self._agent, content, limit=limit)
            elif action == "replace" and old:
                memory.replace(self._vault, store, self._agent, old, content, limit=limit)
            elif action == "remove":
                memory.remove(self._vault, store, self._agent, old or content, limit=limit)
        except NexusError as err:
            self.refused.append(str(err))
            logger.warning("nexus refused a memory %s: %s", action, err)

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        from ..team import session

        if self._vault is None or not self._writes:
            return ""
        self._ready()
        cp = session.pre_compact(
            self._vault, self._agent, self._session_id, trigger="hermes", keys_home=self._keys_home
        )
        # Hermes rebuilds its system prompt right after this call: the brief it gets carries the
        # checkpoint just saved, as a runtime's brief after compaction does
        self._frozen = session.start(
            self._vault, self._agent, self._session_id, self._settings, source="compact", trust=self._trust
        )
        return f"(nexus checkpoint saved, version {cp.seq}: {cp.task} — next: {cp.next})"

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        from ..team import session

        if self._vault is None or not self._writes:
            return
        self._ready()
        self.flush()
        session.end(self._vault, self._agent, self._session_id, trust=self._trust)

    # ------------------------------------------------------------------ tools
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return hermes_tools.schemas()

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        from ..errors import NexusError

        try:
            answer = hermes_tools.call(
                tool_name,
                dict(args or {}),
                vault=self._vault,
                agent=self._agent,
                keys_home=self._keys_home,
                settings=self._settings,
                trust=self._trust,
            )
            return json.dumps(answer, ensure_ascii=False)
        except NexusError as err:
            return json.dumps({"error": str(err)})
        except (KeyError, TypeError) as err:
            return json.dumps({"error": f"{tool_name}: missing or invalid argument {err}"})

    # ------------------------------------------------------------------ configuration
    def get_config_schema(self) -> list[dict[str, Any]]:
        return [
            {"key": "vault", "description": "Path of the nexus vault", "required": True},
            {"key": "agent", "description": "The nexus agent this Hermes profile acts as", "required": True},
            {
                "key": "keys_home",
                "description": "Folder of nexus private keys (NEXUS_HOME)",
                "required": False,
            },
        ]

    def save_config(self, values: dict[str, Any], hermes_home: str) -> None:
        from ..storage import durable
        from .runtimes.configfiles import read_text, table, yaml_merge

        path = Path(hermes_home) / "config.yaml"

        def edit(data: dict[str, Any]) -> None:
            table(table(data, "plugins"), "nexus").update(
                {k: str(v) for k, v in values.items() if v is not None}
            )

        old = read_text(path)
        new = yaml_merge(path, edit)(old)
        if new != old:
            durable.replace(path, new.encode("utf-8"))


# what the plugin may ask for: the provider's calls, nothing else
CALLS = frozenset(
    {
        "is_available",
        "initialize",
        "system_prompt_block",
        "prefetch",
        "sync_turn",
        "on_memory_write",
        "on_pre_compress",
        "on_session_end",
        "get_tool_schemas",
        "handle_tool_call",
        "save_config",
        "shutdown",
    }
)


def serve(requests: IO[str], answers: IO[str]) -> int:
    """Answer the plugin: one JSON request per line (``{"call", "args", "kwargs"}``), one JSON answer
    per line (``{"result"}`` or ``{"error"}``), until ``shutdown`` or the end of input; the background
    writes are finished before it returns."""
    provider = NexusMemoryProvider()
    try:
        for line in requests:
            name = ""
            try:
                request = json.loads(line)
                name = str(request["call"])
                if name not in CALLS:
                    raise KeyError(f"no call {name!r}")
                result = getattr(provider, name)(*request.get("args", ()), **request.get("kwargs", {}))
                answer: dict[str, Any] = {"result": result}
            except Exception as err:  # the call fails, the session goes on: Hermes logs it
                logger.warning("nexus: %s failed: %s", name or "a request", err)
                answer = {"error": f"{type(err).__name__}: {err}"}
            answers.write(json.dumps(answer, ensure_ascii=False, default=str) + "\n")
            answers.flush()
            if name == "shutdown":
                break
    finally:
        provider.shutdown()
    return 0
