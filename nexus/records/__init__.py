"""Pure value types shared by every module: frozen dataclasses, no I/O, one module per family.

Each record kind written to the vault is described in ``nexus/vault_template/NEXUS-FORMAT.md``.

``from nexus.records import Entry`` works for every type, and loads only the module of the family it
names. Creating a frozen dataclass costs Python 3.11 about 0.6 ms of CPU (six generated methods, each
compiled), so loading all 22 types costs ~14 ms. A process loads the families it uses: the brief (the
session-start hook, ``nexus brief``, ``log read``) entries, project and team (10 types; memory too when
the agent has a memory store), ``nexus log append`` entries, appends and identities (7). A module that
creates a type only on a rarer path (an append's answer in ``ledger/log.py``, a memory store's in
``memory/bounded.py``) names it through the package (``records.AppendResult``), so its family loads on
that path only. ``benchmarks/bench_value_types.py`` measures the families; ``bench_hooks.py`` and
``bench_cli.py`` the processes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# each name and the module of its family
FAMILY = {
    "AppendResult": "appends",
    "Notice": "appends",
    "ShadowCopy": "appends",
    "Entry": "entries",
    "Located": "entries",
    "Problem": "entries",
    "Identity": "identities",
    "MemoryResult": "memory",
    "ArchivedEntry": "memory",
    "Fact": "memory",
    "BankFact": "memory",
    "Checkpoint": "project",
    "Decision": "project",
    "StateVersion": "project",
    "Section": "search",
    "Hit": "search",
    "IndexStatus": "search",
    "RefreshStats": "search",
    "Race": "team",
    "BriefSection": "team",
    "Brief": "team",
    "Claim": "team",
    "block_link": "entries",
}

if TYPE_CHECKING:
    from .appends import AppendResult as AppendResult
    from .appends import Notice as Notice
    from .appends import ShadowCopy as ShadowCopy
    from .entries import Entry as Entry
    from .entries import Located as Located
    from .entries import Problem as Problem
    from .entries import block_link as block_link
    from .identities import Identity as Identity
    from .memory import ArchivedEntry as ArchivedEntry
    from .memory import BankFact as BankFact
    from .memory import Fact as Fact
    from .memory import MemoryResult as MemoryResult
    from .project import Checkpoint as Checkpoint
    from .project import Decision as Decision
    from .project import StateVersion as StateVersion
    from .search import Hit as Hit
    from .search import IndexStatus as IndexStatus
    from .search import RefreshStats as RefreshStats
    from .search import Section as Section
    from .team import Brief as Brief
    from .team import BriefSection as BriefSection
    from .team import Claim as Claim
    from .team import Race as Race


def __getattr__(name: str) -> Any:
    """The value type ``name``, its family's module imported on first use."""
    family = FAMILY.get(name)
    if family is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # (through the import statement's machinery, so ``python -X importtime`` lists the family)
    value = getattr(__import__(f"{__name__}.{family}", fromlist=[name]), name)
    globals()[name] = value
    return value
