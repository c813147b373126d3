import { expect } from 'chai';
import { connect } from 'node:net';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs } from '../support/http';
import { mintToken } from '../support/tokens';
import { AMQP_URL } from '../support/env';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, ServiceError, type HandlerContext, type RunningService } from '../../sdk';

const ORIGIN = 'https://app.example';
/** A gateway-made id (plugin/request/ids.ts newTraceId): a random UUID, version 4. */
const GENERATED_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const EXPOSED = [
  'X-Correlation-Id',
  'X-Request-Id',
  'Location',
  'Retry-After',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Idempotent-Replayed',
  'Deprecation',
  'Sunset',
];

const admin = httpAs(['admin:all']);

/** The CORS headers every answer to a cross-origin request must carry for a browser to read it. */
function expectCorsOnAnswer(headers: Headers): void {
  expect(headers.get('access-control-allow-origin')).to.equal('*');
  expect(headers.get('access-control-expose-headers')?.split(',')).to.deep.equal(EXPOSED);
  expect(headers.get('x-correlation-id')).to.be.a('string').and.not.equal('');
  expect(headers.get('x-request-id')).to.match(GENERATED_ID);
}

/** A raw HTTP/1.1 exchange, for requests fetch refuses to send. */
function rawRequest(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`${head}Connection: close\r\n\r\n`));
    let data = '';
    socket.on('data', (chunk) => (data += chunk));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

