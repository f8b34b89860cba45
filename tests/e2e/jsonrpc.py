"""A runtime spoken to in JSON-RPC lines over its stdin and stdout, as its own clients speak to it
(Codex's ``app-server``, Gemini CLI's ``--acp``): one real process, a thread reading what it says,
each of our requests answered by id, its own requests (an approval, a permission) answered by
:meth:`Peer.answer`, its notifications kept in order (:meth:`Peer.wait_for`)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Self


class Peer:
    """``with Peer(command, cwd, env) as peer: peer.request(method, params)``. A subclass says how the
    runtime's own requests are answered and what opens a session (:meth:`open`)."""

    version: str | None = None  # "2.0": every message says ``"jsonrpc": "2.0"``
    group = False  # the program re-spawns itself: its whole process group is ended, at once

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.command, self.cwd, self.env = command, cwd, env
        self.notifications: list[dict[str, Any]] = []
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._next = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    # ---------------------------------------------------------------- what a subclass says

    def answer(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The result sent back for the runtime's own request ``msg``."""
        raise NotImplementedError

    def open(self) -> None:
        """What the client says first (``initialize``)."""

    # ---------------------------------------------------------------- the process

    def __enter__(self) -> Self:
        self._proc = subprocess.Popen(
            self.command,
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=self.group,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        proc = self._proc
        assert proc is not None
        if self.group:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        elif proc.stdin:
            proc.stdin.close()  # end of input: the program ends its session and exits
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            if self.group:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
            proc.wait()
        if proc.stdin and not proc.stdin.closed:
            proc.stdin.close()
        if self._reader is not None:
            self._reader.join(timeout=10)
        if proc.stdout:
            proc.stdout.close()

    def send(self, msg: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        tagged = {"jsonrpc": self.version, **msg} if self.version else msg
        self._proc.stdin.write(json.dumps(tagged) + "\n")
        self._proc.stdin.flush()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "id" in msg and "method" not in msg:
                self._replies.setdefault(int(msg["id"]), queue.Queue()).put(msg)
            elif "id" in msg:
                self.send({"id": msg["id"], "result": self.answer(msg)})
            with self._changed:
                if "method" in msg and "id" not in msg:
                    self.notifications.append(msg)
                self._changed.notify_all()

    # ---------------------------------------------------------------- what the test says

    def request(self, method: str, params: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
        """Our request, and its result (an error answer fails the test)."""
        with self._lock:
            rid = self._next
            self._next += 1
            box = self._replies.setdefault(rid, queue.Queue())
        self.send({"id": rid, "method": method, "params": params})
        reply = box.get(timeout=timeout)
        if "error" in reply:
            raise AssertionError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    def wait_for(self, method: str, since: int, timeout: float = 90) -> dict[str, Any]:
        """The first notification ``method`` at or after index ``since``."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for note in self.notifications[since:]:
                    if note.get("method") == method:
                        return note
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = sorted({n.get("method", "") for n in self.notifications[since:]})
                    raise AssertionError(f"no {method} within {timeout}s (saw {seen})")
                self._changed.wait(left)
