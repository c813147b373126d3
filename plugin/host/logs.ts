import { format as formatText } from 'node:util';
import { redact } from '../logging/redact';
import { structuredLine, type Level, type StructuredFormat } from '../logging/structured';

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

const LEVELS: ReadonlySet<string> = new Set(['debug', 'info', 'warn', 'error']);

/** A winston format writing the line as one JSON object, the same shape as the plugin's own (plugin/logging/structured.ts). */
function structuredFormat(format: StructuredFormat, label: string): WinstonLogger['format'] {
  return {
    transform(info) {
      const splat = info[SPLAT];
      const message = Array.isArray(splat) ? formatText(info.message, ...splat) : String(info.message);
      // winston's other levels (verbose, silly) are debug to pino and ECS readers.
      const level = (LEVELS.has(info.level) ? info.level : 'debug') as Level;
      info[MESSAGE] = structuredLine(format, level, redact(message), {}, label);
      return info;
    },
  };
}

function isWinstonLogger(value: unknown): value is WinstonLogger {
  return typeof value === 'object' && value !== null && 'format' in value && 'log' in value;
}

/**
 * `LOG_FORMAT=json` or `ecs` for the host's own lines too (Express Gateway logs through winston loggers made in its
 * lib/logger.js): every logger made there, now and later, writes one JSON object per line. Called once per process,
 * when the process's runtime is made (obtainRuntime).
 */
export function hostLogsStructured(format: StructuredFormat): void {
  let loggers: HostLoggers;
  try {
    loggers = require('express-gateway/lib/logger') as HostLoggers;
  } catch {
    return; // Not running inside Express Gateway.
  }
  for (const [name, logger] of Object.entries(loggers))
    if (isWinstonLogger(logger)) logger.format = structuredFormat(format, `EG:${name}`);
  const create = loggers.createLoggerWithLabel;
  if (typeof create === 'function') {
    loggers.createLoggerWithLabel = (label: string) => {
      const logger = create(label);
      logger.format = structuredFormat(format, label.replace(/^\[|\]$/g, ''));
      return logger;
    };
  }
}
