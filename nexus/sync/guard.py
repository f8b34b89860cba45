"""The claims guard: a pre-commit hook in a code repository (``nexus git setup --guard REPO``).

The hook lists the paths the commit touches and asks ``nexus claims check`` whether another agent
holds any of them exclusively; if so the commit is refused with their names. ``NEXUS_CLAIMS_OVERRIDE=1``
lets one commit through (the hook says so). ``NEXUS_AGENT`` names who commits (their own claims pass).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from ..errors import InputError
from ..storage import durable
from ..storage.vault import Vault

MARK = "# nexus claims guard (installed by `nexus git setup --guard`)"
OVERRIDE = "NEXUS_CLAIMS_OVERRIDE"


def script(vault: Vault, python: str) -> str:
    nexus = f"{shlex.quote(python)} -m nexus --vault {shlex.quote(str(vault.root))}"
    return f"""#!/bin/sh
{MARK}
# Refuses a commit that touches paths another agent holds exclusively. Override once:
#   {OVERRIDE}=1 git commit ...
if [ -n "${{{OVERRIDE}:-}}" ]; then
  echo "nexus: {OVERRIDE} is set: claims not checked for this commit" >&2
  exit 0
fi
top=$(git rev-parse --show-toplevel) || exit 1
git diff --cached --name-only -z --no-renames | xargs -0 -r {nexus} claims check \\
  ${{NEXUS_AGENT:+--agent "$NEXUS_AGENT"}} --project "$top" >&2
status=$?
if [ "$status" -ne 0 ]; then
  echo "nexus: commit refused: paths above are claimed by another agent (ask them, or set {OVERRIDE}=1)" >&2
  exit 1
fi
exit 0
"""


def install(vault: Vault, repo: Path) -> Path:
    """Write the hook into ``repo`` (any git work tree); return its path. A pre-commit hook that is
    not this one is left alone: one clear error says what to add to it."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--git-path", "hooks"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        raise InputError(f"--guard {repo}: not a git repository") from None
    hooks = (repo / out).resolve()
    target = hooks / "pre-commit"
    text = script(vault, sys.executable)
    if target.exists() and MARK not in target.read_text(encoding="utf-8", errors="replace"):
        raise InputError(
            f"{target} already exists and is not nexus's: add a call to `nexus claims check` to it "
            "(see docs/claims.md), nothing was changed"
        )
    hooks.mkdir(parents=True, exist_ok=True)
    durable.replace(target, text.encode(), mode=0o755)
    return target
