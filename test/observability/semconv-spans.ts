/**
 * Run by semconv.test.ts in a process of its own, with tracing-setup's SDK registered (`--require`): makes the spans
 * whose attributes the test reads from SPANS_FILE. Its own process, so no other test runs with an SDK registered.
 */
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import {
  endBusSpan,
  endServerSpan,
  startBusSpan,
  startHandlerSpan,
  startServerSpan,
} from '../../plugin/observability/tracing';
import { structuredLogger } from '../../plugin/logging/structured';

const amqp = { kind: 'amqp', requestExchange: 'P.requests' };
const bus = startBusSpan(ROOT_CONTEXT, 'GetThingQuery', 'things', amqp);
endBusSpan(bus, 'timeout');
startHandlerSpan('things', 'GetThingQuery', {}, amqp).span.end();

const req = {
  method: 'POST',
  url: '/api/things?secret=1',
  headers: { host: '[::1]:8443' },
  socket: { localPort: 9000, encrypted: true },
};
const failed = startServerSpan(req, (url) => (url ?? '').split('?')[0]!);
endServerSpan(failed, 'POST', '/api/things', 503, { clientAddress: '10.0.0.7' });
const noHost = startServerSpan(
  { method: 'GET', url: '/health', headers: {}, socket: { localPort: 9000 } },
  (url) => url ?? '',
);
endServerSpan(noHost, 'GET', '/health', 200, {});

// A line the plugin logs while a span is active: on stdout, for the test to read with the span's ids.
const active = startBusSpan(ROOT_CONTEXT, 'LoggedQuery', 'things', amqp);
context.with(trace.setSpan(context.active(), active), () => structuredLogger('json').info('inside a span'));
structuredLogger('json').info('outside any span');
active.end();
