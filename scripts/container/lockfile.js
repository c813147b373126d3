// Writes the gateway directory's package-lock.json from the repository's own lockfile, so `npm ci` in the image
// installs exactly the versions the repository pins (no resolution against the registry at build time).
// The gateway depends on the plugin's tarball only; the plugin's dependencies are the repository's production
// dependencies, and npm hoists them to the same node_modules/ paths, so their lock entries are copied as they are.
//   usage: node lockfile.js <repository package-lock.json> <plugin tarball> <output package-lock.json>
'use strict';
const { createHash } = require('node:crypto');
const { readFileSync, writeFileSync } = require('node:fs');

const PLUGIN = 'express-gateway-plugin-contracts';
const TARBALL = `file:${PLUGIN}.tgz`;

/** The gateway's lockfile for the repository lockfile `repo` and the plugin tarball's bytes. */
function gatewayLockfile(repo, tarball) {
  const root = repo.packages?.[''];
  if (repo.lockfileVersion < 2 || !root) throw new Error('the repository lockfile must be lockfileVersion 2 or 3');
  if (root.name !== PLUGIN) throw new Error(`the repository lockfile is not ${PLUGIN}'s (it names ${root.name})`);
  const packages = {
    '': { name: 'contracts-gateway', version: '1.0.0', dependencies: { [PLUGIN]: TARBALL } },
    [`node_modules/${PLUGIN}`]: {
      version: root.version,
      resolved: TARBALL,
      integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
      license: root.license,
      dependencies: root.dependencies || {},
      engines: root.engines,
    },
  };
  for (const [path, entry] of Object.entries(repo.packages)) {
    // Development-only packages (dev: true) are not the plugin's; everything else is its dependency closure.
    // A link (a `file:` folder of the repository, e.g. a test helper package) is never in the packed plugin, and
    // npm leaves it unmarked: without its folder, `npm ci` in the image would refuse the whole lockfile.
    if (path === '' || entry.dev || entry.link || !path.startsWith('node_modules/')) continue;
    if (path === `node_modules/${PLUGIN}`) throw new Error(`the repository lockfile already installs ${PLUGIN}`);
    packages[path] = entry;
  }
  return { name: 'contracts-gateway', version: '1.0.0', lockfileVersion: 3, requires: true, packages };
}

module.exports = { gatewayLockfile };

if (require.main === module) {
  const [repoLock, tarball, out] = process.argv.slice(2);
  if (!out) {
    console.error('usage: node lockfile.js <repository package-lock.json> <plugin tarball> <output package-lock.json>');
    process.exit(2);
  }
  const lock = gatewayLockfile(JSON.parse(readFileSync(repoLock, 'utf8')), readFileSync(tarball));
  writeFileSync(out, `${JSON.stringify(lock, null, 2)}\n`);
}
