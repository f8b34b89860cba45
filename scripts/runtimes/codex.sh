#!/usr/bin/env bash
# Install the pinned Codex CLI (npm) into the runtimes cache; prints nothing when it is already there.
#   scripts/runtimes/codex.sh        -> ${NEXUS_RUNTIMES:-$HOME/.cache/nexus-runtimes}/codex-VERSION/
set -euo pipefail
VERSION=0.171.0
dest="${NEXUS_RUNTIMES:-$HOME/.cache/nexus-runtimes}/codex-$VERSION"
[ -x "$dest/node_modules/.bin/codex" ] && [ -f "$dest/.installed" ] && exit 0
mkdir -p "$dest"
npm install --prefix "$dest" --no-audit --no-fund --loglevel=error "@openai/codex@$VERSION" >&2
"$dest/node_modules/.bin/codex" --version >/dev/null
touch "$dest/.installed"
