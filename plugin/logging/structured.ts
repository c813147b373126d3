import { trace, type SpanContext } from '@opentelemetry/api';
import type { Logger } from '../logger';
import { redact } from './redact';

export type Level = 'debug' | 'info' | 'warn' | 'error';

/** The structured formats: `json` is pino's line shape, `ecs` Elastic Common Schema's. */
export type StructuredFormat = 'json' | 'ecs';

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
  /** The W3C ids of the span the line was written in (the request's server span on access lines). */
  traceId?: string;
  spanId?: string;
}

/** pino's numeric levels, which pino-pretty, pino-elasticsearch and the rest read. */
const PINO_LEVELS: Readonly<Record<Level, number>> = { debug: 20, info: 30, warn: 40, error: 50 };
/** The ECS version the `ecs` lines follow (its field names below). */
export const ECS_VERSION = '8.11.0';

/**
 * One line of `LOG_FORMAT=json`, in pino's shape: numeric `level`, `time` in epoch milliseconds, `name` (the
 * logger), `msg`, then the fields that are set; the span's ids as `trace_id`/`span_id` (OpenTelemetry's pino names).
 */
function pinoLine(level: Level, message: string, logger: string, fields: LogFields): string {
  const { traceId, spanId, ...rest } = fields;
  const ids = traceId ? { trace_id: traceId, span_id: spanId } : undefined;
  return JSON.stringify({ level: PINO_LEVELS[level], time: Date.now(), name: logger, msg: message, ...rest, ...ids });
}

/**
 * One line of `LOG_FORMAT=ecs`: `@timestamp`, `log.level`, `message`, `ecs.version`, `log.logger`; the access fields
 * under their ECS names (`http.request.method`, `url.path`, `http.response.status_code`, `event.duration` in
 * nanoseconds, `trace.id`, `span.id`), the plugin's own ones as they are.
 */
function ecsLine(level: Level, message: string, logger: string, fields: LogFields): string {
  const { method, path, status, duration, traceId, spanId, ...rest } = fields;
  return JSON.stringify({
    '@timestamp': new Date().toISOString(),
    'log.level': level,
    message,
    'ecs.version': ECS_VERSION,
    'log.logger': logger,
    ...(method !== undefined ? { 'http.request.method': method } : {}),
    ...(path !== undefined ? { 'url.path': path } : {}),
    ...(status !== undefined ? { 'http.response.status_code': status } : {}),
    ...(duration !== undefined ? { 'event.duration': Math.round(duration * 1e6) } : {}),
    ...rest,
    ...(traceId ? { 'trace.id': traceId, 'span.id': spanId } : {}),
  });
}

/** One structured line; `logger` names who wrote it (`contracts`, `EG:gateway`, …). */
export function structuredLine(
  format: StructuredFormat,
  level: Level,
  message: string,
  fields: LogFields = {},
  logger = 'contracts',
): string {
  return format === 'ecs' ? ecsLine(level, message, logger, fields) : pinoLine(level, message, logger, fields);
}

/** A span context's ids for a line, when it is a valid one (an SDK is registered, or the caller's trace). */
export function spanIdsOf(sc: SpanContext | undefined): Pick<LogFields, 'traceId' | 'spanId'> {
  return sc !== undefined && trace.isSpanContextValid(sc) ? { traceId: sc.traceId, spanId: sc.spanId } : {};
}

/** The ids of the span active where a line is written, when there is a valid one (an SDK is registered). */
function activeSpanIds(): Pick<LogFields, 'traceId' | 'spanId'> {
  return spanIdsOf(trace.getActiveSpan()?.spanContext());
}

const debugOn = (): boolean => process.env.LOG_LEVEL === 'debug';

/**
 * The plugin's logger with a structured LOG_FORMAT: one JSON object per line, info and debug on stdout, warnings
 * and errors on stderr (as the host's console transport). Messages pass through redact().
 */
export function structuredLogger(format: StructuredFormat): Logger {
  const line = (level: Level, m: string): string => `${structuredLine(format, level, redact(m), activeSpanIds())}\n`;
  return {
    debug: (m) => {
      if (debugOn()) process.stdout.write(line('debug', m));
    },
    info: (m) => process.stdout.write(line('info', m)),
    warn: (m) => process.stderr.write(line('warn', m)),
    error: (m) => process.stderr.write(line('error', m)),
  };
}

/** Any logger, with its messages passed through redact() (the host's winston logger, `console`). */
export function redacting(log: Logger): Logger {
  return {
    debug: (m) => log.debug(redact(m)),
    info: (m) => log.info(redact(m)),
    warn: (m) => log.warn(redact(m)),
    error: (m) => log.error(redact(m)),
  };
}
