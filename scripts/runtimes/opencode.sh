#!/usr/bin/env bash
# Install the pinned opencode (npm, a native binary) into the runtimes cache; prints nothing when it is
# already there.
#   scripts/runtimes/opencode.sh     -> ${NEXUS_RUNTIMES:-$HOME/.cache/nexus-runtimes}/opencode-VERSION/
set -euo pipefail
VERSION=1.18.33
dest="${NEXUS_RUNTIMES:-$HOME/.cache/nexus-runtimes}/opencode-$VERSION"
[ -x "$dest/node_modules/.bin/opencode" ] && [ -f "$dest/.installed" ] && exit 0
mkdir -p "$dest"
npm install --prefix "$dest" --no-audit --no-fund --loglevel=error "opencode-ai@$VERSION" >&2
"$dest/node_modules/.bin/opencode" --version >/dev/null
touch "$dest/.installed"
