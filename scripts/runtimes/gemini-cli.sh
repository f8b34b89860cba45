#!/usr/bin/env bash
# Install the pinned Gemini CLI (npm) into the runtimes cache; prints nothing when it is already there.
#   scripts/runtimes/gemini-cli.sh   -> ${NEXUS_RUNTIMES:-$HOME/.cache/nexus-runtimes}/gemini-cli-VERSION/
set -euo pipefail
VERSION=0.61.0
dest="${NEXUS_RUNTIMES:-$HOME/.cache/nexus-runtimes}/gemini-cli-$VERSION"
[ -x "$dest/node_modules/.bin/gemini" ] && [ -f "$dest/.installed" ] && exit 0
mkdir -p "$dest"
npm install --prefix "$dest" --no-audit --no-fund --loglevel=error "@google/gemini-cli@$VERSION" >&2
"$dest/node_modules/.bin/gemini" --version >/dev/null
touch "$dest/.installed"
