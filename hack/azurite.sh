#!/usr/bin/env bash
# Installs Azurite, the Azure Storage emulator that the backup store tests run,
# into bin/azurite (once; later runs reuse it) and prints the path of its
# azurite-blob program. Needs Node.js and npm.
set -euo pipefail
AZURITE_VERSION="${AZURITE_VERSION:-3.37.0}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${AZURITE_DIR:-$root/bin/azurite}"
exe="$dir/node_modules/.bin/azurite-blob"
stamp="$dir/.version"
if [ ! -x "$exe" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$AZURITE_VERSION" ]; then
  command -v npm >/dev/null || { echo "hack/azurite.sh: npm not found; install Node.js and npm" >&2; exit 1; }
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >&2
  echo "$AZURITE_VERSION" >"$stamp"
fi
echo "$exe"
