import { format as formatText } from 'node:util';
import { redact } from './redact';

const MESSAGE = Symbol.for('message');
const SPLAT = Symbol.for('splat');

interface WinstonInfo {
  level: string;
  message: unknown;
  [key: string | symbol]: unknown;
}

interface WinstonLogger {
  format: { transform(info: WinstonInfo): WinstonInfo | false };
}

type HostLoggers = Record<string, unknown> & { createLoggerWithLabel?: (label: string) => WinstonLogger };

/** A winston format writing the line as one JSON object, the same shape as the plugin's own (structured.ts). */
function jsonFormat(label: string): WinstonLogger['format'] {
  return {
    transform(info) {
      const splat = info[SPLAT];
      const message = Array.isArray(splat) ? formatText(info.message, ...splat) : String(info.message);
      info[MESSAGE] = JSON.stringify({ time: new Date().toISOString(), level: info.level, message: redact(message), logger: label });
      return info;
    },
  };
}

function isWinstonLogger(value: unknown): value is WinstonLogger {
  return typeof value === 'object' && value !== null && 'format' in value && 'log' in value;
}

/**
 * `LOG_FORMAT=json` for the host's own lines too (Express Gateway logs through winston loggers made in its
 * lib/logger.js): every logger made there, now and later, writes one JSON object per line. Called once per process,
 * when the process's runtime is made (obtainRuntime).
 */
export function hostLogsAsJson(): void {
  let loggers: HostLoggers;
  try {
    loggers = require('express-gateway/lib/logger') as HostLoggers;
  } catch {
    return; // Not running inside Express Gateway.
  }
  for (const [name, logger] of Object.entries(loggers)) if (isWinstonLogger(logger)) logger.format = jsonFormat(`EG:${name}`);
  const create = loggers.createLoggerWithLabel;
  if (typeof create === 'function') {
    loggers.createLoggerWithLabel = (label: string) => {
      const logger = create(label);
      logger.format = jsonFormat(label.replace(/^\[|\]$/g, ''));
      return logger;
    };
  }
}
