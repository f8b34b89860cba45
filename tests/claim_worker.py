"""A claiming process for the race test: `python tests/claim_worker.py VAULT KEYS AGENT ROUNDS PROJECT GO`.

Waits for the file GO to exist, then for ROUNDS rounds tries to claim `src/hot.py` of PROJECT through
the claim operation (the check and the append one step under the log lock); when it holds the claim it
releases it at once. Prints one JSON line per attempt, only after the call returned:
{"ok": ID, "t0": ms, "t1": ms}, {"released": ID}, or {"refused": MESSAGE, "t0": ms, "t1": ms}.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexus.errors import ClaimHeldError
from nexus.operations import claims
from nexus.operations.spec import Call
from nexus.settings import DEFAULTS
from nexus.storage.vault import Vault


def main() -> None:
    vault_dir, keys, agent, rounds, project, go = sys.argv[1:7]
    call = Call(Vault(Path(vault_dir)), agent=agent, settings=DEFAULTS, keys=Path(keys))
    while not os.path.exists(go):
        time.sleep(0.005)
    for r in range(int(rounds)):
        t0 = time.time_ns() // 1_000_000
        try:
            got = claims.claim(
                call, patterns=["src/hot.py"], reason=f"{agent} round {r}", ttl="10m", project=project
            )
        except ClaimHeldError as err:
            line = {"refused": str(err), "t0": t0, "t1": time.time_ns() // 1_000_000}
            os.write(1, (json.dumps(line) + "\n").encode())
            continue
        cid = got.data["id"]
        os.write(1, (json.dumps({"ok": cid, "t0": t0, "t1": time.time_ns() // 1_000_000}) + "\n").encode())
        claims.release(call, id=cid)
        os.write(1, (json.dumps({"released": cid}) + "\n").encode())


if __name__ == "__main__":
    main()
