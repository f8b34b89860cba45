"""One agent's turn on one machine (a real process): read, ack, append, decide, set the state, save a
checkpoint, add memory, retain a fact. Prints JSON: the ids it was acknowledged and the ids it read.

Usage: python sync_worker.py VAULT KEYS_HOME AGENT ROUND
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

from nexus.errors import StaleEditError
from nexus.keys import identity
from nexus.ledger import log
from nexus.memory import bank
from nexus.memory import bounded as memory
from nexus.project import checkpoints, decisions, project_state
from nexus.storage.vault import Vault
from nexus.team import handoff


def main() -> None:
    root, keys, agent, rnd = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    vault = Vault(root)
    signer = identity.load_signer(vault, keys, agent)
    unread = log.unread(vault, agent)
    read = [loc.entry.id for loc in unread]
    acked: list[str] = []
    questions = [loc.entry.id for loc in unread if loc.entry.type == "question"]
    for n in range(3):
        ack = tuple(questions) if n == 0 else ()
        r = log.append(
            vault,
            signer,
            channel="work",
            type="question" if n == 1 else "note",
            summary=f"{agent} round {rnd} step {n}",
            body=f"body {n}\n\nof {agent}",
            ack=ack,
        )
        acked.append(r.located.entry.id)
    d = decisions.decide(
        vault, signer, title=f"{agent} decides in round {rnd}", decision="do it", rationale="because"
    )
    assert d.entry is not None
    acked.append(d.entry)
    current, _content, _unrecorded = project_state.show(vault)
    with contextlib.suppress(StaleEditError):
        project_state.set_state(
            vault, signer, expect=current, content=f"# State\n- {agent} set this in round {rnd}\n"
        )
    checkpoints.save(vault, agent, task=f"round {rnd}", step=f"{agent} did round {rnd}", next="more")
    memory.add(vault, "memory", agent, f"{agent} learned {rnd}", limit=2200)
    memory.add(vault, "user", None, f"the user told {agent} something in round {rnd}", limit=1375)
    bank.retain(vault, agent, type="fact", content=f"{agent} retained a fact in round {rnd}")
    # "team" works on every machine without writing to the log: its checkpoint and memory conflict
    checkpoints.save(vault, "team", task="shared", step=f"{agent}'s machine, round {rnd}", next="more")
    memory.add(vault, "memory", "team", f"team noted {agent} {rnd}", limit=2200)
    if rnd == 0:  # every machine writes the day's handoff
        handoff.write(vault, handoff.build(vault, since=None))
    print(json.dumps({"acked": acked, "read": read}))


if __name__ == "__main__":
    main()
