import { expect } from 'chai';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { http } from '../support/http';
import { TEST_JWT_SECRET } from '../support/tokens';
import { redact } from '../../plugin/logging/redact';
import { ECS_VERSION, structuredLine } from '../../plugin/logging/structured';
import { accessLog } from '../../plugin/logging/access-log';

const ADMIN = { email: 'admin@example.com', password: 'correct-horse-battery-9' };
const WRONG_PASSWORD = 'wrong-password-never-logged-7';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';

/** A login, a failed login and a request carrying the token: what must never reach the log. */
async function loginTraffic(gw: GatewayProcess): Promise<string[]> {
  const ok = await http('POST', `${gw.baseUrl}/api/login`, { body: ADMIN });
  expect(ok.status, ok.text).to.equal(200);
  const failed = await http('POST', `${gw.baseUrl}/api/login`, {
    body: { email: ADMIN.email, password: WRONG_PASSWORD },
  });
  expect(failed.status).to.equal(401);
  const withToken = await http('GET', `${gw.baseUrl}/api/users?apiKey=query-secret-5`, {
    headers: { authorization: `Bearer ${ok.body.accessToken}` },
  });
  expect(withToken.status).to.equal(200);
  return [ADMIN.password, WRONG_PASSWORD, ok.body.accessToken, ok.body.refreshToken, TEST_JWT_SECRET, 'query-secret-5'];
}

function expectNoSecrets(output: string, secrets: string[]): void {
  for (const secret of secrets)
    expect(output.includes(secret), `the log holds ${secret.slice(0, 12)}…`).to.equal(false);
  // Not even a piece of a token: the signature part of a JWT is the credential.
  expect(output).not.to.match(/eyJ[A-Za-z0-9_-]{10,}\.eyJ/);
}

