import { expect } from 'chai';
import { TcpProxy, viaPort } from '../support/tcp-proxy';
import { randomBytes } from 'node:crypto';
import * as net from 'node:net';
import * as amqp from 'amqplib';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { resultJsonOf } from '../../plugin/bus/envelope';
import { GatewayError } from '../../plugin/errors/gateway-error';
import type { Logger } from '../../plugin/logger';
import type { Announcement } from '../../plugin/contracts/types';
import type { Transport, TransportState } from '../../plugin/bus/transport';
import { deferred, eventually, rejection, requestFor, sleep, transportConformance } from './conformance';

/*
 * Runs against the real RabbitMQ (BUS_URL, default amqp://guest:guest@127.0.0.1:5672). Every fixture
 * uses its own name prefix, and its exchanges are deleted afterwards.
 */
const BROKER_URL = process.env.BUS_URL || 'amqp://guest:guest@127.0.0.1:5672';
const VERBOSE = process.env.BUS_TEST_VERBOSE === '1';

function newPrefix(): string {
  return `test-${process.pid}-${randomBytes(4).toString('hex')}`;
}

interface CollectingLogger extends Logger {
  lines: string[];
}

function collectingLogger(tag: string): CollectingLogger {
  const lines: string[] = [];
  const log = (level: string) => (m: string) => {
    lines.push(`${level} ${m}`);
    if (VERBOSE) console.log(`[${tag}] ${level} ${m}`);
  };
  return { lines, debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}

/** A fixture of one gateway and one service transport made by the test itself; cleanup closes both. */
function pairFixture(gateway: AmqpTransport, service: AmqpTransport, prefix: string): AmqpFixture {
  return {
    gateway,
    service,
    service2: service,
    prefix,
    logs: {} as AmqpFixture['logs'],
    cleanup: async () => {
      await Promise.all([gateway.close(), service.close()]);
      await deleteTopology(prefix);
    },
  };
}

/** A proxy in front of the test broker: cut (killAll) or stalled at will. */
async function brokerProxy(): Promise<{ proxy: TcpProxy; port: number }> {
  const broker = new URL(BROKER_URL);
  const proxy = new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });
  return { proxy, port: await proxy.listen() };
}

/** A gateway connected through the proxy on `port`, its service directly: cutting the proxy loses only the gateway's connection. */
async function gatewayBehind(port: number): Promise<AmqpFixture> {
  const prefix = newPrefix();
  const gateway = new AmqpTransport(viaPort(BROKER_URL, port), { prefix, logger: collectingLogger('gateway') });
  const service = new AmqpTransport(BROKER_URL, { prefix, logger: collectingLogger('service') });
  const pair = pairFixture(gateway, service, prefix);
  await Promise.all([gateway.start(), service.start()]).catch(async (err) => {
    await pair.cleanup();
    throw err;
  });
  return pair;
}

let admin: amqp.ChannelModel;

/** Runs one broker operation on a throw-away channel (a failing operation closes its channel). */
async function withAdmin<T>(op: (ch: amqp.Channel) => Promise<T>): Promise<T> {
  const ch = await admin.createChannel();
  ch.on('error', () => undefined);
  try {
    return await op(ch);
  } finally {
    await ch.close().catch(() => undefined);
  }
}

/**
 * Services `full` (its queue also bound to a second queue that refuses every message, so the broker nacks each
 * request to it, as a service's credential may arrange on its own key) and `echo`, on a new fixture; `remove`
 * deletes the refusing queue.
 */
