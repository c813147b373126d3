#!/usr/bin/env node
/**
 * `contracts-check-config [dir]`: checks that the host can parse system.config.yml and gateway.config.yml in `dir`
 * (default EG_CONFIG_DIR), before it starts. The host's own loader reports a malformed file with a stack trace
 * and the whole file, secrets included; this says file, line and column in one line and exits 78. The image's
 * start script runs it.
 */
import { configFileProblem } from '../host/config-files';
import { asksForHelp } from './command';

const USAGE = `usage: contracts-check-config [config dir]
  Checks that Express Gateway can parse system.config.yml and gateway.config.yml in the directory (default
  EG_CONFIG_DIR); a problem is one line with file, line and column, and exit 78.
`;
if (asksForHelp(process.argv.slice(2))) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const dir = process.argv[2] ?? process.env.EG_CONFIG_DIR;
if (!dir) {
  process.stderr.write(`[contracts] no config directory given, and EG_CONFIG_DIR is not set\n${USAGE}`);
  process.exit(64);
}
const problem = configFileProblem(dir);
if (problem) {
  process.stderr.write(`[contracts] ${problem}. The gateway does not start.\n`);
  process.exit(78);
}
