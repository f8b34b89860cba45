"""nexus memory provider for Hermes Agent (written by `nexus setup hermes`; a re-run rewrites it).

Hermes runs in its own Python environment and nexus in its own, so this plugin imports nothing of
nexus: it starts `nexus hermes-provider` once (the `nexus` on PATH, or `plugins.nexus.command` in
Hermes' config.yaml) and hands each MemoryProvider call to it as one JSON line, reading one line back.
Moving or upgrading nexus never breaks it, and Hermes' pinned packages never meet nexus's.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import shutil
import subprocess
import threading
from typing import Any

try:  # inside Hermes Agent; anywhere else the class stands on its own
    from agent.memory_provider import MemoryProvider  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the runtime
    MemoryProvider = object

logger = logging.getLogger("nexus")
_PLAIN = (str, int, float, bool, type(None), list, dict)
WAIT = 60.0  # seconds for one answer; a nexus that hangs is stopped, and Hermes goes on without it


def _command() -> list[str] | None:
    """`nexus hermes-provider`, from config.yaml's `plugins.nexus.command` or PATH; None if not found."""
    command = "nexus"
    try:
        from hermes_cli.config import load_config  # type: ignore[import-not-found]

        cfg = (load_config().get("plugins") or {}).get("nexus") or {}
        command = str(cfg.get("command") or command)
    except Exception:
        pass
    found = shutil.which(os.path.expanduser(command))
    return [found, "hermes-provider"] if found else None


class NexusMemoryProvider(MemoryProvider):  # type: ignore[misc]
    """Hermes' side of the nexus provider: every call answered by `nexus hermes-provider`."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._tools: list[dict[str, Any]] | None = None
        self._answers: queue.Queue[str] = queue.Queue()

    @property
    def name(self) -> str:
        return "nexus"

    # ------------------------------------------------------------------ the nexus process
    def _start(self) -> subprocess.Popen[str]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        command = _command()
        if command is None:
            raise RuntimeError("`nexus` is not on PATH (or set plugins.nexus.command in config.yaml)")
        self._proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._answers = queue.Queue()
        threading.Thread(target=self._relay, args=(self._proc,), daemon=True).start()
        threading.Thread(target=self._read, args=(self._proc, self._answers), daemon=True).start()
        atexit.register(self._stop)
        return self._proc

    @staticmethod
    def _read(proc: subprocess.Popen[str], answers: queue.Queue[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            answers.put(line)
        answers.put("")  # the end: nexus stopped

    @staticmethod
    def _relay(proc: subprocess.Popen[str]) -> None:
        """nexus's own warnings go to Hermes' log."""
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.strip():
                logger.warning("%s", line.rstrip())

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        request = json.dumps(
            {
                "call": name,
                "args": list(args),
                "kwargs": {k: v for k, v in kwargs.items() if isinstance(v, _PLAIN)},
            },
            ensure_ascii=False,
            default=str,
        )
        with self._lock:
            proc = self._start()
            assert proc.stdin is not None
            try:
                proc.stdin.write(request + "\n")
                proc.stdin.flush()
                line = self._answers.get(timeout=WAIT)
            except OSError as err:
                raise RuntimeError(f"nexus hermes-provider stopped: {err}") from None
            except queue.Empty:
                proc.kill()
                raise RuntimeError(
                    f"nexus hermes-provider gave no answer to {name} in {WAIT:.0f} s"
                ) from None
        if not line:
            raise RuntimeError(f"nexus hermes-provider stopped (exit {proc.poll()})")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"nexus: {answer['error']}")
        return answer.get("result")

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()  # end of input: nexus finishes its background writes and exits
            proc.wait(timeout=30)
        except Exception:
            proc.kill()

    # ------------------------------------------------------------------ MemoryProvider
    def is_available(self) -> bool:
        try:
            return bool(self._call("is_available"))
        except Exception as err:
            logger.warning("nexus is not available: %s", err)
            return False

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        self._call("initialize", session_id, **kwargs)

    def system_prompt_block(self) -> str:
        return str(self._call("system_prompt_block") or "")

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        return str(self._call("prefetch", query, session_id=session_id) or "")

    def sync_turn(
        self, user_content: str, assistant_content: str, *, session_id: str = "", messages: Any = None
    ) -> None:
        self._call("sync_turn", user_content, assistant_content, session_id=session_id)

    def on_memory_write(self, action: str, target: str, content: str, metadata: Any = None) -> None:
        self._call("on_memory_write", action, target, content, metadata)

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        return str(self._call("on_pre_compress", []) or "")

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        self._call("on_session_end", [])

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        if self._tools is None:
            self._tools = list(self._call("get_tool_schemas") or [])
        return self._tools

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        return str(self._call("handle_tool_call", tool_name, args))

    def get_config_schema(self) -> list[dict[str, Any]]:
        return [
            {"key": "vault", "description": "Path of the nexus vault", "required": True},
            {"key": "agent", "description": "The nexus agent this Hermes profile acts as", "required": True},
            {
                "key": "keys_home",
                "description": "Folder of nexus private keys (NEXUS_HOME)",
                "required": False,
            },
            {
                "key": "command",
                "description": "The `nexus` command, when it is not on PATH",
                "required": False,
            },
        ]

    def save_config(self, values: dict[str, Any], hermes_home: str) -> None:
        self._call("save_config", values, hermes_home)

    def shutdown(self) -> None:
        try:
            self._call("shutdown")
        except Exception as err:
            logger.warning("nexus shutdown: %s", err)
        self._stop()


def register(ctx: Any) -> None:
    """Hermes' plugin entry (register_memory_provider): hand it the provider."""
    ctx.register_memory_provider(NexusMemoryProvider())