async function nackingServices(): Promise<{ fixture: AmqpFixture; remove(): Promise<void> }> {
  const fixture = await makeAmqp();
  const { service, prefix } = fixture;
  await service.serve('full', async () => ({ ok: true, result: 'taken' }));
  await service.serve('echo', async (m) => ({ ok: true, result: m.input }));
  const refusing = `${prefix}.refusing`;
  await withAdmin(async (ch) => {
    await ch.assertQueue(refusing, { arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' } });
    await ch.bindQueue(refusing, `${prefix}.requests`, 'full');
  });
  return {
    fixture,
    remove: () =>
      withAdmin((ch) => ch.deleteQueue(refusing)).then(
        () => undefined,
        () => undefined,
      ),
  };
}

async function deleteTopology(prefix: string): Promise<void> {
  await withAdmin((ch) => ch.deleteExchange(`${prefix}.requests`)).catch(() => undefined);
  await withAdmin((ch) => ch.deleteExchange(`${prefix}.discovery`)).catch(() => undefined);
  await withAdmin((ch) => ch.deleteExchange(`${prefix}.replies`)).catch(() => undefined);
}

interface AmqpFixture {
  gateway: AmqpTransport;
  service: AmqpTransport;
  service2: AmqpTransport;
  prefix: string;
  logs: { gateway: CollectingLogger; service: CollectingLogger; service2: CollectingLogger };
  cleanup(): Promise<void>;
}

async function makeAmqp(url = BROKER_URL): Promise<AmqpFixture> {
  const prefix = newPrefix();
  const logs = {
    gateway: collectingLogger('gateway'),
    service: collectingLogger('service'),
    service2: collectingLogger('service2'),
  };
  const gateway = new AmqpTransport(url, { prefix, logger: logs.gateway });
  const service = new AmqpTransport(url, { prefix, logger: logs.service });
  const service2 = new AmqpTransport(url, { prefix, logger: logs.service2 });
  await Promise.all([gateway.start(), service.start(), service2.start()]);
  return {
    gateway,
    service,
    service2,
    prefix,
    logs,
    cleanup: async () => {
      await Promise.all([gateway.close(), service.close(), service2.close()]);
      await deleteTopology(prefix);
    },
  };
}

function waitForState(transport: Transport, state: TransportState, withinMs: number): Promise<void> {
  return eventually(() => transport.state() === state, withinMs, `state ${state}`);
}

describe('AmqpTransport (RabbitMQ)', function () {
  this.timeout(30_000);

  before(async () => {
    admin = await amqp.connect(BROKER_URL);
    admin.on('error', () => undefined);
  });
  after(async () => {
    await admin.close();
  });

  transportConformance('amqp', makeAmqp);

  describe('AMQP specifics', () => {
    let fixture: AmqpFixture | undefined;
    afterEach(async () => {
      await fixture?.cleanup();
      fixture = undefined;
    });

    it('opens its socket with Nagle disabled (noDelay)', async () => {
      const calls: Array<{ port: number | undefined; value: boolean | undefined }> = [];
      const original = net.Socket.prototype.setNoDelay;
      net.Socket.prototype.setNoDelay = function (this: net.Socket, noDelay?: boolean) {
        calls.push({ port: this.remotePort, value: noDelay });
        return original.call(this, noDelay);
      };
      const prefix = newPrefix();
      const transport = new AmqpTransport(BROKER_URL, { prefix, logger: collectingLogger('nodelay') });
      try {
        await transport.start();
      } finally {
        net.Socket.prototype.setNoDelay = original;
        await transport.close();
        await deleteTopology(prefix);
      }
      const brokerPort = Number(new URL(BROKER_URL).port || 5672);
      const amqpCalls = calls.filter((c) => c.port === brokerPort);
      expect(amqpCalls.length, 'setNoDelay called on the AMQP socket').to.be.greaterThan(0);
      expect(amqpCalls.every((c) => c.value === true)).to.equal(true);
    });

    it('start() fails within its bound when the broker is unreachable, without printing credentials', async () => {
      const spare = net.createServer();
      await new Promise<void>((r) => spare.listen(0, '127.0.0.1', () => r()));
      const port = (spare.address() as net.AddressInfo).port;
      await new Promise<void>((r) => spare.close(() => r()));

      const transport = new AmqpTransport(`amqp://guest:s3cret-Pa55@127.0.0.1:${port}`, {
        prefix: newPrefix(),
        connectTimeoutMs: 600,
        logger: collectingLogger('unreachable'),
      });
      const started = Date.now();
      let error: Error | undefined;
      try {
        await transport.start();
      } catch (err) {
        error = err as Error;
      }
      expect(error, 'start() must reject').to.be.instanceOf(Error);
      expect(Date.now() - started).to.be.lessThan(3000);
      expect(error!.message).to.match(/Could not connect to the message bus/);
      expect(error!.message).to.not.include('s3cret-Pa55');
      expect(transport.state()).to.not.equal('up');
      const err = await rejection(transport.request(requestFor('x'), 1000));
      expect(err.status).to.equal(503);
      await transport.close();
      await transport.close();
    });

    it('start() fails with a clear message when the broker refuses the credentials, without echoing them', async () => {
      const u = new URL(BROKER_URL);
      u.password = 'wr0ng-Secret';
      const transport = new AmqpTransport(u.toString(), {
        prefix: newPrefix(),
        connectTimeoutMs: 800,
        logger: collectingLogger('auth'),
      });
      let error: Error | undefined;
      try {
        await transport.start();
      } catch (err) {
        error = err as Error;
      }
      expect(error, 'start() must reject').to.be.instanceOf(Error);
      expect(error!.message).to.match(/Could not connect to the message bus/);
      expect(error!.message).to.match(/ACCESS.REFUSED|Login was refused|closed/i);
      expect(error!.message).to.not.include('wr0ng-Secret');
      await transport.close();
    });

    it('serve() before start() begins consuming once connected', async () => {
      const prefix = newPrefix();
      const gateway = new AmqpTransport(BROKER_URL, { prefix, logger: collectingLogger('g') });
      const service = new AmqpTransport(BROKER_URL, { prefix, logger: collectingLogger('s') });
      fixture = pairFixture(gateway, service, prefix);
      await service.serve('early', async (m) => ({ ok: true, result: m.input }));
      await Promise.all([gateway.start(), service.start()]);
      expect(await gateway.request(requestFor('early', { a: 1 }), 5000)).to.deep.equal({ ok: true, result: { a: 1 } });
    });

    it('answers 502 to a reply over maxBytes without parsing it, and goes on serving', async () => {
      const prefix = newPrefix();
      const logs = collectingLogger('g');
      const gateway = new AmqpTransport(BROKER_URL, { prefix, logger: logs, replies: { maxBytes: 4096 } });
      const service = new AmqpTransport(BROKER_URL, { prefix, logger: collectingLogger('s') });
      fixture = pairFixture(gateway, service, prefix);
      // Many small values: what takes a parser many times the reply's size in memory.
      await service.serve('big', async (m) => ({ ok: true, result: { items: new Array(Number(m.input.n)).fill({}) } }));
      await Promise.all([gateway.start(), service.start()]);
      const err = await gateway.request(requestFor('big', { n: 5000 }), 5000).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(GatewayError);
      expect((err as GatewayError).status).to.equal(502);
      expect(logs.lines.join('\n')).to.match(/of \d+ bytes is over 4096 \(maxReplyBytes\)/);
      const small = await gateway.request(requestFor('big', { n: 3 }), 5000);
      expect(small).to.deep.equal({ ok: true, result: { items: [{}, {}, {}] } });
    });

    it('answers 502 to a reply nested deeper than 256 levels without parsing it, and goes on serving', async () => {
      const prefix = newPrefix();
      const logs = collectingLogger('g');
      const gateway = new AmqpTransport(BROKER_URL, { prefix, logger: logs });
      const service = new AmqpTransport(BROKER_URL, { prefix, logger: collectingLogger('s') });
      fixture = pairFixture(gateway, service, prefix);
      const nested = (depth: number): unknown => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);
      await service.serve('deep', async (m) => ({ ok: true, result: { v: nested(Number(m.input.depth)) } }));
      await Promise.all([gateway.start(), service.start()]);
      // The envelope and `result` add two levels.
      const err = await gateway.request(requestFor('deep', { depth: 255 }), 5000).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(GatewayError);
      expect((err as GatewayError).status).to.equal(502);
      expect(logs.lines.join('\n')).to.match(
        /a reply from service 'deep' nests deeper than 256 levels; answered 502 unparsed/,
      );
      const fine = await gateway.request(requestFor('deep', { depth: 254 }), 5000);
      expect(JSON.stringify(fine)).to.have.length(2 * 254 + '{"ok":true,"result":{"v":}}'.length);
    });

    it('answers INTERNAL_ERROR to a reply that is not JSON, the usual shape included, and keeps a well-formed one as its bytes', async () => {
      fixture = await makeAmqp();
      const { prefix, logs } = fixture;
      const ch = await admin.createChannel();
      const queue = `${prefix}.svc.raw`;
      await ch.assertQueue(queue, { durable: false, autoDelete: false, arguments: { 'x-expires': 15000 } });
      await ch.bindQueue(queue, `${prefix}.requests`, 'raw');
      // A service that writes its JSON by hand: it replies with the bytes the request names.
      await ch.consume(queue, (msg) => {
        if (!msg) return;
        const { input } = JSON.parse(msg.content.toString()) as { input: { body: string } };
        ch.publish(`${prefix}.replies`, msg.properties.replyTo, Buffer.from(input.body, 'latin1'), {
          correlationId: msg.properties.correlationId,
        });
        ch.ack(msg);
      });
      try {
        for (const body of [
          '{"ok":true,"result":{"id":01}}',
          '{"ok":true,"result":"a\u0001"}',
          '{"ok":true,"result":[1,]}',
          '{"ok":true,"result":{"id":"x"}',
          '{"ok":true,"result":\xff}',
          'not json',
        ]) {
          const reply = await fixture.gateway.request(requestFor('raw', { body }), 4000);
          expect(reply, JSON.stringify(body)).to.deep.equal({ ok: false, error: { code: 'INTERNAL_ERROR' } });
        }
        expect(logs.gateway.lines.filter((l) => l.includes("malformed reply from service 'raw'"))).to.have.length(6);
        const fine = await fixture.gateway.request(
          requestFor('raw', { body: '{"ok":true,"result":{"id":"x","n":[1.5e3,true,null]}}' }),
          4000,
        );
        expect(resultJsonOf(fine)?.toString()).to.equal('{"id":"x","n":[1.5e3,true,null]}');
        expect(fine).to.deep.equal({ ok: true, result: { id: 'x', n: [1500, true, null] } });
        // Not UTF-8 in a string: parsed whole, U+FFFD in its place (as before: plugin/bus/envelope.ts).
        const replaced = await fixture.gateway.request(
          requestFor('raw', { body: '{"ok":true,"result":"a\xff"}' }),
          4000,
        );
        expect(replaced).to.deep.equal({ ok: true, result: 'a\ufffd' });
        expect(resultJsonOf(replaced)).to.equal(undefined);
      } finally {
        await ch.deleteQueue(queue).catch(() => undefined);
        await ch.close().catch(() => undefined);
      }
    });

    it('takes announcements on a queue per known service, one copy each, and without a shared queue only theirs', async () => {
      const prefix = newPrefix();
      const gateway = new AmqpTransport(BROKER_URL, {
        prefix,
        logger: collectingLogger('g'),
        announcements: { services: ['known-service'], others: false },
      });
      const open = new AmqpTransport(BROKER_URL, {
        prefix,
        logger: collectingLogger('o'),
        announcements: { services: ['known-service'] },
      });
      const service = new AmqpTransport(BROKER_URL, { prefix, logger: collectingLogger('s') });
      fixture = pairFixture(gateway, service, prefix);
      const heard: Record<'listed' | 'open', string[]> = { listed: [], open: [] };
      try {
        await Promise.all([gateway.start(), open.start(), service.start()]);
        await gateway.onAnnouncement((a) => void heard.listed.push(a.service));
        await open.onAnnouncement((a) => void heard.open.push(a.service));
        const of = (svc: string): Announcement => ({
          service: svc,
          instanceId: `${svc}-1`,
          ttlMs: 10_000,
          contracts: [],
        });
        await service.announce(of('known-service'));
        await service.announce(of('other-service'));
        await eventually(() => heard.open.length === 2 && heard.listed.length === 1, 5000, 'announcements');
        await sleep(200);
        expect(heard.listed).to.deep.equal(['known-service']);
        expect([...heard.open].sort()).to.deep.equal(['known-service', 'other-service']);
      } finally {
        await open.close();
      }
    });

    it('uses the documented wire format (exchange, work queue, properties, headers, body)', async () => {
      fixture = await makeAmqp();
      const { prefix } = fixture;
      // A foreign consumer on the work queue, as a service in another language would be.
      const ch = await admin.createChannel();
      const queue = `${prefix}.svc.foreign`;
      await ch.assertQueue(queue, { durable: false, autoDelete: false, arguments: { 'x-expires': 15000 } });
      await ch.bindQueue(queue, `${prefix}.requests`, 'foreign');
      const got = deferred<amqp.ConsumeMessage>();
      await ch.consume(queue, (msg) => {
        if (!msg) return;
        got.resolve(msg);
        ch.publish(
          `${prefix}.replies`,
          msg.properties.replyTo,
          Buffer.from(JSON.stringify({ ok: true, result: { from: 'foreign' } })),
          {
            correlationId: msg.properties.correlationId,
          },
        );
        ch.ack(msg);
      });
      const user = { userId: 'u', email: 'e@x.y', name: 'N', permissions: ['p'] };
      const reply = await fixture.gateway.request(
        {
          messageType: 'DoThingCommand',
          targetService: 'foreign',
          input: { x: 1 },
          headers: {
            correlationId: 'trace-corr',
            requestId: 'rq',
            user,
            traceparent: '00-abc-def-01',
            deadline: 1795419583500,
          },
        },
        4000,
      );
      expect(reply).to.deep.equal({ ok: true, result: { from: 'foreign' } });
      const msg = await got.promise;
      await ch.deleteQueue(queue);
      await ch.close();
      expect(msg.fields.exchange).to.equal(`${prefix}.requests`);
      expect(msg.fields.routingKey).to.equal('foreign');
      expect(JSON.parse(msg.content.toString())).to.deep.equal({ input: { x: 1 } });
      const p = msg.properties;
      expect(p.type).to.equal('DoThingCommand');
      expect(p.contentType).to.equal('application/json');
      expect(p.expiration).to.equal('4000');
      expect(p.replyTo).to.match(new RegExp(`^${prefix}\\.reply\\.[0-9a-f-]{36}\\.foreign$`));
      expect(p.userId).to.equal(new URL(BROKER_URL).username);
      expect(p.correlationId).to.be.a('string').and.not.equal('trace-corr');
      expect(p.headers).to.deep.include({
        correlationId: 'trace-corr',
        requestId: 'rq',
        traceparent: '00-abc-def-01',
        deadline: '1795419583500',
      });
      expect(JSON.parse(String(p.headers!.user))).to.deep.equal(user);
    });

    it("takes a reply through the default exchange (older services); drops one on another service's reply queue", async () => {
      fixture = await makeAmqp();
      const { prefix, logs } = fixture;
      const ch = await admin.createChannel();
      const got: Record<string, amqp.ConsumeMessage> = {};
      // Foreign services: "old" replies the way services did before P.replies; "mute" never replies; "cross" answers
      // mute's request on its own reply queue, as a service on a shared credential could.
      for (const service of ['old', 'mute', 'cross']) {
        const queue = `${prefix}.svc.${service}`;
        await ch.assertQueue(queue, { durable: false, autoDelete: false, arguments: { 'x-expires': 15000 } });
        await ch.bindQueue(queue, `${prefix}.requests`, service);
        await ch.consume(queue, (msg) => {
          if (!msg) return;
          got[service] = msg;
          ch.ack(msg);
          const { replyTo, correlationId } = msg.properties;
          if (service === 'old') ch.sendToQueue(replyTo, Buffer.from('{"ok":true,"result":"old"}'), { correlationId });
          if (service === 'cross')
            ch.publish(`${prefix}.replies`, replyTo, Buffer.from('{"ok":true,"result":"forged"}'), {
              correlationId: got.mute!.properties.correlationId,
            });
        });
      }
      try {
        expect(await fixture.gateway.request(requestFor('old'), 4000)).to.deep.equal({ ok: true, result: 'old' });
        expect(got.old!.properties.replyTo).to.match(new RegExp(`^${prefix}\\.reply\\.[0-9a-f-]{36}\\.old$`));
        const muted = fixture.gateway.request(requestFor('mute'), 1500);
        await eventually(() => got.mute !== undefined, 3000, 'mute got its request');
        const cross = fixture.gateway.request(requestFor('cross'), 1500);
        expect((await rejection(muted)).status).to.equal(504);
        expect((await rejection(cross)).status).to.equal(504);
        expect(got.cross!.properties.replyTo).to.match(new RegExp(`^${prefix}\\.reply\\.[0-9a-f-]{36}\\.cross$`));
        expect(logs.gateway.lines.join('\n')).to.include(
          'dropped a reply for mute published by no broker user (user_id) (on the reply queue of cross)',
        );
      } finally {
        for (const service of ['old', 'mute', 'cross'])
          await ch.deleteQueue(`${prefix}.svc.${service}`).catch(() => undefined);
        await ch.close().catch(() => undefined);
      }
    });

    it('recovers by itself after the connection is cut: 502 in flight, 503 while down, then works again', async () => {
      const broker = new URL(BROKER_URL);
      const proxy = new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });
      const port = await proxy.listen();
      try {
        fixture = await makeAmqp(viaPort(BROKER_URL, port));
        const { gateway, service } = fixture;
        const gatewayStates: TransportState[] = [];
        gateway.onStateChange((s) => gatewayStates.push(s));

        const entered = deferred();
        const release = deferred();
        await service.serve('slow', async () => {
          entered.resolve();
          await release.promise;
          return { ok: true, result: 'slow' };
        });
        await service.serve('echo', async (m) => ({ ok: true, result: m.input }));
        const announcements: Announcement[] = [];
        await gateway.onAnnouncement((a) => announcements.push(a));
        let discoveryRequests = 0;
        await service.onDiscoveryRequest(() => {
          discoveryRequests += 1;
        });
        expect(await gateway.request(requestFor('echo', { before: true }), 5000)).to.deep.equal({
          ok: true,
          result: { before: true },
        });
        expect(proxy.connectionCount()).to.equal(3);

        // cut everything while a command is with the service (a read would be sent again: the next test)
        const inFlight = gateway.request(requestFor('slow', {}, 'DoSlowCommand'), 20_000);
        await entered.promise;
        proxy.refusing = true;
        let started = Date.now();
        proxy.killAll();
        const cut = await rejection(inFlight);
        expect(Date.now() - started, 'in-flight request settles fast').to.be.lessThan(2000);
        expect(cut.code).to.equal('SERVICE_UNAVAILABLE');
        expect(cut.status).to.equal(502);
        expect(cut.extra.service).to.equal('slow');
        expect(gateway.state()).to.equal('down');

        started = Date.now();
        const down = await rejection(gateway.request(requestFor('echo'), 20_000));
        expect(Date.now() - started, 'request while down settles fast').to.be.lessThan(2000);
        expect(down.code).to.equal('SERVICE_UNAVAILABLE');
        expect(down.status).to.equal(503);
        expect(down.headers['Retry-After']).to.match(/^\d+$/);
        await rejection(service.announce({ service: 'x', instanceId: 'y', contracts: [], ttlMs: 1 }));
        release.resolve(); // the handler's reply now has nowhere to go: logged, not thrown

        await sleep(300); // a few reconnect attempts are refused meanwhile
        expect(gateway.state()).to.equal('down');
        proxy.refusing = false;
        await Promise.all([
          waitForState(gateway, 'up', 10_000),
          waitForState(service, 'up', 10_000),
          waitForState(fixture.service2, 'up', 10_000),
        ]);
        expect(gatewayStates.slice(0, 2)).to.deep.equal(['down', 'up']);

        // consumers were re-created: requests, discovery requests and announcements flow again
        await eventually(
          async () => {
            const r = await gateway.request(requestFor('echo', { after: true }), 5000).catch(() => undefined);
            return r?.ok === true && JSON.stringify(r.result) === '{"after":true}';
          },
          5000,
          'requests after reconnect',
        );
        await gateway.requestDiscovery();
        await eventually(() => discoveryRequests === 1, 5000, 'discovery request after reconnect');
        await service.announce({ service: 'users', instanceId: 'i-after', contracts: [], ttlMs: 1000 });
        await eventually(
          () => announcements.some((a) => a.instanceId === 'i-after'),
          5000,
          'announcement after reconnect',
        );
        expect(fixture.logs.service.lines.join('\n')).to.match(/could not reply/);
      } finally {
        await fixture?.cleanup();
        fixture = undefined;
        await proxy.close();
      }
    });

    it('sends a read lost with its connection once more on the next one: answered, not 502', async () => {
      const { proxy, port } = await brokerProxy();
      try {
        fixture = await gatewayBehind(port);
        const { gateway, service } = fixture;
        const entered = deferred();
        let deliveries = 0;
        await service.serve('reads', async () => {
          deliveries += 1;
          if (deliveries === 1) {
            entered.resolve();
            await sleep(1_000); // its reply goes to a reply queue that is gone by then
            return { ok: true, result: 'first' };
          }
          return { ok: true, result: 'again' };
        });
        const read = gateway.request(requestFor('reads', {}, 'GetThingQuery'), 20_000);
        await entered.promise;
        proxy.killAll(); // the gateway's connection goes; the service's stays
        expect(await read).to.deep.equal({ ok: true, result: 'again' });
        expect(deliveries, 'sent once more, not more').to.equal(2);

        // A command is not sent again: its outcome is unknown (502), as before.
        const commandEntered = deferred();
        await service.serve('writes', async () => {
          commandEntered.resolve();
          await sleep(1_000);
          return { ok: true, result: 'done' };
        });
        await waitForState(gateway, 'up', 10_000);
        const command = gateway.request(requestFor('writes', {}, 'RenameThingCommand'), 20_000);
        await commandEntered.promise;
        proxy.killAll();
        const lost = await rejection(command);
        expect(lost.status).to.equal(502);
      } finally {
        await fixture?.cleanup();
        fixture = undefined;
        await proxy.close();
      }
    });

    it('answers a read lost with its connection 503 at its deadline when the bus is not back by then', async () => {
      const { proxy, port } = await brokerProxy();
      try {
        fixture = await gatewayBehind(port);
        const { gateway, service } = fixture;
        const entered = deferred();
        await service.serve('reads', async () => {
          entered.resolve();
          await sleep(3_000);
          return { ok: true, result: 'late' };
        });
        const read = gateway.request(requestFor('reads', {}, 'ListThingsQuery'), 1_500);
        await entered.promise;
        const started = Date.now();
        proxy.refusing = true;
        proxy.killAll();
        const late = await rejection(read);
        expect(Date.now() - started, 'at its deadline, not before the cut was noticed').to.be.below(2_500);
        expect(late.status).to.equal(503);
        expect(late.code).to.equal('SERVICE_UNAVAILABLE');
        expect(late.headers['Retry-After']).to.match(/^\d+$/);
        expect(gateway.state()).to.equal('down');
      } finally {
        proxy.refusing = false;
        await fixture?.cleanup();
        fixture = undefined;
        await proxy.close();
      }
    });

    it('answers nacked keyed requests 503; three nacks in a row open a new channel, nacks between acks do not', async () => {
      // A second queue on the service's key that refuses every message: the broker nacks what is routed to it.
      const nacking = await nackingServices();
      fixture = nacking.fixture;
      const { gateway, logs } = fixture;
      try {
        const keyed = (service: string, key: string) => {
          const m = requestFor(service, { key });
          m.headers.idempotencyKey = key;
          return m;
        };
        const replaced = () => logs.gateway.lines.filter((l) => /opening a new keyed request channel/.test(l)).length;
        // One service's queue refusing its messages, the others acked between: the channel is kept.
        for (const k of ['k-a', 'k-b', 'k-c']) {
          expect((await rejection(gateway.request(keyed('full', k), 5_000))).status).to.equal(503);
          expect(await gateway.request(keyed('echo', `${k}-echo`), 5_000)).to.deep.include({ ok: true });
        }
        expect(replaced(), 'nacks with acks between: no new channel').to.equal(0);
        const nacked = await Promise.all([
          rejection(gateway.request(keyed('full', 'k-1'), 5_000)),
          rejection(gateway.request(keyed('full', 'k-2'), 5_000)),
          rejection(gateway.request(keyed('full', 'k-3'), 5_000)),
          rejection(gateway.request(keyed('full', 'k-4'), 5_000)),
        ]);
        // The third nack hands the channel over to a new one; the other requests were nacked too, or (a channel closed
        // before its nack came) lost with it: 503 with Retry-After either way, its key makes the retry safe.
        expect(nacked.map((e) => e.message)).to.include('The message bus did not accept the message');
        for (const err of nacked) {
          expect(err.status).to.equal(503);
          expect(err.message).to.match(
            /did not accept the message|send the request again with the same Idempotency-Key/,
          );
          expect(err.headers['Retry-After']).to.match(/^\d+$/);
        }
        expect(replaced(), 'nacks in a row, within a second: one new channel').to.equal(1);
        // The new channel takes keyed requests again.
        await eventually(
          async () => {
            const r = await gateway.request(keyed('echo', 'k-3'), 5_000).catch(() => undefined);
            return r?.ok === true;
          },
          5_000,
          'a keyed request on the new channel',
        );
      } finally {
        await nacking.remove();
      }
    });

    it("hands a nacked channel over without failing another service's requests (one service's reject-publish queue)", async () => {
      // What a service's credential may do on its own key: the broker nacks each of its requests, sent in bursts
      // that outnumber the other service's (nacks in a row).
      const nacking = await nackingServices();
      fixture = nacking.fixture;
      const { gateway, logs } = fixture;
      try {
        const replaced = () => logs.gateway.lines.filter((l) => /opening a new request channel/.test(l)).length;
        const until = Date.now() + 3_500;
        const outcomes: Array<number | 'ok'> = [];
        const echo = async (): Promise<void> => {
          for (let n = 0; Date.now() < until; n += 1) {
            const r = await gateway.request(requestFor('echo', { n }), 5_000).then(
              () => 'ok' as const,
              (e: { status: number }) => e.status,
            );
            outcomes.push(r);
          }
        };
        let nacked = 0;
        const bursts = async (): Promise<void> => {
          while (Date.now() < until) {
            // Its work queue takes a copy too: a reply may beat the nack (answered), else 503 at the nack.
            const answers = await Promise.all(
              Array.from({ length: 10 }, (_, i) =>
                gateway.request(requestFor('full', { i }), 5_000).then(
                  () => 'ok',
                  (e: { status: number }) => e.status,
                ),
              ),
            );
            for (const a of answers) expect([503, 'ok']).to.include(a);
            nacked += answers.filter((a) => a === 503).length;
          }
        };
        await Promise.all([echo(), echo(), bursts()]);
        expect(nacked, 'requests nacked').to.be.above(10);
        expect(replaced(), 'nacks in a row: new channels, at most one a second').to.be.within(2, 4);
        const failed = outcomes.filter((o) => o !== 'ok');
        expect(outcomes.length, 'echo requests sent').to.be.above(20);
        expect(failed, `${failed.length} of ${outcomes.length} echo requests failed`).to.deep.equal([]);
      } finally {
        await nacking.remove();
      }
    });

    it('replaces a request channel the broker confirms nothing on for 3 s: keyed 503, leases held until it confirms again', async () => {
      const { proxy, port } = await brokerProxy();
      // No heartbeat: the confirms are all that can tell this stalled connection from a quiet one.
      const url = new URL(viaPort(BROKER_URL, port));
      url.searchParams.set('heartbeat', '0');
      const prefix = newPrefix();
      const logs = collectingLogger('gateway');
      const gateway = new AmqpTransport(url.toString(), { prefix, logger: logs });
      const service = new AmqpTransport(BROKER_URL, { prefix, logger: collectingLogger('service') });
      fixture = pairFixture(gateway, service, prefix);
      try {
        await Promise.all([gateway.start(), service.start()]);
        await service.serve('slow', async () => ({ ok: true, result: 'taken' }));
        await gateway.onAnnouncement(() => undefined);
        expect(await gateway.request(requestFor('slow'), 5_000)).to.deep.equal({ ok: true, result: 'taken' });
        expect(gateway.announcementsUnheard()).to.equal(undefined);
        proxy.stall(); // nothing passes, nothing closes: the publish is never confirmed
        const keyed = requestFor('slow');
        keyed.headers.idempotencyKey = 'k-stall';
        const started = Date.now();
        const lost = await rejection(gateway.request(keyed, 20_000));
        expect(Date.now() - started, 'at the 3 s stall, long before the deadline').to.be.within(2_900, 6_000);
        expect(lost.status).to.equal(503);
        expect(lost.headers['Retry-After']).to.match(/^\d+$/);
        expect(logs.lines.join('\n')).to.match(/confirmed nothing on the keyed request channel for 3000 ms/);
        expect(gateway.announcementsUnheard(), 'leases held while the broker confirms nothing').to.match(
          /confirmed none/,
        );
        proxy.resume();
        await eventually(
          async () => (await gateway.request(requestFor('slow'), 2_000).catch(() => undefined))?.ok === true,
          10_000,
          'a request answered on the new channel',
        );
        expect(gateway.announcementsUnheard(), 'hearing again once a request was confirmed').to.equal(undefined);
      } finally {
        await fixture?.cleanup();
        fixture = undefined;
        await proxy.close();
      }
    });

    it('drops a connection that goes silent within a heartbeat: a keyed request in flight is 503, to retry', async () => {
      const broker = new URL(BROKER_URL);
      const proxy = new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });
      const port = await proxy.listen();
      const prefix = newPrefix();
      const logs = collectingLogger('gateway');
      const gateway = new AmqpTransport(viaPort(BROKER_URL, port), { prefix, logger: logs });
      const service = new AmqpTransport(BROKER_URL, { prefix, logger: collectingLogger('service') });
      fixture = pairFixture(gateway, service, prefix);
      try {
        await Promise.all([gateway.start(), service.start()]);
        const entered = deferred();
        await service.serve('slow', async () => {
          entered.resolve();
          await sleep(9_000);
          return { ok: true, result: 'late' };
        });
        const keyed = requestFor('slow');
        keyed.headers.idempotencyKey = 'k-silent';
        const inFlight = gateway.request(keyed, 25_000);
        await entered.promise;
        // The node stops answering: the socket stays open, no byte passes either way.
        const started = Date.now();
        proxy.stall();
        const lost = await rejection(inFlight);
        const tookMs = Date.now() - started;
        // Nothing came for a whole heartbeat (the last frame up to half a heartbeat before the stall), a poll later.
        expect(tookMs, 'within the 5 s heartbeat and a poll, long before the deadline').to.be.within(2_000, 7_500);
        expect(lost.status).to.equal(503);
        expect(lost.code).to.equal('SERVICE_UNAVAILABLE');
        expect(lost.headers['Retry-After']).to.match(/^\d+$/);
        expect(lost.message).to.match(/Idempotency-Key/);
        expect(logs.lines.join('\n')).to.match(/no frame from 127\.0\.0\.1:\d+ for \d+ ms: dropping the connection/);
      } finally {
        await fixture?.cleanup();
        fixture = undefined;
        await proxy.close();
      }
    });

    it('close() while the connection is down resolves and stops reconnecting', async () => {
      const broker = new URL(BROKER_URL);
      const proxy = new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });
      const port = await proxy.listen();
      const prefix = newPrefix();
      const transport = new AmqpTransport(viaPort(BROKER_URL, port), { prefix, logger: collectingLogger('dead') });
      try {
        await transport.start();
        await transport.serve('x', async () => ({ ok: true }));
        await transport.onAnnouncement(() => undefined);
        proxy.refusing = true;
        proxy.killAll();
        await waitForState(transport, 'down', 2000);
        await transport.close();
        await transport.close();
        expect(transport.state()).to.equal('closed');
        proxy.refusing = false;
        await sleep(400);
        expect(proxy.connectionCount(), 'no reconnect after close').to.equal(0);
      } finally {
        await proxy.close();
        await deleteTopology(prefix);
      }
    });

    it('survives the broker cancelling a consumer (its queue deleted) and consumes again', async () => {
      fixture = await makeAmqp();
      const { gateway, service, prefix } = fixture;
      await service.serve('victim', async (m) => ({ ok: true, result: m.input }));
      expect(await gateway.request(requestFor('victim', { n: 1 }), 5000)).to.deep.equal({ ok: true, result: { n: 1 } });

      await withAdmin((ch) => ch.deleteQueue(`${prefix}.svc.victim`));
      await eventually(() => fixture!.logs.service.lines.some((l) => /cancelled/.test(l)), 5000, 'cancel notification');
      expect(service.state()).to.equal('up');

      await eventually(
        async () => {
          try {
            const r = await gateway.request(requestFor('victim', { n: 2 }), 2000);
            return r.ok === true;
          } catch (err) {
            expect((err as { status?: number }).status).to.equal(503);
            return false;
          }
        },
        5000,
        'the consumer to come back',
      );
    });

    it('a channel error on one request fails no other: the reply in flight still comes, the publisher recovers', async () => {
      fixture = await makeAmqp();
      const { gateway, service, prefix } = fixture;
      const release = deferred<void>();
      await service.serve('slow', async () => {
        await release.promise;
        return { ok: true, result: 'slow' };
      });
      await service.serve('before', async () => ({ ok: true, result: 'before' }));
      expect(await gateway.request(requestFor('before'), 5000)).to.deep.equal({ ok: true, result: 'before' });
      const slow = gateway.request(requestFor('slow'), 15_000);
      await sleep(200); // with the service

      // The next publish goes to a deleted exchange: the broker closes the gateway's request channel.
      await withAdmin((ch) => ch.deleteExchange(`${prefix}.requests`));
      const lost = await rejection(gateway.request(requestFor('before'), 1500));
      expect(['TIMEOUT', 'SERVICE_UNAVAILABLE']).to.include(lost.code);
      await eventually(
        () => fixture!.logs.gateway.lines.some((l) => /request channel error/.test(l)),
        5000,
        'the channel error',
      );
      expect(gateway.state()).to.equal('up');

      // The request that was with the service when the channel died gets its reply.
      release.resolve();
      expect(await slow).to.deep.equal({ ok: true, result: 'slow' });

      // Nothing restarted and nobody served again: the exchange is re-declared, the service re-binds by itself.
      const back = Date.now();
      await eventually(
        async () => {
          const r = await gateway.request(requestFor('before'), 1000).catch(() => undefined);
          return r?.ok === true && r.result === 'before';
        },
        10_000,
        'requests after the channel error',
      );
      expect(Date.now() - back).to.be.lessThan(10_000);
    });

    it('an expiration out of range is never sent: timeoutMs 1e12 waits, and other requests are unaffected', async () => {
      fixture = await makeAmqp();
      const { gateway, service } = fixture;
      const release = deferred<void>();
      await service.serve('long', async () => {
        await release.promise;
        return { ok: true, result: 'long' };
      });
      await service.serve('quick', async () => ({ ok: true, result: 'quick' }));
      const long = gateway.request(requestFor('long'), 1e12);
      const started = Date.now();
      expect(await gateway.request(requestFor('quick'), 5000)).to.deep.equal({ ok: true, result: 'quick' });
      await sleep(300);
      release.resolve();
      expect(await long).to.deep.equal({ ok: true, result: 'long' });
      expect(Date.now() - started).to.be.greaterThan(250); // not an instant 504 (an overflowed timer)
      expect(fixture.logs.gateway.lines.join('\n')).to.not.match(/channel error|PRECONDITION/);
      for (const t of [Infinity, NaN, -5, 0]) {
        // Answered, or 504 at once (NaN, 0, -5): never a malformed expiration that costs the channel.
        const r = await gateway.request(requestFor('quick'), t).catch((e: { code?: string }) => e.code);
        expect(r === 'TIMEOUT' || (typeof r === 'object' && r.ok), String(t)).to.equal(true);
      }
      expect(await gateway.request(requestFor('quick'), 5000)).to.deep.equal({ ok: true, result: 'quick' });
      expect(fixture.logs.gateway.lines.join('\n')).to.not.match(/channel error|PRECONDITION/);
    });
  });
});
