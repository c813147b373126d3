/**
 * Loaded into a gateway process with `--require` by tracing.test.ts: what a deployment's tracing setup does
 * (a tracer provider and an AsyncLocalStorage context manager, registered globally), with an in-memory exporter
 * whose finished spans are also written to SPANS_FILE, one JSON object per line, for the test to read.
 */
import { appendFileSync } from 'node:fs';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';

const file = process.env.SPANS_FILE;
if (!file) throw new Error('SPANS_FILE is not set');

const exporter = new InMemorySpanExporter();
const toFile: SpanProcessor = {
  onStart: () => undefined,
  onEnd: (span: ReadableSpan) => {
    const line = {
      name: span.name,
      kind: span.kind,
      traceId: span.spanContext().traceId,
      spanId: span.spanContext().spanId,
      parentSpanId: span.parentSpanContext?.spanId,
      attributes: span.attributes,
      status: span.status,
    };
    appendFileSync(file, `${JSON.stringify(line)}\n`);
  },
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter), toFile] }));