describe('CORS, tracing and rate limits through Express Gateway and RabbitMQ', () => {
  let gw: GatewayProcess;
  let api: string;
  let transport: AmqpTransport;
  let echo: RunningService;
  const seen: HandlerContext[] = [];

  before(async () => {
    gw = await startGateway({ BUS_URL: AMQP_URL });
    api = `${gw.baseUrl}/api`;
    transport = new AmqpTransport(AMQP_URL, { prefix: gw.prefix });
    await transport.start();
    const contract = (messageType: string, path: string, extra: Record<string, unknown> = {}) => ({
      messageType,
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object' },
      requiredPermissions: [],
      http: { method: 'GET' as const, paths: [path] },
      ...extra,
    });
    echo = await serve({
      transport,
      service: 'edge-echo-service',
      operations: [
        {
          // Answers with what the gateway sent along with the message.
          contract: contract('EchoHeadersQuery', '/api/echo'),
          handle: (_input, ctx) => {
            seen.push(ctx);
            return {
              correlationId: ctx.correlationId,
              requestId: ctx.requestId,
              traceparent: ctx.traceparent ?? null,
              tracestate: ctx.tracestate ?? null,
              baggage: ctx.baggage ?? null,
              userId: ctx.user?.userId ?? null,
            };
          },
        },
        {
          contract: contract('GetQuotaQuery', '/api/quota', { rateLimit: { max: 2, windowMs: 60000 } }),
          handle: () => ({ ok: true }),
        },
        {
          contract: contract('GetOpenQuotaQuery', '/api/open-quota', {
            public: true,
            rateLimit: { max: 2, windowMs: 60000 },
          }),
          handle: () => ({ ok: true }),
        },
        {
          contract: contract('GetBrokenShapeQuery', '/api/broken-shape', {
            outputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
          }),
          handle: () => ({ n: 'not a number' }),
        },
        {
          contract: contract('GetMissingThingQuery', '/api/missing-thing'),
          handle: () => {
            throw new ServiceError('NOT_FOUND', 'No such thing', { resourceType: 'Thing', resourceId: 't1' });
          },
        },
      ],
    });
    await eventually(async () => expect((await admin('GET', `${api}/echo`)).status).to.equal(200));
  });
  after(async () => {
    await echo?.stop();
    await transport?.close();
    await gw?.stop();
  });

  describe('CORS', () => {
    it('answers a preflight on an /api path with 204 and every CORS header, without credentials', async () => {
      const res = await http('OPTIONS', `${api}/users`, {
        headers: {
          origin: ORIGIN,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type,x-correlation-id',
        },
      });
      expect(res.status).to.equal(204);
      expect(res.text).to.equal('');
      expect(res.headers.get('access-control-allow-origin')).to.equal('*');
      expect(res.headers.get('access-control-allow-methods')).to.equal('GET,POST,PUT,DELETE,OPTIONS');
      expect(res.headers.get('access-control-allow-headers')?.split(',')).to.include.members([
        'Authorization',
        'Content-Type',
        'X-Dev-User-Id',
        'X-Dev-Permissions',
        'X-Correlation-Id',
        'Idempotency-Key',
      ]);
      expect(res.headers.get('access-control-max-age')).to.equal('86400');
      expect(res.headers.get('access-control-expose-headers')?.split(',')).to.deep.equal(EXPOSED);
      expect(res.headers.get('access-control-allow-credentials'), 'credentials are off by default').to.equal(null);
      expect(res.headers.get('x-correlation-id')).to.match(GENERATED_ID);
      expect(res.headers.get('x-request-id')).to.match(GENERATED_ID);
    });

    it('answers a preflight on any /api path, even one no contract serves, and echoes the correlation id', async () => {
      const res = await http('OPTIONS', `${api}/no/such/route`, {
        headers: { origin: ORIGIN, 'access-control-request-method': 'DELETE', 'x-correlation-id': 'preflight-1' },
      });
      expect(res.status).to.equal(204);
      expect(res.headers.get('access-control-allow-origin')).to.equal('*');
      expect(res.headers.get('x-correlation-id')).to.equal('preflight-1');
      expect(
        (await http('OPTIONS', api, { headers: { origin: ORIGIN, 'access-control-request-method': 'GET' } })).status,
      ).to.equal(204);
    });

    it('puts the CORS and trace headers on a 401', async () => {
      const res = await http('GET', `${api}/echo`, { headers: { origin: ORIGIN } });
      expect(res.status).to.equal(401);
      expectCorsOnAnswer(res.headers);
      expect(res.body.correlationId).to.equal(res.headers.get('x-correlation-id'));
    });

    it('puts the CORS and trace headers on a 403 and a 404', async () => {
      const forbidden = await httpAs(['users:create'], 'cors-403')('GET', `${api}/users`, {
        headers: { origin: ORIGIN },
      });
      expect(forbidden.status).to.equal(403);
      expectCorsOnAnswer(forbidden.headers);
      const missing = await admin('GET', `${api}/missing-thing`, { headers: { origin: ORIGIN } });
      expect(missing.status).to.equal(404);
      expect(missing.body).to.include({ code: 'NOT_FOUND', resourceType: 'Thing' });
      expectCorsOnAnswer(missing.headers);
    });

    it('lists cors and our policies in gateway.config.yml', () => {
      const text = gw.gatewayConfig();
      expect(text).to.match(/^ {2}- cors$/m);
      expect(text).to.match(/^ {2}- request-trace$/m);
      expect(text).to.match(/^ {2}- contract-rate-limit$/m);
    });
  });

  describe('tracing', () => {
    it('passes the correlation id, request id and user to the service and answers with the same ids', async () => {
      const res = await httpAs([], 'trace-user')('GET', `${api}/echo`, {
        headers: { 'x-correlation-id': 'order-42.retry-1' },
      });
      expect(res.status, res.text).to.equal(200);
      expect(res.headers.get('x-correlation-id')).to.equal('order-42.retry-1');
      expect(res.body).to.deep.equal({
        correlationId: 'order-42.retry-1',
        requestId: res.headers.get('x-request-id'),
        traceparent: null,
        tracestate: null,
        baggage: null,
        userId: 'trace-user',
      });
    });

    it('tells the service when the gateway stops waiting: the deadline header, the request time plus its timeout', async () => {
      const before = Date.now();
      const res = await httpAs([], 'deadline-user')('GET', `${api}/echo`, {
        headers: { 'x-correlation-id': 'deadline-1' },
      });
      const after = Date.now();
      expect(res.status, res.text).to.equal(200);
      const ctx = seen.find((c) => c.correlationId === 'deadline-1');
      // The default REQUEST_TIMEOUT_MS (30000), counted from when the gateway sent the message.
      expect(ctx?.deadline)
        .to.be.a('number')
        .within(before + 30000, after + 30000);
    });

    it('replaces a correlation id that is too long or unsafe, and sends the replacement to the service', async () => {
      for (const given of ['x'.repeat(500), 'a'.repeat(129), 'abc%0d%0aSet-Cookie:%20a=1', 'two words', '"quoted"']) {
        const res = await admin('GET', `${api}/echo`, { headers: { 'x-correlation-id': given } });
        expect(res.status).to.equal(200);
        const id = res.headers.get('x-correlation-id');
        expect(id, given).to.match(GENERATED_ID);
        expect(res.body.correlationId).to.equal(id);
      }
    });

    it('never lets a CR/LF in the id reach a response header', async () => {
      const port = Number(new URL(gw.baseUrl).port);
      // A CR inside the value: refused by Node's HTTP parser before the gateway sees it.
      const cr = await rawRequest(
        port,
        'GET /api/echo HTTP/1.1\r\nHost: x\r\nX-Correlation-Id: abc\rSet-Cookie: a=1\r\n',
      );
      expect(cr).to.match(/^HTTP\/1\.1 400/);
      expect(cr).not.to.match(/set-cookie/i);
      // CRLF ends the header: what follows is another request header, never a response header.
      const crlf = await rawRequest(
        port,
        'OPTIONS /api/echo HTTP/1.1\r\nHost: x\r\nX-Correlation-Id: abc\r\nSet-Cookie: a=1\r\n',
      );
      expect(crlf).to.match(/^HTTP\/1\.1 204/);
      expect(crlf).to.match(/\r\nX-Correlation-Id: abc\r\n/);
      expect(crlf).not.to.match(/set-cookie/i);
    });

    it('makes a new X-Request-Id for every request, even with one correlation id', async () => {
      const ids = new Set<string>();
      for (let i = 0; i < 5; i += 1) {
        const res = await admin('GET', `${api}/echo`, { headers: { 'x-correlation-id': 'same-flow' } });
        ids.add(res.headers.get('x-request-id') as string);
      }
      expect(ids.size).to.equal(5);
    });

    it('propagates a valid W3C traceparent to the service, and only a valid one', async () => {
      const valid = await admin('GET', `${api}/echo`, { headers: { traceparent: TRACEPARENT } });
      expect(valid.body.traceparent).to.equal(TRACEPARENT);
      for (const bad of [
        '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
        'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
        'garbage',
      ]) {
        const res = await admin('GET', `${api}/echo`, { headers: { traceparent: bad } });
        expect(res.body.traceparent, bad).to.equal(null);
      }
    });

    it("passes the caller's tracestate and baggage on with its traceparent (W3C, no SDK registered)", async () => {
      const res = await admin('GET', `${api}/echo`, {
        headers: { traceparent: TRACEPARENT, tracestate: 'rojo=00f067aa0ba902b7', baggage: 'tenant=t-1' },
      });
      expect(res.body).to.include({
        traceparent: TRACEPARENT,
        tracestate: 'rojo=00f067aa0ba902b7',
        baggage: 'tenant=t-1',
      });
      // Baggage travels without a trace context too; a tracestate does not (it belongs to a traceparent).
      const alone = await admin('GET', `${api}/echo`, { headers: { tracestate: 'rojo=1', baggage: 'tenant=t-2' } });
      expect(alone.body).to.include({ traceparent: null, tracestate: null, baggage: 'tenant=t-2' });
    });

    it("logs a request's problem with its correlation id", async () => {
      const res = await admin('GET', `${api}/broken-shape`, { headers: { 'x-correlation-id': 'log-line-check-7' } });
      expect(res.status).to.equal(200);
      await eventually(async () =>
        expect(gw.output()).to.match(/\[log-line-check-7\] edge-echo-service answered GetBrokenShapeQuery/),
      );
    });
  });

  describe('rate limits (per contract, in memory)', () => {
    it('reports the budget in X-RateLimit-* headers', async () => {
      const res = await httpAs([], 'headers-user')('GET', `${api}/quota`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('x-ratelimit-limit')).to.equal('2');
      expect(res.headers.get('x-ratelimit-remaining')).to.equal('1');
      const reset = Number(res.headers.get('x-ratelimit-reset'));
      expect(reset).to.be.within(Math.floor(Date.now() / 1000), Math.ceil(Date.now() / 1000) + 61);
    });

    it('answers 429 RATE_LIMIT_EXCEEDED with retryAfter and Retry-After once over, fast, with CORS and trace headers', async () => {
      const user = httpAs([], 'greedy-user');
      expect((await user('GET', `${api}/quota`)).status).to.equal(200);
      expect((await user('GET', `${api}/quota`)).status).to.equal(200);
      const started = Date.now();
      const res = await user('GET', `${api}/quota`, { headers: { origin: ORIGIN, 'x-correlation-id': 'too-many-1' } });
      expect(Date.now() - started, 'no artificial delay').to.be.below(1000);
      expect(res.status).to.equal(429);
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      expect(res.body).to.include({
        error: 'Too Many Requests',
        code: 'RATE_LIMIT_EXCEEDED',
        correlationId: 'too-many-1',
      });
      expect(res.body.retryAfter).to.be.a('number').within(1, 60);
      expect(res.headers.get('retry-after')).to.equal(String(res.body.retryAfter));
      expect(res.headers.get('x-ratelimit-remaining')).to.equal('0');
      expectCorsOnAnswer(res.headers);
    });

    it('gives every authenticated user a budget of their own', async () => {
      const alice = httpAs([], 'alice-budget');
      const bob = httpAs([], 'bob-budget');
      expect((await alice('GET', `${api}/quota`)).status).to.equal(200);
      expect((await alice('GET', `${api}/quota`)).status).to.equal(200);
      expect((await alice('GET', `${api}/quota`)).status).to.equal(429);
      const first = await bob('GET', `${api}/quota`);
      expect(first.status).to.equal(200);
      expect(first.headers.get('x-ratelimit-remaining')).to.equal('1');
    });

    it('counts anonymous callers by address and a forged token as anonymous', async () => {
      expect((await http('GET', `${api}/open-quota`)).status).to.equal(200);
      // Unverifiable token with a fresh sub: still the same address, so the same budget.
      const forged = {
        authorization: `Bearer ${await mintToken({ sub: 'fresh-sub' }, 'not-the-gateway-secret-but-long-enough-0123')}`,
      };
      expect((await http('GET', `${api}/open-quota`, { headers: forged })).status).to.equal(200);
      expect((await http('GET', `${api}/open-quota`)).status).to.equal(429);
      // A verified user on the same address has a budget of their own.
      const user = await httpAs([], 'carol-open')('GET', `${api}/open-quota`);
      expect(user.status).to.equal(200);
      expect(user.headers.get('x-ratelimit-remaining')).to.equal('1');
    });

    it('limits only the contracts that ask for it when no gateway-wide limit is set', async () => {
      const res = await admin('GET', `${api}/echo`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('x-ratelimit-limit')).to.equal(null);
    });
  });
});

