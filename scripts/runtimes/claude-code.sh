#!/usr/bin/env bash
# Install Claude Code, pinned, for the end-to-end tests (tests/e2e/) and benchmarks/bench_runtimes.py.
#   scripts/runtimes/claude-code.sh     installs into ${NEXUS_RUNTIMES:-~/.cache/nexus-runtimes}/claude-code-VERSION/
# Idempotent: a folder already holding the binary is a cache hit and prints nothing. The install goes
# to a temporary folder renamed into place at the end, so a failed or interrupted one is never a hit.
set -euo pipefail
NAME=claude-code
VERSION=2.1.332
PACKAGE="@anthropic-ai/claude-code@$VERSION"
ROOT="${NEXUS_RUNTIMES:-$HOME/.cache/nexus-runtimes}"
DEST="$ROOT/$NAME-$VERSION"
[ -x "$DEST/node_modules/.bin/claude" ] && exit 0
command -v npm >/dev/null || { echo "$NAME: npm not found (install Node.js and npm)" >&2; exit 1; }
mkdir -p "$ROOT"
TMP="$(mktemp -d "$ROOT/.$NAME-$VERSION.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
echo "installing $PACKAGE into $DEST" >&2
if ! npm install --prefix "$TMP" --no-audit --no-fund --loglevel=error "$PACKAGE" >"$TMP.log" 2>&1; then
  why="$(grep -m 1 -E 'npm (error|ERR!) (code|network|404|E[A-Z]+)' "$TMP.log" || tail -n 1 "$TMP.log")"
  echo "$NAME: npm install $PACKAGE failed: $why" >&2
  rm -f "$TMP.log"
  exit 1
fi
rm -f "$TMP.log"
[ -x "$TMP/node_modules/.bin/claude" ] || { echo "$NAME: $PACKAGE installed no claude binary" >&2; exit 1; }
rm -rf "$DEST"
mv "$TMP" "$DEST"
trap - EXIT
