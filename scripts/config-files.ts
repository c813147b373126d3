/**
 * The host's config object, loaded by its own loader (on first require) with its logger silenced: on a file it
 * cannot read, it logs the error with an excerpt of the file. What it throws becomes one line without the excerpt.
 */
export function loadHostConfig<T>(): T {
  const hostLog = require('express-gateway/lib/logger') as { config: { silent?: boolean } };
  const was = hostLog.config.silent;
  hostLog.config.silent = true;
  try {
    return require('express-gateway/lib/config') as T;
  } catch (err) {
    // js-yaml's error carries `reason` and `mark`; its message (and the error object) hold the file's text.
    const { reason, mark } = err as { reason?: string; mark?: { line: number; column: number } };
    const what =
      reason && mark
        ? `not valid YAML at line ${mark.line + 1}, column ${mark.column + 1}: ${reason}`
        : String((err as Error).message ?? err).split('\n')[0];
    throw new Error(`the gateway's configuration in ${process.env.EG_CONFIG_DIR} could not be loaded: ${what}`);
  } finally {
    hostLog.config.silent = was;
  }
}
