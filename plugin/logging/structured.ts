import type { Logger } from '../logger';
import { redact } from './redact';

export type Level = 'debug' | 'info' | 'warn' | 'error';

/** The fields a line may carry besides its time, level and message (the access log fills most of them). */
export interface LogFields {
  correlationId?: string;
  requestId?: string;
  method?: string;
  route?: string;
  path?: string;
  status?: number;
  /** Milliseconds. */
  duration?: number;
  service?: string;
  code?: string;
}

/** One line of `LOG_FORMAT=json`: a JSON object with `time`, `level`, `message`, then the fields that are set. */
export function jsonLine(level: Level, message: string, fields?: LogFields): string {
  return JSON.stringify({ time: new Date().toISOString(), level, message, logger: 'contracts', ...fields });
}

const debugOn = (): boolean => process.env.LOG_LEVEL === 'debug';

/**
 * The plugin's logger with `LOG_FORMAT=json`: one JSON object per line, info and debug on stdout, warnings and
 * errors on stderr (as the host's console transport). Messages pass through redact().
 */
export const jsonLogger: Logger = {
  debug: (m) => {
    if (debugOn()) process.stdout.write(`${jsonLine('debug', redact(m))}\n`);
  },
  info: (m) => process.stdout.write(`${jsonLine('info', redact(m))}\n`),
  warn: (m) => process.stderr.write(`${jsonLine('warn', redact(m))}\n`),
  error: (m) => process.stderr.write(`${jsonLine('error', redact(m))}\n`),
};

/** Any logger, with its messages passed through redact() (the host's winston logger, `console`). */
export function redacting(log: Logger): Logger {
  return {
    debug: (m) => log.debug(redact(m)),
    info: (m) => log.info(redact(m)),
    warn: (m) => log.warn(redact(m)),
    error: (m) => log.error(redact(m)),
  };
}
