#!/usr/bin/env bash
# Builds a local stand-in for node:24-bookworm-slim when no image registry is reachable (this project's machines
# reach only Debian's packages and the npm registry): Debian bookworm minbase (mmdebstrap, the host's apt sources)
# plus the host's Node 24 binary (.ci/run puts the one of .ci/node first on PATH) and the npm its release bundles
# (.ci/node/package.json's pin), with the same `node` user (uid 1000), PATH, entrypoint and CMD as the official image. Dockerfile stages see the same layout they would see there.
#   stand-in-base.sh <image name> <work directory>
set -euo pipefail
NAME=${1:?usage: stand-in-base.sh <image name> <work directory>}
W=${2:?usage: stand-in-base.sh <image name> <work directory>}
NPM_VERSION=$(node -p "require('$(dirname "$0")/../../.ci/node/package.json').dependencies.npm")

node -e 'process.exit(process.versions.node.split(".")[0] === "24" ? 0 : 1)' ||
  { echo "the stand-in needs Node 24 on the host, have $(node --version)"; exit 1; }
R=$W/rootfs
rm -rf "$R"
mkdir -p "$W"
# No mirror given: the host's apt sources are used. Docs, man pages and locales are left out as in the slim image.
mmdebstrap --quiet --variant=minbase --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' bookworm "$R"
install -m 755 "$(readlink -f "$(command -v node)")" "$R/usr/local/bin/node"
(cd "$W" && npm pack -q "npm@$NPM_VERSION" >/dev/null)
mkdir -p "$R/usr/local/lib/node_modules/npm"
tar -xzf "$W/npm-$NPM_VERSION.tgz" -C "$R/usr/local/lib/node_modules/npm" --strip-components=1
rm "$W/npm-$NPM_VERSION.tgz"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$R/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$R/usr/local/bin/npx"
# The official image's entrypoint: a first argument that is an option or not a command is run by node.
printf '%s\n' '#!/bin/sh' 'set -e' \
  'if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then set -- node "$@"; fi' \
  'exec "$@"' > "$R/usr/local/bin/docker-entrypoint.sh"
chmod 755 "$R/usr/local/bin/docker-entrypoint.sh"
chroot "$R" groupadd --gid 1000 node
chroot "$R" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
rm -rf "$R/var/lib/apt/lists/"* "$R/var/cache/apt/"*.bin
tar -C "$R" -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$(node -p process.versions.node)" \
  --change 'ENTRYPOINT ["docker-entrypoint.sh"]' --change 'CMD ["node"]' - "$NAME" >/dev/null
rm -rf "$R"
