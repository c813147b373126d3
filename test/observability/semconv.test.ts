import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanKind } from '@opentelemetry/api';

interface SpanLine {
  name: string;
  traceId: string;
  spanId: string;
  kind: SpanKind;
  attributes: Record<string, unknown>;
  status: { code: number };
}

/** The spans semconv-spans.ts makes, in a process of its own with an SDK registered, and the lines it logs. */
function spansOfChild(): Promise<{ spans: SpanLine[]; lines: Array<Record<string, unknown>> }> {
  const dir = mkdtempSync(join(tmpdir(), 'contracts-semconv-'));
  const file = join(dir, 'spans.jsonl');
  const args = ['--require', join(__dirname, 'tracing-setup.js'), join(__dirname, 'semconv-spans.js')];
  return new Promise<{ spans: SpanLine[]; lines: Array<Record<string, unknown>> }>((resolve, reject) => {
    // execFile kills the child when the timeout passes.
    execFile(process.execPath, args, { env: { ...process.env, SPANS_FILE: file }, timeout: 15_000 }, (err, stdout) => {
      if (err) return reject(err);
      const spans = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as SpanLine);
      const lines = stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({ spans, lines });
    });
  }).finally(() => rmSync(dir, { recursive: true, force: true }));
}

describe('traces: OpenTelemetry semantic conventions of the spans', function () {
  this.timeout(20_000);
  let spans: SpanLine[];
  let lines: Array<Record<string, unknown>>;
  before(async () => {
    ({ spans, lines } = await spansOfChild());
  });

  it('makes a request over RabbitMQ a PRODUCER span on the requests exchange, the service its routing key', () => {
    const bus = spans.find((s) => s.kind === SpanKind.PRODUCER)!;
    expect(bus.name).to.equal('publish P.requests');
    expect(bus.attributes).to.deep.include({
      'messaging.system': 'rabbitmq',
      'messaging.operation.name': 'publish',
      'messaging.operation.type': 'send',
      'messaging.destination.name': 'P.requests',
      'messaging.rabbitmq.destination.routing_key': 'things',
      'error.type': 'timeout',
    });
    expect(bus.status.code).to.equal(2);
  });

  it("makes the service's handling a CONSUMER span of the same destination", () => {
    const handler = spans.find((s) => s.kind === SpanKind.CONSUMER)!;
    expect(handler.name).to.equal('process P.requests');
    expect(handler.attributes).to.deep.include({
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'P.requests',
      'messaging.rabbitmq.destination.routing_key': 'things',
    });
  });

  it('gives a server span the HTTP conventions: url, server from the Host header, client, error.type on a 5xx', () => {
    const [failed, health] = spans.filter((s) => s.kind === SpanKind.SERVER);
    expect(failed!.name).to.equal('POST /api/things');
    expect(failed!.attributes).to.deep.include({
      'url.path': '/api/things',
      'url.scheme': 'https',
      'server.address': '::1',
      'server.port': 8443,
      'client.address': '10.0.0.7',
      'error.type': '503',
      'http.response.status_code': 503,
    });
    expect(failed!.attributes).not.to.have.property('user_agent.original');
    // No Host header: the port the request reached, no address.
    expect(health!.attributes).to.deep.include({ 'url.scheme': 'http', 'server.port': 9000 });
    expect(health!.attributes).not.to.have.any.keys('server.address', 'error.type');
  });

  it("puts the active span's trace_id and span_id in the plugin's log lines, none outside a span", () => {
    const logged = spans.find((s) => s.attributes['contracts.message_type'] === 'LoggedQuery') as SpanLine;
    const inside = lines.find((l) => l.msg === 'inside a span')!;
    expect(inside).to.include({ trace_id: logged.traceId, span_id: logged.spanId });
    expect(lines.find((l) => l.msg === 'outside any span')).not.to.have.property('trace_id');
  });
});
