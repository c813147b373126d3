import { expect } from 'chai';
import { GatewayError } from '../../plugin/errors/gateway-error';
import type { Announcement } from '../../plugin/contracts/types';
import type { Reply, RequestMessage, Transport } from '../../plugin/bus/transport';

/** What each implementation's test file provides: three started transports on one bus. */
export interface ConformanceFixture {
  gateway: Transport;
  service: Transport;
  service2: Transport;
  cleanup(): Promise<void>;
}

let serial = 0;
/** A service name no other test uses. */
function uniqueService(base: string): string {
  serial += 1;
  return `${base}-${serial}`;
}

export function requestFor(
  service: string,
  input: Record<string, unknown> = {},
  messageType = 'EchoQuery',
): RequestMessage {
  return {
    messageType,
    targetService: service,
    input,
    headers: { correlationId: `corr-${service}`, requestId: `req-${service}` },
  };
}

/** Resolves with the error a promise rejects with; fails the test if it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<GatewayError> {
  let value: unknown;
  try {
    value = await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it returns true, or fails after `withinMs`. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  withinMs = 5000,
  what = 'condition',
): Promise<void> {
  const until = Date.now() + withinMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A promise that settles from outside. */
export function deferred<T = void>(): { promise: Promise<T>; resolve(value: T): void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const echo = async (m: RequestMessage): Promise<Reply> => ({ ok: true, result: m.input });

/**
 * The one conformance suite of the Transport interface: every implementation runs it unchanged.
 * `make` returns three started transports on one bus (a gateway and two service instances).
 */
export function transportConformance(name: string, make: () => Promise<ConformanceFixture>): void {
  describe(`Transport conformance: ${name}`, () => {
    let t: ConformanceFixture;
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };

    before(() => {
      process.on('unhandledRejection', onUnhandled);
    });
    after(() => {
      process.removeListener('unhandledRejection', onUnhandled);
    });
    beforeEach(async () => {
      unhandled.length = 0;
      t = await make();
    });
    afterEach(async () => {
      await t.cleanup();
      expect(unhandled, 'unhandled rejections').to.deep.equal([]);
    });

    it('starts up', () => {
      expect(t.gateway.state()).to.equal('up');
      expect(t.service.state()).to.equal('up');
      expect(t.service2.state()).to.equal('up');
    });

    describe('request/reply', () => {
      it('delivers input, message type and headers to the handler and its reply to the caller', async () => {
        const service = uniqueService('users');
        let seen: RequestMessage | undefined;
        await t.service.serve(service, async (m) => {
          seen = m;
          return { ok: true, result: { id: 'u1', got: m.input }, status: 201, location: '/api/users/u1' };
        });
        const user = {
          userId: 'u-9',
          email: 'a@b.c',
          name: 'A B',
          permissions: ['users:read', 'users:write'],
          roles: ['admin'],
        };
        const message: RequestMessage = {
          messageType: 'CreateUserCommand',
          targetService: service,
          input: { name: 'Ann', nested: { list: [1, 2, { x: null }] }, unicode: 'ü✓' },
          headers: {
            correlationId: 'corr-123',
            requestId: 'req-456',
            user,
            traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
            tracestate: 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7',
            baggage: 'tenant=t-1,region=eu%20west',
            clientAddress: '2001:db8::7',
          },
        };
        const reply = await t.gateway.request(message, 5000);

        expect(reply).to.deep.equal({
          ok: true,
          result: { id: 'u1', got: message.input },
          status: 201,
          location: '/api/users/u1',
        });
        expect(seen).to.not.equal(undefined);
        expect(seen!.messageType).to.equal('CreateUserCommand');
        expect(seen!.targetService).to.equal(service);
        expect(seen!.input).to.deep.equal(message.input);
        expect(seen!.headers.correlationId).to.equal('corr-123');
        expect(seen!.headers.requestId).to.equal('req-456');
        expect(seen!.headers.user).to.deep.equal(user);
        expect(seen!.headers.traceparent).to.equal(message.headers.traceparent);
        expect(seen!.headers.tracestate).to.equal(message.headers.tracestate);
        expect(seen!.headers.baggage).to.equal(message.headers.baggage);
        expect(seen!.headers.clientAddress).to.equal('2001:db8::7');
      });

      it('delivers no user for an anonymous request', async () => {
        const service = uniqueService('anon');
        let seen: RequestMessage | undefined;
        await t.service.serve(service, async (m) => {
          seen = m;
          return { ok: true };
        });
        expect(await t.gateway.request(requestFor(service, { a: 1 }), 5000)).to.deep.equal({ ok: true });
        expect(seen!.headers.user).to.equal(undefined);
        expect(seen!.headers.correlationId).to.equal(`corr-${service}`);
      });

      it('a handler cannot mutate the caller’s message', async () => {
        const service = uniqueService('mutator');
        await t.service.serve(service, async (m) => {
          (m.input as { list: number[] }).list.push(99);
          m.headers.correlationId = 'changed';
          return { ok: true, result: m.input };
        });
        const message = requestFor(service, { list: [1] });
        const reply = await t.gateway.request(message, 5000);
        expect(reply).to.deep.equal({ ok: true, result: { list: [1, 99] } });
        expect(message.input).to.deep.equal({ list: [1] });
        expect(message.headers.correlationId).to.equal(`corr-${service}`);
      });

      it('passes a service error reply through unchanged', async () => {
        const service = uniqueService('errs');
        const error = { code: 'NOT_FOUND', message: 'No such user', details: { userId: 'x' }, resourceType: 'User' };
        await t.service.serve(service, async () => ({ ok: false, error }));
        expect(await t.gateway.request(requestFor(service), 5000)).to.deep.equal({ ok: false, error });
      });

      it('turns a throwing or rejecting handler into INTERNAL_ERROR without leaking its message', async () => {
        const service = uniqueService('thrower');
        let calls = 0;
        await t.service.serve(service, async (m) => {
          calls += 1;
          if (m.input.mode === 'throw') throw new Error('secret: connection string postgres://admin:hunter2@db');
          if (m.input.mode === 'reject') return Promise.reject('secret hunter2 as a string');
          return { not: 'an envelope' } as unknown as Reply;
        });
        for (const mode of ['throw', 'reject', 'garbage']) {
          const reply = await t.gateway.request(requestFor(service, { mode }), 5000);
          expect(reply.ok, mode).to.equal(false);
          expect(reply).to.deep.equal({ ok: false, error: { code: 'INTERNAL_ERROR' } });
          expect(JSON.stringify(reply)).to.not.match(/secret|hunter2|envelope/);
        }
        expect(calls).to.equal(3);
        // the service keeps serving
        await t.service.serve(uniqueService('after-throw'), echo);
      });
    });

    describe('failures', () => {
      it('rejects at once with 503 SERVICE_UNAVAILABLE and Retry-After when nobody serves the service', async () => {
        const started = Date.now();
        const err = await rejection(t.gateway.request(requestFor(uniqueService('nobody')), 10_000));
        const elapsed = Date.now() - started;
        expect(err.code).to.equal('SERVICE_UNAVAILABLE');
        expect(err.status).to.equal(503);
        expect(err.headers['Retry-After']).to.match(/^\d+$/);
        expect(err.extra.retryAfter).to.be.a('number');
        expect(elapsed, 'unroutable must not wait for the deadline').to.be.lessThan(1000);
      });

      it('rejects with 504 TIMEOUT at the deadline and drops the late reply', async () => {
        const service = uniqueService('slow');
        const handlerDone = deferred();
        await t.service.serve(service, async (m) => {
          if (m.input.slow) {
            await sleep(400);
            handlerDone.resolve();
            return { ok: true, result: 'late' };
          }
          return { ok: true, result: { fast: m.input.n } };
        });
        const started = Date.now();
        const err = await rejection(t.gateway.request(requestFor(service, { slow: true }), 150));
        const elapsed = Date.now() - started;
        expect(err.code).to.equal('TIMEOUT');
        expect(err.status).to.equal(504);
        expect(err.extra.timeoutMs).to.equal(150);
        expect(elapsed).to.be.at.least(140);
        expect(elapsed).to.be.lessThan(2000);

        await handlerDone.promise;
        await sleep(100); // the late reply reaches the gateway meanwhile and must go nowhere
        expect(await t.gateway.request(requestFor(service, { n: 7 }), 5000)).to.deep.equal({
          ok: true,
          result: { fast: 7 },
        });
      });

      it('rejects with 503 once the last serve subscription is closed, and stops delivering to it', async () => {
        const service = uniqueService('leaving');
        let calls = 0;
        const sub = await t.service.serve(service, async (m) => {
          calls += 1;
          return echo(m);
        });
        expect(await t.gateway.request(requestFor(service, { a: 1 }), 5000)).to.deep.equal({
          ok: true,
          result: { a: 1 },
        });
        await sub.close();
        await sub.close(); // idempotent
        const err = await rejection(t.gateway.request(requestFor(service), 5000));
        expect(err.code).to.equal('SERVICE_UNAVAILABLE');
        expect(err.status).to.equal(503);
        expect(calls).to.equal(1);
      });

      it('keeps routing to the remaining instance when one of two leaves', async () => {
        const service = uniqueService('half');
        const sub1 = await t.service.serve(service, async () => ({ ok: true, result: 1 }));
        await t.service2.serve(service, async () => ({ ok: true, result: 2 }));
        await sub1.close();
        for (let i = 0; i < 5; i++) {
          expect(await t.gateway.request(requestFor(service), 5000)).to.deep.equal({ ok: true, result: 2 });
        }
      });

      it('lets in-flight handlers finish when a subscription closes', async () => {
        const service = uniqueService('draining');
        const entered = deferred();
        const sub = await t.service.serve(service, async () => {
          entered.resolve();
          await sleep(150);
          return { ok: true, result: 'finished' };
        });
        const pending = t.gateway.request(requestFor(service), 5000);
        await entered.promise;
        await sub.close();
        expect(await pending).to.deep.equal({ ok: true, result: 'finished' });
      });
    });

    describe('competing consumers', () => {
      it('shares the requests of one service among its instances', async () => {
        const service = uniqueService('shared');
        const counts = { a: 0, b: 0 };
        await t.service.serve(service, async () => {
          counts.a += 1;
          await sleep(5);
          return { ok: true, result: 'a' };
        });
        await t.service2.serve(service, async () => {
          counts.b += 1;
          await sleep(5);
          return { ok: true, result: 'b' };
        });
        const n = 40;
        const replies = await Promise.all(
          Array.from({ length: n }, () => t.gateway.request(requestFor(service), 5000)),
        );
        const byA = replies.filter((r) => r.ok && r.result === 'a').length;
        const byB = replies.filter((r) => r.ok && r.result === 'b').length;
        expect(byA + byB).to.equal(n);
        expect(counts.a + counts.b, 'each request handled exactly once').to.equal(n);
        expect(byA, 'instance a got some').to.be.greaterThan(0);
        expect(byB, 'instance b got some').to.be.greaterThan(0);
      });

      it('respects prefetch: one instance with prefetch 1 handles one request at a time', async () => {
        const service = uniqueService('serial');
        let active = 0;
        let peak = 0;
        await t.service.serve(
          service,
          async (m) => {
            active += 1;
            peak = Math.max(peak, active);
            await sleep(10);
            active -= 1;
            return echo(m);
          },
          { prefetch: 1 },
        );
        const replies = await Promise.all(
          Array.from({ length: 8 }, (_, i) => t.gateway.request(requestFor(service, { i }), 5000)),
        );
        expect(replies.map((r) => (r.ok ? (r.result as { i: number }).i : -1))).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7]);
        expect(peak).to.equal(1);
      });
    });

    describe('correlation', () => {
      it('gives each of 200 concurrent requests its own reply', async () => {
        const service = uniqueService('many');
        await t.service.serve(service, async (m) => {
          await sleep(Math.floor(Math.random() * 10));
          return { ok: true, result: { n: m.input.n, type: m.messageType } };
        });
        await t.service2.serve(service, async (m) => {
          await sleep(Math.floor(Math.random() * 10));
          return { ok: true, result: { n: m.input.n, type: m.messageType } };
        });
        const n = 200;
        const replies = await Promise.all(
          Array.from({ length: n }, (_, i) => t.gateway.request(requestFor(service, { n: i }, `Q${i % 7}`), 10_000)),
        );
        replies.forEach((reply, i) => {
          expect(reply).to.deep.equal({ ok: true, result: { n: i, type: `Q${i % 7}` } });
        });
      });
    });

    describe('discovery', () => {
      const announcement = (instanceId: string, withdrawn?: boolean): Announcement => ({
        service: 'users',
        instanceId,
        ttlMs: 30_000,
        contracts: withdrawn
          ? []
          : [
              {
                messageType: 'GetUserQuery',
                targetService: 'users',
                inputSchema: { type: 'object', properties: { userId: { type: 'string' } } },
                outputSchema: { type: 'object' },
                requiredPermissions: ['users:read'],
                timeoutMs: 5000,
              },
            ],
        ...(withdrawn ? { withdrawn: true } : {}),
      });

      it('broadcasts announcements and withdrawals to every listener', async () => {
        const instanceId = `inst-${uniqueService('a')}`;
        const atGateway: Announcement[] = [];
        const atOther: Announcement[] = [];
        await t.gateway.onAnnouncement((a) => {
          if (a.instanceId === instanceId) atGateway.push(a);
        });
        await t.service2.onAnnouncement((a) => {
          if (a.instanceId === instanceId) atOther.push(a);
        });
        await t.service.announce(announcement(instanceId));
        await eventually(() => atGateway.length === 1 && atOther.length === 1, 5000, 'announcement');
        expect(atGateway[0]).to.deep.equal(announcement(instanceId));
        expect(atOther[0]).to.deep.equal(announcement(instanceId));

        await t.service.announce(announcement(instanceId, true));
        await eventually(() => atGateway.length === 2 && atOther.length === 2, 5000, 'withdrawal');
        expect(atGateway[1]).to.deep.equal(announcement(instanceId, true));
        expect(atGateway[1].withdrawn).to.equal(true);
      });

      it('stops delivering announcements after the listener subscription closes', async () => {
        const instanceId = `inst-${uniqueService('b')}`;
        const closedOne: Announcement[] = [];
        const openOne: Announcement[] = [];
        const sub = await t.gateway.onAnnouncement((a) => {
          if (a.instanceId === instanceId) closedOne.push(a);
        });
        await t.gateway.onAnnouncement((a) => {
          if (a.instanceId === instanceId) openOne.push(a);
        });
        await sub.close();
        await t.service.announce(announcement(instanceId));
        await eventually(() => openOne.length === 1, 5000, 'announcement');
        await sleep(50);
        expect(closedOne).to.deep.equal([]);
      });

      it('requestDiscovery reaches every onDiscoveryRequest listener', async () => {
        let first = 0;
        let second = 0;
        await t.service.onDiscoveryRequest(() => {
          first += 1;
        });
        await t.service2.onDiscoveryRequest(() => {
          second += 1;
        });
        await t.gateway.requestDiscovery();
        await eventually(() => first === 1 && second === 1, 5000, 'discovery request');
        await sleep(50);
        expect([first, second]).to.deep.equal([1, 1]);
      });

      it('a throwing listener does not break delivery', async () => {
        const instanceId = `inst-${uniqueService('c')}`;
        const seen: string[] = [];
        await t.gateway.onAnnouncement(() => {
          throw new Error('listener bug');
        });
        await t.gateway.onAnnouncement((a) => {
          if (a.instanceId === instanceId) seen.push(a.instanceId);
        });
        await t.service.announce(announcement(instanceId));
        await t.service.announce(announcement(instanceId));
        await eventually(() => seen.length === 2, 5000, 'announcements');
      });
    });

    describe('state and close', () => {
      it('reports state changes and closes idempotently', async () => {
        const states: string[] = [];
        t.gateway.onStateChange((s) => states.push(s));
        await Promise.all([t.gateway.close(), t.gateway.close()]);
        await t.gateway.close();
        expect(t.gateway.state()).to.equal('closed');
        expect(states).to.deep.equal(['closed']);
      });

      it('rejects requests after close with 503', async () => {
        const service = uniqueService('closed');
        await t.service.serve(service, echo);
        await t.gateway.close();
        const err = await rejection(t.gateway.request(requestFor(service), 5000));
        expect(err.status).to.equal(503);
      });

      it('abortPending rejects the requests waiting for a reply with the error given; the next request is served', async () => {
        const service = uniqueService('aborted');
        const entered = deferred();
        const release = deferred();
        let calls = 0;
        await t.service.serve(service, async (message) => {
          calls += 1;
          if (calls === 1) {
            entered.resolve();
            await release.promise;
          }
          return { ok: true, result: message.input };
        });
        const pending = t.gateway.request(requestFor(service, { n: 1 }), 10_000);
        await entered.promise;
        t.gateway.abortPending(() => new GatewayError('SERVICE_UNAVAILABLE', 'stopping', { status: 503 }));
        const err = await rejection(pending);
        expect(err).to.include({ code: 'SERVICE_UNAVAILABLE', message: 'stopping' });
        release.resolve();
        expect(await t.gateway.request(requestFor(service, { n: 2 }), 5000)).to.deep.equal({
          ok: true,
          result: { n: 2 },
        });
      });

      it('rejects a request in flight when the requester closes', async () => {
        const service = uniqueService('stuck');
        const entered = deferred();
        const release = deferred();
        await t.service.serve(service, async () => {
          entered.resolve();
          await release.promise;
          return { ok: true };
        });
        const pending = t.gateway.request(requestFor(service), 10_000);
        await entered.promise;
        const started = Date.now();
        const closing = t.gateway.close();
        const err = await rejection(pending);
        expect(err.code).to.equal('SERVICE_UNAVAILABLE');
        expect(Date.now() - started).to.be.lessThan(1000);
        release.resolve();
        await closing;
      });
    });
  });
}
