#!/bin/sh
# The sidecar image's start command (Dockerfile CMD); test/packaging runs it as well.
# The plugin rewrites gateway.config.yml, so the gateway runs from a writable directory (EG_CONFIG_DIR).
# Hand-written files mounted at EG_CONFIG_SOURCE (system.config.yml, gateway.config.yml, models/) are copied
# there at every start; what is not mounted comes from the plugin's defaults on the first start.
# Everything else is configured by environment: PORT, HOST, BUS_URL, JWT_SECRET, … (docs/operations.md).
set -eu

app=${APP_DIR:-$(cd "$(dirname "$0")" && pwd)}
config=${EG_CONFIG_DIR:-/var/lib/gateway}
source=${EG_CONFIG_SOURCE:-/etc/gateway}
defaults="$app/node_modules/express-gateway-plugin-contracts/config"

mkdir -p "$config"
for file in system.config.yml gateway.config.yml; do
  if [ -f "$source/$file" ]; then
    cp "$source/$file" "$config/$file"
  elif [ ! -f "$config/$file" ]; then
    cp "$defaults/$file" "$config/$file"
  fi
done
if [ -d "$source/models" ]; then
  rm -rf "$config/models" && cp -R "$source/models" "$config/models"
elif [ ! -d "$config/models" ]; then
  cp -R "$defaults/models" "$config/models"
fi

export EG_CONFIG_DIR="$config"
# A file the host cannot parse: one line naming file, line and column (exit 78), not the host's dump of the file.
node "$app/node_modules/express-gateway-plugin-contracts/dist/plugin/cli/contracts-check-config.js" "$config"
# A bounded old space: the gateway's live set is small (tens of MB with 1,000 contracts), but V8 lets the heap
# grow with the garbage of each route rewrite; the bound keeps RSS flat (bench/REPORT.md, discovery at scale).
# Node 24 keeps 64 MB semi-spaces whatever that bound (Node 20 took 16 MB with it); beside a 128 MB old space the
# gateway then spent 3x the CPU per request collecting garbage (bench/REPORT.md, 2026-11-29 (3)).
export NODE_OPTIONS="${NODE_OPTIONS:---max-old-space-size=128 --max-semi-space-size=16}"
cd "$app"
# exec: node replaces the shell, so SIGTERM reaches the gateway itself and it stops gracefully.
exec node server.js
