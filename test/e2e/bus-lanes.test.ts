import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as amqp from 'amqplib';
import type { BrokerDefinitions } from '../../plugin/bus/broker-definitions';
import { run as brokerDefinitions } from '../../plugin/cli/contracts-broker-definitions';
import { uniquePrefix } from '../support/env';

const HOST = '127.0.0.1:5672';
/** Messages the gateway sends the attacker's queues (discovery requests, and as many requests). */
const SEEDS = 5;

function ctl(args: string[]): Promise<string> {
  // The callback form: the leak check wraps execFile.
  return new Promise((resolve, reject) =>
    execFile('rabbitmqctl', args, (err, out) => (err ? reject(err) : resolve(String(out)))),
  );
}

/** Runs `what` on a channel of its own; the broker's reason when it closed the channel, else 'allowed'. */
async function attempt(conn: amqp.ChannelModel, what: (ch: amqp.Channel) => Promise<unknown>): Promise<string> {
  const ch = await conn.createChannel();
  ch.on('error', () => undefined);
  try {
    await what(ch);
    return 'allowed';
  } catch (err) {
    return (err as Error).message;
  } finally {
    await ch.close().catch(() => undefined);
  }
}

/**
 * The attack of one stolen low-value service credential under the strict set-up (its own vhost and prefix, the users
 * and definitions made by the definitions tool): it enumerates every exchange and routing key its permissions allow,
 * then tries dead-letter loops through every exchange it may write, re-keys dead letters into another service's
 * lanes, redeclares its work queue as a quorum queue with a dead-letter exchange, and declares an exchange named like
 * everything it may configure. Nothing grows, and nothing reaches another service's gateway queues.
 */
