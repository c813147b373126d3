import { expect } from 'chai';
import { AmqpTransport } from '../../plugin/bus/amqp';
import type { Announcement } from '../../plugin/contracts/types';
import type { Logger } from '../../plugin/logger';
import { rabbitmqctl } from '../support/broker-users';
import { uniquePrefix } from '../support/env';
import { eventually } from '../support/gateway-process';

/**
 * A vhost whose queue limit is reached (another user of it, an attacker with one service's credential, holds every
 * queue it allows): a transport starting then must neither fail nor crash its process, and must take up its
 * consumers once the limit lifts. On the real RabbitMQ, in a vhost of the test's own.
 */
describe('a broker limit reached while consumers start (the vhost queue limit)', function () {
  this.timeout(60_000);
  const vhost = uniquePrefix('limits');
  const prefix = uniquePrefix('lim');
  const url = `amqp://guest:guest@127.0.0.1:5672/${encodeURIComponent(vhost)}`;
  const warnings: string[] = [];
  const logger: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (m) => warnings.push(m),
    error: (m) => warnings.push(m),
  };
  const transports: AmqpTransport[] = [];

  before(async () => {
    await rabbitmqctl(['add_vhost', vhost]);
    await rabbitmqctl(['set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*']);
    await rabbitmqctl(['set_vhost_limits', '-p', vhost, '{"max-queues": 0}']);
  });

  after(async () => {
    await Promise.all(transports.map((t) => t.close().catch(() => undefined)));
    await rabbitmqctl(['delete_vhost', vhost]).catch(() => undefined);
  });

  it('keeps the announcement listener and the discovery listener waiting, then hears once the limit lifts', async () => {
    const gateway = new AmqpTransport(url, { prefix, logger });
    const service = new AmqpTransport(url, { prefix, logger });
    transports.push(gateway, service);
    await Promise.all([gateway.start(), service.start()]);
    const heard: Announcement[] = [];
    let discoverRequests = 0;
    // Both declare a queue of their own: refused by the limit, yet neither rejects (an unhandled rejection ended
    // the gateway's process, and a service's start failed for good).
    await gateway.onAnnouncement((a) => heard.push(a));
    await service.onDiscoveryRequest(() => {
      discoverRequests += 1;
    });
    expect(
      warnings.some((w) => /queue limit in vhost .* is reached.*retrying/.test(w)),
      warnings.join('\n'),
    ).to.equal(true);

    // The gateway knows it is deaf (its leases are held meanwhile: test/contracts/lease-hold).
    expect(gateway.announcementsUnheard()).to.equal(
      "announcement listener: the broker refused it: a limit it enforces is reached (such as the vhost's queue limit)",
    );

    await rabbitmqctl(['set_vhost_limits', '-p', vhost, '{"max-queues": -1}']);
    await eventually(async () => {
      await service.announce({ service: 'limited-service', instanceId: 'i-1', contracts: [], ttlMs: 10_000 });
      expect(heard.map((a) => a.service)).to.include('limited-service');
    }, 30_000);
    expect(gateway.announcementsUnheard()).to.equal(undefined);
    await eventually(async () => {
      await gateway.requestDiscovery();
      expect(discoverRequests).to.be.above(0);
    }, 30_000);
  });
});
