import { expect } from 'chai';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../support/env';
import { eventually } from '../support/gateway-process';
import { gatewayWithBus } from '../support/gateway-with-bus';
import { http as plainHttp, httpAs, type HttpResult } from '../support/http';
import { serve, ServiceError, type Operation } from '../../sdk';

const http = httpAs([]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A contract on an explicit route, open to any caller with a token. */
function operation(messageType: string, path: string, handle: Operation['handle'], timeoutMs?: number): Operation {
  return {
    contract: {
      messageType,
      http: { method: 'GET', paths: [path] },
      inputSchema: { type: 'object' },
      outputSchema: {},
      requiredPermissions: [],
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    },
    handle,
  };
}

/** What the client of an answer the gateway gave for the service by itself sees. */
function expectRefused(res: HttpResult, service: string, retryAfter?: number): void {
  expect(res.status, res.text).to.equal(503);
  expect(res.body.code).to.equal('SERVICE_UNAVAILABLE');
  expect(res.body.service).to.equal(service);
  expect(res.body.retryAfter).to.be.a('number').and.at.least(1);
  expect(res.headers.get('retry-after')).to.equal(String(res.body.retryAfter));
  if (retryAfter !== undefined) expect(res.body.retryAfter).to.equal(retryAfter);
  expect(res.text).to.not.match(/ at |node_modules|\.js:/);
}

/**
 * A fast service, a slow one (answers after 1.5 s), a silent one (answers after the gateway's deadline), one that
 * answers errors on purpose and one that goes into maintenance, on RabbitMQ behind one gateway with small limits:
 * each service is shed, cut off or answered for on its own, and the fast service's route is answered 200 throughout.
 */
describe('load shedding, circuit breaker and maintenance per service (RabbitMQ)', function () {
  this.timeout(90_000);
  const env: Record<string, string> = {
    START_REFERENCE_SERVICES: 'false',
    MAX_IN_FLIGHT_PER_SERVICE: '4',
    CIRCUIT_FAILURE_THRESHOLD: '3',
    CIRCUIT_OPEN_SECONDS: '2',
  };
  // Before the gateway starts (gatewayWithBus reads env then); the services start in the describe below.
  before(async () => {
    env.METRICS_PORT = String(await freePort());
  });
  const fx = gatewayWithBus(env, () => mkdtempSync(join(tmpdir(), 'contracts-guard-')));
  describe('with a fast, a slow, a silent, an erring and a maintenance service', () => {
    const handled = { slow: 0, silent: 0, maint: 0 };
    let silentHeals = false;
    /** Every answer of the fast route during the suite: never anything but 200. */
    const fastAnswers: number[] = [];
    const fast = async () => {
      const res = await http('GET', `${fx.gw.baseUrl}/api/fast`);
      fastAnswers.push(res.status);
      return res;
    };

    before(async () => {
      const maintOp = operation('GetMaintQuery', '/api/maint', () => {
        handled.maint += 1;
        return { ok: true };
      });
      fx.running.push(
        await serve({
          transport: fx.transport,
          service: 'fast-service',
          operations: [operation('GetFastQuery', '/api/fast', () => ({ ok: true }))],
        }),
        await serve({
          transport: fx.transport,
          service: 'slow-service',
          prefetch: 16,
          operations: [
            operation(
              'GetSlowQuery',
              '/api/slow',
              async () => {
                handled.slow += 1;
                await sleep(1500);
                return { ok: true };
              },
              10_000,
            ),
          ],
        }),
        await serve({
          transport: fx.transport,
          service: 'silent-service',
          operations: [
            operation(
              'GetSilentQuery',
              '/api/silent',
              async (_input, ctx) => {
                handled.silent += 1;
                // Answers after the gateway stopped waiting (it is dropped there), until it heals.
                if (!silentHeals) await sleep(Math.max(0, (ctx.deadline ?? Date.now()) - Date.now()) + 100);
                return { ok: true };
              },
              300,
            ),
          ],
        }),
        await serve({
          transport: fx.transport,
          service: 'erring-service',
          operations: [
            operation('GetErringQuery', '/api/erring', (input) => {
              throw input.kind === 'conflict'
                ? new ServiceError('RESOURCE_CONFLICT', 'taken')
                : new ServiceError('SERVICE_UNAVAILABLE', 'upstream broke', { status: 502 });
            }),
          ],
        }),
        await serve({
          transport: fx.transport,
          service: 'maint-service',
          instanceId: 'maint-a',
          operations: [maintOp],
        }),
        await serve({
          transport: fx.transport,
          service: 'maint-service',
          instanceId: 'maint-b',
          operations: [maintOp],
        }),
      );
      await eventually(async () => {
        for (const path of ['/api/fast', '/api/maint', '/api/erring'])
          expect((await http('GET', `${fx.gw.baseUrl}${path}`)).status, path).to.be.oneOf([200, 502]);
      }, 20_000);
    });

    after(() => {
      expect(fastAnswers.length).to.be.greaterThan(10);
      expect(
        fastAnswers.filter((s) => s !== 200),
        'the healthy service was never answered anything but 200',
      ).to.deep.equal([]);
    });

    it('sheds a slow service at maxInFlightPerService at once, and answers it again once it keeps up', async () => {
      const waiting = Array.from({ length: 4 }, () => http('GET', `${fx.gw.baseUrl}/api/slow`));
      await eventually(async () => expect(handled.slow).to.equal(4), 5000, 20);
      const started = performance.now();
      const shed = await http('GET', `${fx.gw.baseUrl}/api/slow`);
      expect(performance.now() - started, 'answered at once').to.be.below(500);
      expectRefused(shed, 'slow-service', 1);
      expect(handled.slow, 'the shed request was not sent').to.equal(4);
      for (let i = 0; i < 5; i++) expect((await fast()).status).to.equal(200);
      expect((await Promise.all(waiting)).map((r) => r.status)).to.deep.equal([200, 200, 200, 200]);
      expect((await http('GET', `${fx.gw.baseUrl}/api/slow`)).status).to.equal(200);
      expect(fx.gw.output()).to.match(/service slow-service has 4 requests awaiting replies \(maxInFlightPerService\)/);
    });

    it("opens a silent service's circuit after 3 timeouts, sends it nothing while open, and closes on an answered trial", async () => {
      for (let i = 0; i < 3; i++) {
        const res = await http('GET', `${fx.gw.baseUrl}/api/silent`);
        expect(res.status, res.text).to.equal(504);
        await fast();
      }
      const sent = handled.silent;
      const started = performance.now();
      const refused = await http('GET', `${fx.gw.baseUrl}/api/silent`);
      expect(performance.now() - started, 'well under 100 ms on an idle machine').to.be.below(500);
      expectRefused(refused, 'silent-service');
      expect(refused.body.retryAfter).to.be.at.most(2);
      const health = await plainHttp('GET', `${fx.gw.baseUrl}/health`);
      expect(health.status).to.equal(200);
      expect(health.body.openCircuits).to.have.length(1);
      expect(health.body.openCircuits[0]).to.include({ service: 'silent-service', state: 'open' });
      for (let i = 0; i < 3; i++) expect((await fast()).status).to.equal(200);
      await sleep(100);
      expect(handled.silent, 'nothing was sent while the circuit was open').to.equal(sent);

      // After circuitOpenSeconds one trial goes; it times out too, and the circuit opens again.
      await sleep(2100);
      expect((await http('GET', `${fx.gw.baseUrl}/api/silent`)).status).to.equal(504);
      expect(handled.silent).to.equal(sent + 1);
      expectRefused(await http('GET', `${fx.gw.baseUrl}/api/silent`), 'silent-service');

      // Healed: the next trial is answered and closes the circuit.
      silentHeals = true;
      await sleep(2100);
      expect((await http('GET', `${fx.gw.baseUrl}/api/silent`)).status).to.equal(200);
      expect((await http('GET', `${fx.gw.baseUrl}/api/silent`)).status).to.equal(200);
      expect((await plainHttp('GET', `${fx.gw.baseUrl}/health`)).body.openCircuits).to.deep.equal([]);
      const opened = fx.gw.output().match(/circuit of service silent-service opened/g) ?? [];
      expect(opened, 'one line per opening, none per refused request').to.have.length(2);
    });

    it('never opens the circuit for errors a service replies on purpose', async () => {
      for (let i = 0; i < 6; i++) {
        const conflict = await http('GET', `${fx.gw.baseUrl}/api/erring?kind=conflict`);
        expect(conflict.status, conflict.text).to.equal(409);
        const broken = await http('GET', `${fx.gw.baseUrl}/api/erring`);
        expect(broken.status, broken.text).to.equal(502);
      }
      expect((await plainHttp('GET', `${fx.gw.baseUrl}/health`)).body.openCircuits).to.deep.equal([]);
    });

    it('answers a service 503 with its Retry-After only while every live instance is in maintenance', async () => {
      const [a, b] = fx.running.filter((r) => r.service === 'maint-service');
      await a?.maintenance({ retryAfterSeconds: 30 });
      await sleep(500);
      expect((await http('GET', `${fx.gw.baseUrl}/api/maint`)).status, 'maint-b still serves').to.equal(200);
      await b?.maintenance({ retryAfterSeconds: 20 });
      const refused = await eventually(async () => {
        const res = await http('GET', `${fx.gw.baseUrl}/api/maint`);
        expect(res.status).to.equal(503);
        return res;
      });
      expectRefused(refused, 'maint-service', 20);
      const sent = handled.maint;
      for (let i = 0; i < 3; i++) expect((await http('GET', `${fx.gw.baseUrl}/api/maint`)).status).to.equal(503);
      expect(handled.maint, 'nothing was sent to it').to.equal(sent);
      expect((await fast()).status).to.equal(200);
      const health = await plainHttp('GET', `${fx.gw.baseUrl}/health`);
      expect(health.status).to.equal(200);
      expect(health.body.maintenance).to.deep.equal([{ service: 'maint-service', retryAfterSeconds: 20 }]);
      await a?.maintenance(false);
      await eventually(async () => expect((await http('GET', `${fx.gw.baseUrl}/api/maint`)).status).to.equal(200));
      expect((await plainHttp('GET', `${fx.gw.baseUrl}/health`)).body.maintenance).to.deep.equal([]);
      expect(fx.gw.output()).to.match(/service maint-service is in maintenance/);
    });

    it('counts shed requests, circuit changes and maintenance answers by service', async () => {
      const res = await fetch(`http://127.0.0.1:${env.METRICS_PORT}/metrics`);
      const text = await res.text();
      const value = (series: string) =>
        Number(new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
      expect(value('contracts_gateway_service_refusals_total{service="slow-service",reason="overload"}')).to.equal(1);
      expect(
        value('contracts_gateway_service_refusals_total{service="silent-service",reason="circuit_open"}'),
      ).to.equal(2);
      expect(
        value('contracts_gateway_service_refusals_total{service="maint-service",reason="maintenance"}'),
      ).to.be.at.least(4);
      expect(value('contracts_gateway_circuit_transitions_total{service="silent-service",state="open"}')).to.equal(2);
      expect(value('contracts_gateway_circuit_transitions_total{service="silent-service",state="closed"}')).to.equal(1);
      expect(text).to.not.match(/service_refusals_total\{service="fast-service"/);
    });
  });
});
