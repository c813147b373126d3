import { Runtime } from '../../plugin/runtime';
import { resolveSettings } from '../../plugin/settings';
import type { Logger } from '../../plugin/logger';

export const quiet: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/**
 * A runtime of the test's own, not the process's (embedded bus, not started; no config writing; no discovery grace,
 * so a route no contract serves is 404 at once): hand it to the policy factories (`jwtDevAuthPolicy(runtime.services)`,
 * createPolicies) and close it after the suite.
 */
export function testRuntime(
  settings: Record<string, unknown> = {},
  log: Logger = quiet,
  env: NodeJS.ProcessEnv = process.env,
): Runtime {
  return new Runtime(
    resolveSettings({ busUrl: 'embedded', writeConfig: false, discoveryGraceMs: 0, ...settings }, env),
    log,
  );
}