describe('settings: CORS credentials and PATCH, and the RATE_LIMIT_MAX quick-start switch', () => {
  let gw: GatewayProcess;
  let api: string;

  before(async () => {
    gw = await startGateway({
      BUS_URL: 'embedded',
      CORS_CREDENTIALS: 'true',
      CORS_ALLOW_PATCH: 'true',
      RATE_LIMIT_MAX: '3',
      RATE_LIMIT_WINDOW_MS: '60000',
    });
    api = `${gw.baseUrl}/api`;
  });
  after(async () => gw?.stop());

  it('with credentials on, reflects the request origin instead of * and allows credentials', async () => {
    const res = await http('OPTIONS', `${api}/users`, {
      headers: { origin: ORIGIN, 'access-control-request-method': 'PATCH' },
    });
    expect(res.status).to.equal(204);
    expect(res.headers.get('access-control-allow-origin')).to.equal(ORIGIN);
    expect(res.headers.get('access-control-allow-credentials')).to.equal('true');
    expect(res.headers.get('vary')).to.match(/origin/i);
    expect(res.headers.get('access-control-allow-methods')).to.equal('GET,POST,PUT,DELETE,PATCH,OPTIONS');
    const error = await http('GET', `${api}/users`, { headers: { origin: 'https://other.example' } });
    expect(error.status).to.equal(401);
    expect(error.headers.get('access-control-allow-origin')).to.equal('https://other.example');
    expect(error.headers.get('access-control-allow-credentials')).to.equal('true');
  });

  it('RATE_LIMIT_MAX limits every route per caller', async () => {
    const user = httpAs(['admin:all'], 'quick-start-user');
    const remaining: Array<string | null> = [];
    for (let i = 0; i < 3; i += 1) {
      const res = await user('GET', `${api}/users`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('x-ratelimit-limit')).to.equal('3');
      remaining.push(res.headers.get('x-ratelimit-remaining'));
    }
    expect(remaining).to.deep.equal(['2', '1', '0']);
    const over = await user('GET', `${api}/users/anyone`);
    expect(over.status, "the budget is the caller's, across routes").to.equal(429);
    expect(over.body.code).to.equal('RATE_LIMIT_EXCEEDED');
    expect((await httpAs(['admin:all'], 'another-user')('GET', `${api}/users`)).status).to.equal(200);
  });
});