describe('logs: LOG_FORMAT=json, the access log, and no secrets', function () {
  this.timeout(60000);

  describe('LOG_FORMAT=json', () => {
    let gw: GatewayProcess;
    before(async () => {
      gw = await startGateway({
        BUS_URL: 'embedded',
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'info',
        ADMIN_PASSWORD: ADMIN.password,
      });
    });
    after(async () => gw?.stop());

    it("writes one JSON object per line in pino's shape, the host's lines included, with an access line per request", async () => {
      const secrets = await loginTraffic(gw);
      const traced = await http('GET', `${gw.baseUrl}/health`, {
        headers: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
      });
      expect(traced.status).to.equal(200);
      const lines = await eventually(async () => {
        const parsed = gw
          .output()
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map((l) => JSON.parse(l) as Record<string, unknown>);
        expect(parsed.filter((l) => l.route === '/api/users')).to.have.length(1);
        expect(parsed.filter((l) => l.route === '/health')).to.have.length(1);
        return parsed;
      });
      for (const line of lines) {
        expect(line.time, JSON.stringify(line)).to.be.a('number');
        expect(Math.abs((line.time as number) - Date.now())).to.be.below(10 * 60_000);
        expect(line.level).to.be.oneOf([20, 30, 40, 50]);
        expect(line.msg).to.be.a('string');
        expect(line).not.to.have.property('message');
      }
      expect(lines.some((l) => l.name === 'EG:gateway')).to.equal(true);
      const failedLogin = lines.find((l) => l.route === '/api/login' && l.status === 401)!;
      expect(failedLogin).to.include({
        level: 30,
        method: 'POST',
        path: '/api/login',
        service: 'auth-service',
        code: 'INVALID_CREDENTIALS',
      });
      expect(failedLogin.correlationId).to.be.a('string');
      expect(failedLogin.requestId).to.be.a('string');
      expect(failedLogin.duration).to.be.a('number').and.at.least(0);
      const list = lines.find((l) => l.route === '/api/users')!;
      expect(list).to.include({ status: 200, path: '/api/users', service: 'users-service' });
      // Without an SDK the request's span is the caller's context: the line carries its trace.
      expect(lines.find((l) => l.route === '/health')).to.include({ trace_id: TRACE_ID });
      expect(list).not.to.have.property('trace_id');
      expectNoSecrets(gw.output(), secrets);
    });
  });

  describe('LOG_FORMAT=ecs', () => {
    let gw: GatewayProcess;
    before(async () => {
      gw = await startGateway({
        BUS_URL: 'embedded',
        LOG_FORMAT: 'ecs',
        LOG_LEVEL: 'info',
        ADMIN_PASSWORD: ADMIN.password,
      });
    });
    after(async () => gw?.stop());

    it("writes Elastic Common Schema lines, the host's included, with the access fields under their ECS names", async () => {
      const secrets = await loginTraffic(gw);
      const lines = await eventually(async () => {
        const parsed = gw
          .output()
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map((l) => JSON.parse(l) as Record<string, unknown>);
        expect(parsed.filter((l) => l.route === '/api/users')).to.have.length(1);
        return parsed;
      });
      for (const line of lines) {
        expect(Date.parse(line['@timestamp'] as string), JSON.stringify(line)).not.to.be.NaN;
        expect(line['log.level']).to.be.oneOf(['debug', 'info', 'warn', 'error']);
        expect(line.message).to.be.a('string');
        expect(line['ecs.version']).to.equal(ECS_VERSION);
      }
      expect(lines.some((l) => l['log.logger'] === 'EG:gateway')).to.equal(true);
      const failedLogin = lines.find((l) => l.route === '/api/login' && l['http.response.status_code'] === 401)!;
      expect(failedLogin).to.include({
        'log.level': 'info',
        'http.request.method': 'POST',
        'url.path': '/api/login',
        code: 'INVALID_CREDENTIALS',
      });
      expect(failedLogin['event.duration']).to.be.a('number').and.at.least(0);
      expectNoSecrets(gw.output(), secrets);
    });
  });

  describe('LOG_FORMAT=json on a first start without ADMIN_PASSWORD', () => {
    let gw: GatewayProcess;
    before(async () => {
      gw = await startGateway({
        BUS_URL: 'embedded',
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'info',
        ADMIN_PASSWORD: undefined,
        ADMIN_EMAIL: undefined,
      });
    });
    after(async () => gw?.stop());

    it('names the file of the generated administrator password in a JSON line; the password is in the file only', async () => {
      const file = join(gw.configDir, 'data', 'admin-password');
      const lines = await eventually(async () => {
        const parsed = gw
          .output()
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map((l) => JSON.parse(l) as Record<string, unknown>);
        if (!parsed.some((l) => String(l.msg).includes('admin-password'))) throw new Error('no administrator line yet');
        return parsed;
      });
      const line = lines.find((l) => String(l.msg).includes('admin-password'))!;
      expect(line).to.include({
        level: 30,
        name: 'contracts',
        msg: `administrator admin@example.com created; its generated password is in ${file} (readable by this user only; delete the file once read)`,
      });
      expect(statSync(file).mode & 0o777).to.equal(0o600);
      const password = readFileSync(file, 'utf8').trim();
      expect(password).to.have.length.of.at.least(16);
      const login = await http('POST', `${gw.baseUrl}/api/login`, { body: { email: 'admin@example.com', password } });
      expect(login.status, login.text).to.equal(200);
      expect(gw.output()).not.to.include(password);
    });
  });

  describe('text lines (the default)', () => {
    let gw: GatewayProcess;
    before(async () => {
      gw = await startGateway({ BUS_URL: 'embedded', LOG_LEVEL: 'info', ADMIN_PASSWORD: ADMIN.password });
    });
    after(async () => gw?.stop());

    it('logs an access line per request, readable, without a secret', async () => {
      const secrets = await loginTraffic(gw);
      await eventually(async () =>
        expect(gw.output()).to.match(
          /POST \/api\/login 401 [\d.]+ ms route=\/api\/login code=INVALID_CREDENTIALS service=auth-service correlationId=\S+ requestId=\S+/,
        ),
      );
      await eventually(async () =>
        expect(gw.output()).to.match(/GET \/api\/users 200 [\d.]+ ms route=\/api\/users service=users-service/),
      );
      expect(
        gw
          .output()
          .trim()
          .split('\n')
          .some((l) => l.startsWith('{')),
      ).to.equal(false);
      expectNoSecrets(gw.output(), secrets);
    });

    it("prints no warning from Node: none of ours, and the host's only when asked for (docs/installing.md)", () => {
      // The requests above went through the host's pipelines; nothing hides warnings here (no NODE_NO_WARNINGS).
      expect(gw.output()).not.to.match(/\(node:\d+\) |DeprecationWarning|ExperimentalWarning/);
    });
  });

  describe('ACCESS_LOG=false', () => {
    let gw: GatewayProcess;
    before(async () => {
      gw = await startGateway({ BUS_URL: 'embedded', LOG_LEVEL: 'info', ACCESS_LOG: 'false' });
    });
    after(async () => gw?.stop());

    it('logs no access line', async () => {
      expect((await http('GET', `${gw.baseUrl}/health`)).status).to.equal(200);
      expect((await http('GET', `${gw.baseUrl}/api/users`)).status).to.equal(401);
      await new Promise((r) => setTimeout(r, 200));
      expect(gw.output()).not.to.match(/GET \/(health|api\/users) \d{3} /);
    });
  });

  it('redact() blanks tokens, Authorization values, named secrets and URL credentials', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1MSJ9.c2lnbmF0dXJlLXBhcnQ';
    expect(redact(`token ${jwt} rejected`)).to.equal('token [redacted] rejected');
    expect(redact('Authorization: Bearer abcdefghijklmnop')).to.not.contain('abcdefghijklmnop');
    const named = redact('{"password":"hunter2hunter2","email":"a@b.c"}');
    expect(named).not.to.contain('hunter2');
    expect(named).to.contain('"email":"a@b.c"');
    expect(redact('connecting to amqp://guest:s3cret@rabbit:5672/')).to.equal(
      'connecting to amqp://[redacted]@rabbit:5672/',
    );
    expect(redact('GET /api/users 200')).to.equal('GET /api/users 200');
  });
});

