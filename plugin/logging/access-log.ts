import type { Logger } from '../logger';
import type { LogFormat } from '../settings/defaults';
import { structuredLine, type LogFields } from './structured';

interface AccessFields extends LogFields {
  method: string;
  route: string;
  path: string;
  status: number;
  duration: number;
}

export type AccessLog = (fields: AccessFields) => void;

/** The path of a request URL without its query string (which may carry anything, credentials included). */
export function pathOnly(url: string | undefined): string {
  if (!url) return '';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/**
 * One line per answered request. JSON and ECS: the fields (structured.ts), at level error for a 5xx answer (as
 * pino-http does), else info, all on stdout; text: `GET /api/users/u1 200 3.1 ms` and the rest as key=value, through
 * the plugin's logger (the host's, with its timestamp, when installed in Express Gateway).
 */
export function accessLog(format: LogFormat, log: Logger): AccessLog {
  if (format !== 'text') {
    return (f) => {
      process.stdout.write(
        `${structuredLine(format, f.status >= 500 ? 'error' : 'info', `${f.method} ${f.route} ${f.status}`, f)}\n`,
      );
    };
  }
  return (f) => {
    let line = `${f.method} ${f.path} ${f.status} ${f.duration} ms route=${f.route}`;
    if (f.code) line += ` code=${f.code}`;
    if (f.service) line += ` service=${f.service}`;
    if (f.correlationId) line += ` correlationId=${f.correlationId}`;
    if (f.requestId) line += ` requestId=${f.requestId}`;
    log.info(line);
  };
}
