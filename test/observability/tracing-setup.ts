/**
 * Loaded into a gateway process with `--require` by tracing.test.ts: what a deployment's tracing setup does
 * (a tracer provider and an AsyncLocalStorage context manager, registered globally, no propagator), with an
 * in-memory exporter; its finished spans are also written to SPANS_FILE (spans-file.ts).
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { spansFileProcessor } from './spans-file';

const file = process.env.SPANS_FILE;
if (!file) throw new Error('SPANS_FILE is not set');

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(
  new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter()), spansFileProcessor(file)],
  }),
);