describe('logs: the structured line shapes', () => {
  /** The lines an access log writes for these answers (it writes to stdout). */
  function accessLines(format: 'json' | 'ecs', statuses: number[]): Array<Record<string, unknown>> {
    const written: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((chunk: string) => written.push(chunk) > 0) as typeof process.stdout.write;
    try {
      const log = accessLog(format, { debug() {}, info() {}, warn() {}, error() {} });
      for (const status of statuses)
        log({
          method: 'GET',
          route: '/api/x',
          path: '/api/x',
          status,
          duration: 1.5,
          traceId: TRACE_ID,
          spanId: PARENT_ID,
        });
    } finally {
      process.stdout.write = write;
    }
    return written.map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  it("writes a 5xx access line at error and a 4xx one at info, in pino's shape", () => {
    const [ok, notFound, unavailable] = accessLines('json', [200, 404, 503]);
    expect(ok).to.include({
      level: 30,
      msg: 'GET /api/x 200',
      name: 'contracts',
      trace_id: TRACE_ID,
      span_id: PARENT_ID,
    });
    expect(notFound).to.include({ level: 30 });
    expect(unavailable).to.include({ level: 50, status: 503 });
  });

  it('writes the access fields under their ECS names with LOG_FORMAT=ecs', () => {
    const [unavailable] = accessLines('ecs', [503]);
    expect(unavailable).to.include({
      'log.level': 'error',
      'http.request.method': 'GET',
      'url.path': '/api/x',
      'http.response.status_code': 503,
      'event.duration': 1_500_000,
      'trace.id': TRACE_ID,
      'span.id': PARENT_ID,
    });
    expect(unavailable).not.to.have.property('traceId');
    expect(structuredLine('ecs', 'info', 'hello')).to.match(
      /^\{"@timestamp":"[^"]+","log.level":"info","message":"hello","ecs.version"/,
    );
  });
});
