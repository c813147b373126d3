import { resolveSettings, type Settings } from '.';
import { validateSettings } from './validation';
import type { Logger } from '../logger';
import { errorMessage } from '../errors/describe';

/** Exit status of a start stopped by a bad setting (EX_CONFIG), so supervisors can tell it from a crash. */
export const INVALID_SETTINGS_EXIT_CODE = 78;

/**
 * The settings the process starts with, or the end of the process: one line on stderr naming the bad setting and
 * a non-zero exit. The host would only log a plugin's load error and run on without the plugin, serving nothing.
 */
export function startupSettings(raw: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = process.env): Settings {
  try {
    return resolveSettings(validateSettings(raw, env), env);
  } catch (err) {
    process.stderr.write(`[contracts] invalid setting: ${errorMessage(err)}. The gateway does not start.\n`);
    process.exit(INVALID_SETTINGS_EXIT_CODE);
  }
}

/**
 * A later init() (the host reloads its config): the running settings stay; a bad value in the edited block is
 * reported and takes no effect, because stopping a serving gateway over an edit would turn a typo into an outage.
 */
function checkReloadedSettings(raw: Record<string, unknown>, log: Logger): void {
  try {
    validateSettings(raw);
  } catch (err) {
    log.error(`invalid setting: ${errorMessage(err)}; ignored until the next start`);
  }
}

/**
 * The settings for a plugin init(): validated (or the process ends) on the first one; on later ones (host reloads,
 * `running` is the process's runtime and the host is attached) the running settings, with the edited block only
 * checked and reported.
 */
export function settingsForInit(
  raw: Record<string, unknown>,
  log: Logger,
  running?: { readonly hostAttached: boolean; readonly settings: Settings },
): Settings {
  if (running?.hostAttached) {
    checkReloadedSettings(raw, log);
    return running.settings;
  }
  return startupSettings(raw);
}
