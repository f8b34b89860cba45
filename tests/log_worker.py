"""A writer process for the log tests: `python tests/log_worker.py VAULT KEYS AGENT COUNT`.

Appends COUNT entries (COUNT 0: forever) through the library, with summaries "AGENT i", and prints
each id on stdout, unbuffered, only after ``log.append`` has returned (the entry is durable). A line
"ready" comes first, once the imports are done.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexus.keys import identity
from nexus.ledger import log
from nexus.storage.vault import Vault


def main() -> None:
    vault_dir, keys, agent, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    vault = Vault(Path(vault_dir))
    signer = identity.load_signer(vault, Path(keys), agent)
    os.write(1, b"ready\n")
    i = 0
    while count == 0 or i < count:
        body = f"entry {i} of {agent}\n" + "x" * (i % 300)
        result = log.append(vault, signer, channel="stress", type="note", summary=f"{agent} {i}", body=body)
        os.write(1, f"{result.located.entry.id}\n".encode())
        i += 1


if __name__ == "__main__":
    main()