describe('a service credential against the bus (dead-letter loops, re-keying, real broker users)', function () {
  this.timeout(90_000);
  const prefix = uniquePrefix('lanes');
  const vhost = prefix;
  const services = ['catalog-service', 'users-service'];
  const user = (name: string) => `${prefix}-${name}`;
  const password = (name: string) => `${name}-pw-0123456789`;
  const url = (name: string) =>
    `amqp://${encodeURIComponent(user(name))}:${password(name)}@${HOST}/${encodeURIComponent(vhost)}`;
  let dir = '';
  let definitions: BrokerDefinitions;
  let gateway: amqp.ChannelModel | undefined;
  let attacker: amqp.ChannelModel | undefined;
  /** The gateway's queues per service: its announcement lane and its reply queue. */
  const lanes: Record<string, { announce: string; reply: string }> = {};

  before(async () => {
    await ctl(['add_vhost', vhost]);
    await ctl(['set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*']);
    dir = mkdtempSync(join(tmpdir(), 'bus-lanes-'));
    const env: NodeJS.ProcessEnv = {};
    for (const name of ['gateway', ...services])
      env[
        `BROKER_PASSWORD_${user(name)
          .toUpperCase()
          .replace(/[^A-Z0-9]/g, '_')}`
      ] = password(name);
    const text = brokerDefinitions(
      [
        ...['--prefix', prefix, '--vhost', vhost, '--gateway-user', user('gateway'), '--user-prefix', `${prefix}-`],
        ...services.flatMap((s) => ['--service', s]),
      ],
      env,
    );
    definitions = JSON.parse(text) as BrokerDefinitions;
    const file = join(dir, 'definitions.json');
    writeFileSync(file, text, { mode: 0o644 });
    chmodSync(dir, 0o755);
    await ctl(['import_definitions', file]);
    // The gateway's queues, as it declares them: a lane and a reply queue per service, bound to the service's own
    // exchanges and to the shared ones of the previous version. Not consumed, so everything that reaches them stays.
    gateway = await amqp.connect(url('gateway'));
    const ch = await gateway.createChannel();
    for (const s of services) {
      const announce = `${prefix}.announce.${randomUUID()}`;
      const reply = `${prefix}.reply.${randomUUID()}.${s}`;
      await ch.assertQueue(announce, { exclusive: true });
      await ch.bindQueue(announce, `${prefix}.announcements.${s}`, `announce.${s}`);
      await ch.bindQueue(announce, `${prefix}.discovery`, `announce.${s}`);
      await ch.assertQueue(reply, { exclusive: true });
      await ch.bindQueue(reply, `${prefix}.replies.${s}`, reply);
      await ch.bindQueue(reply, `${prefix}.replies`, reply);
      lanes[s] = { announce, reply };
    }
    attacker = await amqp.connect(url('catalog-service'));
    attacker.on('error', () => undefined);
  });

  after(async () => {
    await attacker?.close().catch(() => undefined);
    await gateway?.close().catch(() => undefined);
    for (const name of ['gateway', ...services]) await ctl(['delete_user', user(name)]).catch(() => undefined);
    await ctl(['delete_vhost', vhost]).catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Messages in each queue of the vhost. */
  async function queueDepths(): Promise<Map<string, number>> {
    const rows = JSON.parse(
      await ctl(['list_queues', '-p', vhost, 'name', 'messages', '--formatter', 'json']),
    ) as Array<{ name: string; messages: number }>;
    return new Map(rows.map((r) => [r.name, r.messages]));
  }

  /** What the attacker's permissions allow, by the definitions: exchanges it may write to / bind from, with keys. */
  function allowed() {
    const perms = definitions.permissions.find((p) => p.user === user('catalog-service'))!;
    const topics = definitions.topic_permissions.filter((t) => t.user === user('catalog-service'));
    const names = [
      ...definitions.exchanges.map((e) => e.name),
      ...['amq.direct', 'amq.fanout', 'amq.topic', 'amq.headers', 'amq.match', 'amq.default'],
    ];
    const keys = [
      // The gateway's real reply queue names: the keys that reach them.
      ...services.flatMap((s) => [s, `announce.${s}`, lanes[s]!.reply]),
      ...['discover', '#', '*', 'x'],
    ];
    const topicOk = (exchange: string, key: string, kind: 'write' | 'read') => {
      const t = topics.find((p) => p.exchange === exchange);
      return t === undefined || new RegExp(t[kind]).test(key);
    };
    const pairs = (kind: 'write' | 'read') =>
      names
        .filter((e) => new RegExp(perms[kind]).test(e))
        .flatMap((e) => keys.filter((k) => topicOk(e, k, kind)).map((key) => ({ exchange: e, key })));
    return { perms, names, keys, writable: pairs('write'), bindable: pairs('read') };
  }

  it('may write only to its own announcement and reply exchanges, and bind only from exchanges it cannot write', () => {
    const { writable, bindable } = allowed();
    expect([...new Set(writable.map((w) => w.exchange))].sort()).to.deep.equal(
      [`${prefix}.announcements.catalog-service`, `${prefix}.replies.catalog-service`].sort(),
    );
    expect(bindable.map((b) => `${b.exchange} ${b.key}`).sort()).to.deep.equal(
      [`${prefix}.discovery discover`, `${prefix}.requests catalog-service`].sort(),
    );
  });

  it('declares no exchange named like anything it may configure, nor its work queue with other arguments', async () => {
    const { perms } = allowed();
    const candidates = [
      'amq.gen-evil',
      `${prefix}.svc.catalog-service`,
      `${prefix}.discover.${randomUUID()}`,
      `${prefix}.announcements.catalog-service`,
      `${prefix}.replies.catalog-service`,
      `${prefix}.discovery`,
      `${prefix}.requests`,
    ];
    for (const name of candidates) {
      const reason = await attempt(attacker!, (ch) => ch.assertExchange(name, 'topic', { durable: false }));
      expect(reason, name).to.match(/ACCESS_REFUSED/);
    }
    // The only names it may configure are server-named queues, which nobody may give an exchange.
    expect(new RegExp(perms.configure).test(`${prefix}.svc.catalog-service`)).to.equal(false);
    for (const dlx of [`${prefix}.announcements.catalog-service`, `${prefix}.discovery`])
      for (const args of [
        { 'x-queue-type': 'quorum', 'x-dead-letter-exchange': dlx },
        { 'x-dead-letter-exchange': dlx },
      ]) {
        const reason = await attempt(attacker!, (ch) =>
          ch.assertQueue(`${prefix}.svc.catalog-service`, { durable: true, arguments: args }),
        );
        expect(reason, JSON.stringify(args)).to.match(/ACCESS_REFUSED/);
      }
    // Its queue is there as the definitions declared it, and it may consume it.
    expect(await attempt(attacker!, (ch) => ch.checkQueue(`${prefix}.svc.catalog-service`))).to.equal('allowed');
  });

  it('dead-letter loops and re-keying through every exchange it may write: no growth, nothing in another lane', async () => {
    const { writable, bindable, keys } = allowed();
    const refused: string[] = [];
    let deliveries = 0;
    let depths = new Map<string, number>();
    let limit = 0;
    // A connection of its own: its exclusive queues go with it, so closing it ends the loop, if there is one.
    const conn = await amqp.connect(url('catalog-service'));
    conn.on('error', () => undefined);
    let open = true;
    const stop = async () => {
      if (!open) return;
      open = false;
      await conn.close().catch(() => undefined);
    };
    try {
      // Two server-named queues per dead-letter exchange it may write and per key (its own, another service's
      // announcement and reply keys), each bound wherever it may bind, rejecting everything.
      const dlxs = [...new Set(writable.map((w) => w.exchange))];
      // Without a loop each queue gets each seed once (its dead letter goes to a gateway queue and stops there):
      // beyond that it grows, and the test stops it at once rather than let it alarm the node.
      limit = dlxs.length * keys.length * 2 * 2 * SEEDS + SEEDS;
      for (const dlx of dlxs) {
        for (const key of keys) {
          for (let i = 0; i < 2; i += 1) {
            const ch = await conn.createChannel();
            ch.on('error', () => undefined);
            try {
              const q = await ch.assertQueue('', {
                exclusive: true,
                arguments: { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': key },
              });
              for (const b of bindable) await ch.bindQueue(q.queue, b.exchange, b.key);
              await ch.consume(q.queue, (msg) => {
                if (!msg) return;
                deliveries += 1;
                if (deliveries > limit) void stop();
                else if (open) ch.nack(msg, false, false);
              });
              // Bound to what it may write too, where the broker lets it (it should not: it may not read those).
              for (const w of dlxs) {
                const bound = await attempt(conn, (probe) => probe.bindQueue(q.queue, w, '#'));
                if (bound === 'allowed') refused.push(`bound to ${w}`);
              }
            } catch (err) {
              refused.push(`${dlx} ${key}: ${(err as Error).message}`);
            }
          }
        }
      }
      // Its own work queue rejects too (the definitions gave it no dead-letter exchange).
      const work = await conn.createChannel();
      await work.consume(`${prefix}.svc.catalog-service`, (msg) => {
        if (!msg) return;
        deliveries += 1;
        if (open) work.nack(msg, false, false);
      });
      // Seeds: what the gateway sends it (discovery requests, requests), and what it may publish itself.
      const gw = await gateway!.createChannel();
      for (let i = 0; i < SEEDS; i += 1) {
        gw.publish(`${prefix}.discovery`, 'discover', Buffer.from('{}'));
        gw.publish(`${prefix}.requests`, 'catalog-service', Buffer.from('{"input":{}}'));
      }
      await gw.close();
      const pub = await conn.createConfirmChannel();
      for (const w of writable) pub.publish(w.exchange, w.key, Buffer.from('{}'));
      await pub.waitForConfirms();
      await new Promise((r) => setTimeout(r, 5_000));
    } finally {
      depths = await queueDepths();
      await stop();
    }
    expect(deliveries, 'deliveries').to.be.at.most(limit);
    // What stays in the vhost: at most one dead letter per delivery, plus what it published itself.
    const total = [...depths.values()].reduce((a, b) => a + b, 0);
    expect(total, JSON.stringify([...depths])).to.be.at.most(limit + writable.length);
    // Nothing in the other service's lanes, whatever key the dead letters carried.
    expect(depths.get(lanes['users-service']!.announce)).to.equal(0);
    expect(depths.get(lanes['users-service']!.reply)).to.equal(0);
    // ... while the attack did run: its dead letters and messages reached its own gateway queues.
    expect(deliveries).to.be.at.least(10);
    expect(depths.get(lanes['catalog-service']!.announce)).to.be.above(0);
    expect(depths.get(lanes['catalog-service']!.reply)).to.be.above(0);
    expect(refused, refused.join('\n')).to.deep.equal([]);
  });
});
