#!/bin/sh
# Installs the gateway the sidecar image runs, from the packed plugin (npm pack): a gateway directory of the
# shape `eg gateway create` makes (package.json + server.js; the config directory is prepared by start.sh),
# with the plugin and its production dependencies only (npm ci --omit=dev).
# The Dockerfile RUNs this script and test/packaging runs it too, so the image and the tests cannot drift.
#   usage: install.sh <express-gateway-plugin-contracts-x.y.z.tgz> [app directory, default /app]
set -eu

tarball=${1:?usage: install.sh <plugin tarball> [app directory]}
app=${2:-/app}
here=$(cd "$(dirname "$0")" && pwd)

mkdir -p "$app"
cp "$tarball" "$app/express-gateway-plugin-contracts.tgz"
cd "$app"

cat > package.json <<'JSON'
{
  "name": "contracts-gateway",
  "version": "1.0.0",
  "private": true,
  "description": "Express Gateway with express-gateway-plugin-contracts (sidecar)",
  "main": "server.js",
  "dependencies": {
    "express-gateway-plugin-contracts": "file:express-gateway-plugin-contracts.tgz"
  }
}
JSON

# The host's own entry point (as in `eg gateway create`), with the config directory from EG_CONFIG_DIR.
cat > server.js <<'JS'
const gateway = require('express-gateway');

gateway()
  .load(process.env.EG_CONFIG_DIR)
  .run();
JS

cp "$here/start.sh" "$here/healthcheck.js" "$app/"
chmod +x "$app/start.sh"

npm install --package-lock-only --omit=dev --ignore-scripts --no-audit --no-fund
npm ci --omit=dev --ignore-scripts --no-audit --no-fund
npm cache clean --force >/dev/null 2>&1 || true
