/**
 * The span files of the tests that run a gateway with an OpenTelemetry SDK (tracing.test.ts,
 * tracing-instrumented.test.ts): their setup (`--require`) writes each finished span as one JSON line, the test
 * reads them.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { propagation, type SpanKind } from '@opentelemetry/api';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';

export interface SpanLine {
  name: string;
  kind: SpanKind;
  /** The instrumentation scope: the plugin's tracer or a library instrumentation's. */
  scope: string;
  traceId: string;
  traceState?: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
  status: { code: number };
  /** The baggage the span started under: what reached the code it covers. */
  baggage?: Record<string, string>;
}

/** A span processor writing every finished span to `file`, one SpanLine per line. */
export function spansFileProcessor(file: string): SpanProcessor {
  const baggageOf = new Map<string, Record<string, string>>();
  return {
    onStart: (span, parent) => {
      const entries = propagation.getBaggage(parent)?.getAllEntries() ?? [];
      baggageOf.set(span.spanContext().spanId, Object.fromEntries(entries.map(([key, entry]) => [key, entry.value])));
    },
    onEnd: (span: ReadableSpan) => {
      const { spanId, traceId, traceState } = span.spanContext();
      const line: SpanLine = {
        name: span.name,
        kind: span.kind,
        scope: span.instrumentationScope.name,
        traceId,
        traceState: traceState?.serialize(),
        spanId,
        parentSpanId: span.parentSpanContext?.spanId,
        attributes: span.attributes,
        status: span.status,
        baggage: baggageOf.get(spanId),
      };
      baggageOf.delete(spanId);
      appendFileSync(file, `${JSON.stringify(line)}\n`);
    },
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}

/** The spans written to `file` so far. */
export function readSpans(file: string): SpanLine[] {
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as SpanLine)
    : [];
}
