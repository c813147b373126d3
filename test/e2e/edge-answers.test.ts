import { expect } from 'chai';
import { startGateway, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs } from '../support/http';
import { rawExchange } from '../support/raw-http';
import { AMQP_URL } from '../support/env';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { answer, serve, type RunningService } from '../../sdk';
import { eventually } from '../support/gateway-process';

const admin = httpAs(['admin:all']);
const nested = (levels: number): string => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

/** What the gateway answers to malformed or hostile requests, end to end (npm start, embedded bus). */
describe('edge answers to hostile input (end to end)', function () {
  this.timeout(30000);
  let gw: GatewayProcess;

  before(async () => {
    gw = await startGateway({ BUS_URL: 'embedded', MAX_JSON_DEPTH: '20' });
  });
  after(async () => gw?.stop());

  describe('JSON nesting limit (MAX_JSON_DEPTH)', () => {
    for (const [label, send, path] of [
      ['the public /api/login', http, '/api/login'],
      ['an authenticated route', admin, '/api/users'],
    ] as const) {
      it(`answers 400 VALIDATION_ERROR on ${label} for a body nested deeper than the limit, 5,000 levels included`, async () => {
        for (const levels of [21, 5000]) {
          const res = await send('POST', `${gw.baseUrl}${path}`, {
            body: nested(levels),
            headers: { 'content-type': 'application/json' },
          });
          expect(res.status, res.text).to.equal(400);
          expect(res.body).to.include({ code: 'VALIDATION_ERROR', error: 'Validation failed' });
          expect(res.body.message).to.match(/deeper than 20 levels/);
          expect(res.body.correlationId).to.equal(res.headers.get('x-correlation-id'));
          expect(res.headers.get('x-request-id')).to.be.a('string');
        }
      });
    }

    it('lets a body at the limit through to the service', async () => {
      const res = await http('POST', `${gw.baseUrl}/api/login`, {
        body: { email: 'nobody@example.com', password: 'x', extra: JSON.parse(nested(18)) },
      });
      expect(res.body.code, res.text).to.not.equal('VALIDATION_ERROR');
      expect(res.status).to.equal(401);
    });
  });

  describe("answers of Node's HTTP parser", () => {
    const port = (): number => Number(new URL(gw.baseUrl).port);
    const cases: Array<[string, string, number, string, RegExp]> = [
      [
        'a 20,000-character URL',
        `GET /api/users?q=${'x'.repeat(20000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
        431,
        'HEADERS_TOO_LARGE',
        /larger than \d+ bytes/,
      ],
      [
        'a bare CR inside a header',
        'GET /api/users HTTP/1.1\r\nHost: x\r\nX-Correlation-Id: abc\rSet-Cookie: a=1\r\n\r\n',
        400,
        'BAD_REQUEST',
        /malformed/,
      ],
      [
        'a bare LF ending a header',
        'GET /api/users HTTP/1.1\r\nHost: x\r\nX-A: b\nX-B: c\r\n\r\n',
        400,
        'BAD_REQUEST',
        /malformed/,
      ],
      [
        'an obs-fold header continuation',
        'GET /api/users HTTP/1.1\r\nHost: x\r\nX-A: b\r\n  folded\r\n\r\n',
        400,
        'BAD_REQUEST',
        /malformed/,
      ],
      ['an unknown method', 'FROB /api/users HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'BAD_REQUEST', /method/],
      [
        'chunked and Content-Length together',
        'POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
        400,
        'BAD_REQUEST',
        /Transfer-Encoding and Content-Length/,
      ],
    ];
    for (const [label, bytes, status, code, message] of cases) {
      it(`answers ${label} with ${status} ${code} in the error body, with both tracing headers, and closes`, async () => {
        const res = await rawExchange(port(), bytes);
        expect(res.status, res.raw).to.equal(status);
        expect(res.headers['content-type']).to.match(/^application\/json/);
        expect(res.headers.connection).to.equal('close');
        const body = JSON.parse(res.body);
        expect(body).to.include({ code });
        expect(body.message).to.match(message);
        expect(body.timestamp).to.be.a('string');
        expect(body.correlationId).to.be.a('string').and.equal(res.headers['x-correlation-id']);
        expect(res.headers['x-request-id']).to.be.a('string').and.not.equal('');
        expect(res.raw).not.to.match(/set-cookie/i);
      });
    }

    it('keeps serving afterwards', async () => {
      expect((await admin('GET', `${gw.baseUrl}/api/users`)).status).to.equal(200);
    });
  });

  describe('tracing headers on every answer', () => {
    for (const [method, path] of [
      ['GET', '/health'],
      ['GET', '/api-docs'],
      ['GET', '/no-such-page'],
      ['GET', '/api/users/%E0%A4%A'],
      ['GET', '/api/users'],
      ['POST', '/api/login'],
      ['OPTIONS', '/api/users'],
    ] as const) {
      it(`${method} ${path} answers with X-Correlation-Id (the caller's, when safe) and X-Request-Id`, async () => {
        const res = await http(method, `${gw.baseUrl}${path}`, { headers: { 'x-correlation-id': 'every-answer-1' } });
        expect(res.headers.get('x-correlation-id'), `${res.status}`).to.equal('every-answer-1');
        expect(res.headers.get('x-request-id'), `${res.status}`).to.be.a('string').and.not.equal('');
        if (res.body?.code) expect(res.body.correlationId).to.equal('every-answer-1');
      });
    }
  });
});

