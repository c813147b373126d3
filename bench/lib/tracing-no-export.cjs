// (o), and every configuration of this gateway with `npm run bench -- --observe`: what a deployment with tracing on
// does (a tracer provider and an AsyncLocalStorage context manager registered globally) with no exporter, so the
// bench measures making the spans, not shipping them.
const { context, trace } = require('@opentelemetry/api');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { BasicTracerProvider } = require('@opentelemetry/sdk-trace-base');

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(new BasicTracerProvider());
