/**
 * Loaded into a gateway process with `--require` by tracing-instrumented.test.ts: the common deployment set-up of
 * docs/operations.md "Traces" (an OpenTelemetry NodeSDK with the HTTP and amqplib instrumentations and its default
 * propagators, W3C trace context and baggage), its finished spans written to SPANS_FILE (spans-file.ts).
 */
import { NodeSDK } from '@opentelemetry/sdk-node';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { AmqplibInstrumentation } from '@opentelemetry/instrumentation-amqplib';
import { spansFileProcessor } from './spans-file';

const file = process.env.SPANS_FILE;
if (!file) throw new Error('SPANS_FILE is not set');

new NodeSDK({
  spanProcessors: [spansFileProcessor(file)],
  instrumentations: [new HttpInstrumentation(), new AmqplibInstrumentation()],
}).start();