describe("a service's Location and status (end to end, RabbitMQ)", function () {
  this.timeout(30000);
  let gw: GatewayProcess;
  let transport: AmqpTransport;
  let svc: RunningService;

  before(async () => {
    gw = await startGateway({ BUS_URL: AMQP_URL, START_REFERENCE_SERVICES: 'false' });
    transport = new AmqpTransport(AMQP_URL, { prefix: gw.prefix });
    await transport.start();
    svc = await serve({
      transport,
      service: 'widgets-service',
      operations: [
        {
          // Answers with the location and status the request asks for.
          contract: {
            messageType: 'CreateWidgetCommand',
            inputSchema: { type: 'object' },
            outputSchema: { type: 'object' },
            requiredPermissions: [],
            http: { method: 'POST', paths: ['/api/widgets'] },
          },
          handle: (input) =>
            answer(
              { id: 'w1' },
              { location: input.location as string | undefined, status: input.status as number | undefined },
            ),
        },
      ],
    });
    await eventually(async () =>
      expect((await admin('POST', `${gw.baseUrl}/api/widgets`, { body: {} })).status).to.equal(201),
    );
  });
  after(async () => {
    await svc?.stop();
    await transport?.close();
    await gw?.stop();
  });

  it('sends a normalised path under /api/ as Location', async () => {
    const res = await admin('POST', `${gw.baseUrl}/api/widgets`, { body: { location: '/api/widgets/w1' } });
    expect(res.status).to.equal(201);
    expect(res.headers.get('location')).to.equal('/api/widgets/w1');
  });

  it('drops a location that leaves /api/ once normalised, and logs it once for the contract', async () => {
    for (const location of ['/api/../../evil', '/api/%2e%2e/evil', '/api/../../evil']) {
      const res = await admin('POST', `${gw.baseUrl}/api/widgets`, { body: { location } });
      expect(res.status, location).to.equal(201);
      expect(res.headers.get('location'), location).to.equal(null);
      expect(res.body).to.deep.equal({ id: 'w1' });
    }
    await eventually(async () =>
      expect(gw.output()).to.match(/widgets-service answered CreateWidgetCommand with a location/),
    );
    expect(gw.output().match(/answered CreateWidgetCommand with a location/g)).to.have.length(1);
  });

  it("replaces a status outside 2xx by the route's own and logs it once for the contract", async () => {
    for (const status of [999, 302, 999]) {
      const res = await admin('POST', `${gw.baseUrl}/api/widgets`, { body: { status } });
      expect(res.status, String(status)).to.equal(201);
    }
    await eventually(async () =>
      expect(gw.output()).to.match(/answered CreateWidgetCommand with status 999, which is not a success status/),
    );
    expect(gw.output().match(/answered CreateWidgetCommand with status/g)).to.have.length(1);
  });
});
