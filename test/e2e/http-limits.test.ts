import { expect } from 'chai';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { RawConnection, type RawResponse } from '../support/raw-http';

const HEADERS_TIMEOUT_MS = 2000;
const RECEIVE_TIMEOUT_MS = 3000;
/** Node looks for late requests twice a second; the rest is a loaded machine's slack. */
const LATE_BY_AT_MOST_MS = 1500;
/** Every test here uses one connection at a time (closed after it), but the cap's. */
const CAP = 3;

function portOf(gw: GatewayProcess): number {
  return Number(new URL(gw.baseUrl).port);
}

/** The start of a POST to the public login route, which reads its body: the headers, with no body yet. */
function loginHeaders(contentLength: number): string {
  return [
    'POST /api/login HTTP/1.1',
    'Host: 127.0.0.1',
    'Content-Type: application/json',
    `Content-Length: ${contentLength}`,
    '',
    '',
  ].join('\r\n');
}

function expectErrorBody(res: RawResponse, status: number, code: string): void {
  expect(res.status).to.equal(status);
  expect(res.headers['content-type']).to.match(/^application\/json/);
  const body = JSON.parse(res.body) as { code: string; correlationId?: string };
  expect(body.code).to.equal(code);
  expect(body.correlationId).to.equal(res.headers['x-correlation-id']);
}

/** Writes `bytes` every `everyMs` on a request already begun: 408 in the error body after `timeoutMs`, then closed. */
async function expectCutAfter(c: RawConnection, timeoutMs: number, bytes: string, everyMs: number): Promise<void> {
  const sent = Date.now();
  const drip = setInterval(() => {
    if (!c.closed) c.write(bytes);
  }, everyMs);
  try {
    const res = await c.next(timeoutMs + 5000);
    expectErrorBody(res, 408, 'REQUEST_TIMEOUT');
    expect(Date.now() - sent).to.be.within(timeoutMs - 100, timeoutMs + LATE_BY_AT_MOST_MS);
    expect(res.headers.connection).to.equal('close');
    expect(await c.closedWithin(1000), 'the connection is closed after the answer').to.equal(true);
  } finally {
    clearInterval(drip);
  }
}

describe('receive limits and the connection cap of the API server (end to end, raw sockets)', function () {
  this.timeout(60000);
  let gw: GatewayProcess | undefined;
  const open: RawConnection[] = [];

  async function connect(): Promise<RawConnection> {
    const c = await RawConnection.open(portOf(gw!));
    open.push(c);
    return c;
  }

  before(async function () {
    this.timeout(90000);
    gw = await startGateway({
      BUS_URL: 'embedded',
      HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      REQUEST_RECEIVE_TIMEOUT_MS: String(RECEIVE_TIMEOUT_MS),
      BODY_LIMIT_BYTES: '1000',
      MAX_CONNECTIONS: String(CAP),
    });
    // "ready" comes before the host has loaded the written routes.
    await eventually(
      async () => {
        const c = await RawConnection.open(portOf(gw!));
        try {
          c.send('POST', '/api/login', {});
          expect((await c.next()).status).not.to.equal(404);
        } finally {
          c.destroy();
        }
      },
      20000,
      200,
    );
  });
  afterEach(() => {
    for (const c of open.splice(0)) c.destroy();
  });
  after(async () => gw?.stop());

  it('answers a declared Content-Length over the limit with 413 at once, reading none of it, and closes the connection', async () => {
    const c = await connect();
    const sent = Date.now();
    c.write(`${loginHeaders(10_000_000)}{`);
    const res = await c.next(5000);
    const tookMs = Date.now() - sent;
    expectErrorBody(res, 413, 'PAYLOAD_TOO_LARGE');
    expect(tookMs, 'the answer does not wait for the body').to.be.below(1000);
    expect(res.headers.connection).to.equal('close');
    expect(await c.closedWithin(1000), 'the connection is closed after the answer').to.equal(true);
  });

  it('cuts a body sent a byte a second with 408 in the error body once requestReceiveTimeoutMs has passed', async () => {
    const c = await connect();
    c.write(loginHeaders(100));
    await expectCutAfter(c, RECEIVE_TIMEOUT_MS, ' ', 1000);
  });

  it('cuts headers that never end with 408 in the error body once headersTimeoutMs has passed', async () => {
    const c = await connect();
    c.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    await expectCutAfter(c, HEADERS_TIMEOUT_MS, 'X-Slow: 1\r\n', 500);
  });

  it('keeps a keep-alive connection that idles longer than both timeouts between requests', async () => {
    const c = await connect();
    c.send('GET', '/health');
    expect((await c.next()).status).to.equal(200);
    // Past both timeouts, inside Node's keep-alive timeout (5 s): idling between requests is not receiving one.
    await new Promise((r) => setTimeout(r, RECEIVE_TIMEOUT_MS + 600));
    expect(c.closed, 'still open').to.equal(false);
    c.send('POST', '/api/login', { email: 'nobody@example.com', password: 'wrong-password' });
    const res = await c.next();
    expect(res.status).to.equal(401);
    expect(res.headers.connection).not.to.equal('close');
  });

  // Last: connections it closes may still count on the server's side for a moment.
  it('closes a connection over maxConnections unanswered while the open ones keep working, and takes one again when one goes', async () => {
    const held: RawConnection[] = [];
    for (let i = 0; i < CAP; i++) {
      const c = await connect();
      c.send('GET', '/health');
      expect((await c.next()).status).to.equal(200);
      held.push(c);
    }
    const extra = await connect();
    extra.send('GET', '/health');
    expect(await extra.closedWithin(2000), 'the connection over the cap is closed').to.equal(true);
    await extra.next(100).then(
      () => expect.fail('the connection over the cap got an answer'),
      (err: Error) => expect(err.message).to.match(/closed before a complete response/),
    );
    for (const c of held) {
      c.send('GET', '/health');
      expect((await c.next()).status, 'an open connection keeps working').to.equal(200);
    }
    expect(gw!.output()).to.match(/3 connections are open \(maxConnections\)/);

    held[0]!.destroy();
    await eventually(
      async () => {
        const again = await connect();
        again.send('GET', '/health');
        expect((await again.next(2000)).status).to.equal(200);
      },
      5000,
      200,
    );
  });
});
