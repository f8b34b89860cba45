"""Every error nexus raises on purpose.

One base class, so a caller (the CLI, the MCP server, a hook) can catch ``NexusError`` and print
``str(err)``: each message is one line a person or a model can act on. Nothing is written when one of
these is raised before a write starts.

    NexusError
    ├── VaultError            no vault found, not a vault, refusing to take over a folder
    ├── InputError            bad input: names, summaries, bodies, invisible characters, sizes
    │   ├── UnsafeContentError  the safety scan blocked content headed for memory
    │   └── QueryError          a search query with bad syntax, or a search language with no stemmer
    ├── IdentityError         unknown agent, missing or mismatched key, not a human identity
    ├── ConflictError         a stale edit: the file changed since the version the edit was based on
    │   ├── StaleEditError      a stale `state set`: carries the current version and a diff
    │   └── ClaimHeldError      a claim refused: another agent holds what it names (carries that claim)
    ├── NotFoundError         no such entry, decision, checkpoint, fact
    ├── CapacityError         memory would pass its limit (the message lists what is there)
    │   └── MemoryFullError     an add/replace over MEMORY.md/USER.md's limit (carries entries, usage)
    ├── IntegrityError        the vault's own files are damaged in a way that stops the operation
    ├── BusyError             another process holds what this one needs (a second watcher)
    └── IndexBuildError       building the search index failed (a helper process failed or died)
"""

from __future__ import annotations


class NexusError(Exception):
    """Base of every error nexus raises on purpose; ``str()`` is the message for the user."""

    exit_code = 1


class VaultError(NexusError):
    """No vault where one was expected, or a folder nexus refuses to take over."""


class InputError(NexusError):
    """Input that nexus refuses: it changes nothing."""

    exit_code = 2


class SettingError(InputError):
    """A setting's value nexus refuses. The library knows only the setting; the entry point, which
    knows where the value came from (a flag, a ``NEXUS_*`` variable, ``nexus.md``), names that source
    with :meth:`given_as`, so the error blames what the person typed."""

    def __init__(self, setting: str, value: object, problem: str) -> None:
        super().__init__(f"{setting} {value} {problem}")
        self.setting, self.value, self.problem = setting, value, problem

    def given_as(self, source: str) -> SettingError:
        """The same error, naming the value as it was given (``NEXUS_BRIEF_MAX_CHARS=-5``)."""
        named = SettingError(self.setting, self.value, self.problem)
        named.args = (f"{source} {self.problem}",)
        return named


class UnsafeContentError(InputError):
    """Content blocked by the safety scan (prompt injection, exfiltration, secrets…)."""


class IdentityError(NexusError):
    """An unknown agent, a missing private key, or a key that does not match."""


class ConflictError(NexusError):
    """A stale edit: the target changed since the version the edit was planned on."""

    exit_code = 3


class StaleEditError(ConflictError):
    """A stale edit of the project state; ``current`` is the version now, ``diff`` what changed since."""

    def __init__(self, message: str, current: int, diff: str) -> None:
        super().__init__(message)
        self.current = current
        self.diff = diff


class ClaimHeldError(ConflictError):
    """A claim refused because another agent holds an overlapping one; ``held`` is that claim."""

    def __init__(self, message: str, held: object) -> None:
        super().__init__(message)
        self.held = held


class SyncError(NexusError):
    """Syncing through git failed, or the vault does not verify and so is not pushed."""


class NotFoundError(NexusError):
    """The thing named does not exist."""


class CapacityError(NexusError):
    """A bounded store would pass its limit."""


class MemoryFullError(CapacityError):
    """MEMORY.md or USER.md would pass its limit; ``entries`` and ``usage`` say what is there."""

    def __init__(self, message: str, entries: tuple[str, ...] = (), usage: str = "") -> None:
        super().__init__(message)
        self.entries = entries
        self.usage = usage


class IntegrityError(NexusError):
    """The vault's files are damaged in a way that stops this operation."""


class ForkError(IntegrityError):
    """An agent's chain forked (two copies of the agent appended from one entry): its appends wait
    until it chooses a branch (``nexus log resolve-fork``)."""


class BusyError(NexusError):
    """Another process holds what this one needs."""


class IndexBuildError(NexusError):
    """Building the search index failed; the index is as it was (the next search tries again)."""


class QueryError(InputError):
    """A search query nexus cannot parse."""
