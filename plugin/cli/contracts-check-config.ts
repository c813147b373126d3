#!/usr/bin/env node
/**
 * `contracts-check-config [dir]`: checks that the host can parse system.config.yml and gateway.config.yml in `dir`
 * (default EG_CONFIG_DIR), before it starts. The host's own loader reports a malformed file with a stack trace
 * and the whole file, secrets included; this says file, line and column in one line and exits 78. The image's
 * start script runs it.
 */
import { configFileProblem } from '../host/config-files';

const dir = process.argv[2] ?? process.env.EG_CONFIG_DIR;
if (!dir) {
  process.stderr.write('[contracts] usage: contracts-check-config <config dir> (or set EG_CONFIG_DIR)\n');
  process.exit(64);
}
const problem = configFileProblem(dir);
if (problem) {
  process.stderr.write(`[contracts] ${problem}. The gateway does not start.\n`);
  process.exit(78);
}
