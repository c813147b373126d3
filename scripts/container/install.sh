#!/bin/sh
# Installs the gateway the sidecar image runs, from the packed plugin (npm pack): a gateway directory of the
# shape `eg gateway create` makes (package.json + server.js; the config directory is prepared by start.sh),
# with the plugin and its production dependencies only, at the versions the repository's package-lock.json pins
# (lockfile.js writes the gateway's lockfile from it; `npm ci` then resolves nothing against the registry).
# The Dockerfile RUNs this script and test/packaging runs it too, so the image and the tests cannot drift.
#   usage: install.sh <express-gateway-plugin-contracts-x.y.z.tgz> <repository package-lock.json> [app, default /app]
set -eu

usage='usage: install.sh <plugin tarball> <repository package-lock.json> [app directory]'
tarball=${1:?$usage}
lockfile=$(cd "$(dirname "${2:?$usage}")" && pwd)/$(basename "$2")
app=${3:-/app}
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

# npm applies `overrides` only from the root package.json: the plugin's (the host's dependencies it lifts, see
# docs/installing.md) are copied into the gateway's, so that npm ci installs what the lockfile pins.
node -e '
  const fs = require("node:fs"), plugin = JSON.parse(process.argv[1]), app = JSON.parse(fs.readFileSync("package.json", "utf8"));
  if (plugin.overrides) fs.writeFileSync("package.json", `${JSON.stringify({ ...app, overrides: plugin.overrides }, null, 2)}\n`);
' "$(tar -xzOf express-gateway-plugin-contracts.tgz package/package.json)"

cp "$here/start.sh" "$here/healthcheck.js" "$app/"
chmod +x "$app/start.sh"

node "$here/lockfile.js" "$lockfile" express-gateway-plugin-contracts.tgz package-lock.json
# The reference services' databases (pg, PGlite) are optional dependencies: the plugin never loads them.
npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund
# The tarball is installed in node_modules now: it is a build-only file, not part of the gateway.
rm express-gateway-plugin-contracts.tgz
npm cache clean --force >/dev/null 2>&1 || true
