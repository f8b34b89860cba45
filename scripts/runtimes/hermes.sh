#!/usr/bin/env bash
# Hermes Agent, pinned, in its own virtual environment (it pins many packages exactly, so it never
# shares nexus's): ${NEXUS_RUNTIMES:-$HOME/.cache/nexus-runtimes}/hermes-0.19.0/bin/hermes.
# Idempotent: prints nothing when the pinned version is already there; a half-done install (no stamp)
# is started again from scratch.
set -euo pipefail
VERSION=0.19.0
DEST=${NEXUS_RUNTIMES:-$HOME/.cache/nexus-runtimes}/hermes-$VERSION
STAMP=$DEST/.nexus-installed
[ -f "$STAMP" ] && [ -x "$DEST/bin/hermes" ] && exit 0
echo "installing hermes-agent==$VERSION into $DEST" >&2
rm -rf "$DEST"
mkdir -p "$(dirname "$DEST")"
"${PYTHON:-python3}" -m venv "$DEST"
if ! "$DEST/bin/python" -m pip install -q --disable-pip-version-check "hermes-agent==$VERSION" >&2; then
  echo "hermes.sh: hermes-agent==$VERSION could not be installed from PyPI" >&2
  exit 1
fi
"$DEST/bin/hermes" --version >/dev/null
touch "$STAMP"
