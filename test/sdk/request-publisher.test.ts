import { expect } from 'chai';
import { requestPublisher, serve } from '../../sdk/serve';
import { InProcessHub } from '../../plugin/bus/inprocess/hub';
import { InProcessTransport } from '../../plugin/bus/inprocess';
import { urlUser } from '../../plugin/bus/amqp/connection';

describe("whose requests a service handles by default (serve's acceptRequestsFrom)", () => {
  const amqp = (brokerUser: string | undefined) => ({ kind: 'amqp' as const, brokerUser });

  it('the option, else BUS_GATEWAY_USER, else gateway: a service with a user of its own fails closed', () => {
    expect(requestPublisher(amqp('svc-users'), 'gw-user', { BUS_GATEWAY_USER: 'other' })).to.equal('gw-user');
    expect(requestPublisher(amqp('svc-users'), undefined, { BUS_GATEWAY_USER: 'gw-user' })).to.equal('gw-user');
    expect(requestPublisher(amqp('svc-users'), undefined, {})).to.equal('gateway');
    expect(requestPublisher(amqp(undefined), undefined, {})).to.equal('gateway');
  });

  it('guest while the service itself uses the shared guest credential (the gateway publishes as guest there too)', () => {
    expect(requestPublisher(amqp('guest'), undefined, {})).to.equal('guest');
    expect(requestPublisher(amqp('guest'), undefined, { BUS_GATEWAY_USER: 'gateway' })).to.equal('gateway');
    // amqplib logs in as guest when the URL names no user.
    expect(urlUser('amqp://127.0.0.1:5672')).to.equal('guest');
    expect(urlUser('amqp://svc%2Dx:pw@127.0.0.1:5672')).to.equal('svc-x');
  });

  it('no check on the in-process bus, which has no users', async () => {
    expect(requestPublisher({ kind: 'inprocess', brokerUser: undefined }, 'gateway', {})).to.equal(undefined);
    const transport = new InProcessTransport(new InProcessHub());
    await transport.start();
    const running = await serve({
      transport,
      service: 'svc',
      acceptRequestsFrom: 'gateway',
      operations: [
        {
          contract: { messageType: 'GetThingQuery', inputSchema: {}, outputSchema: {}, requiredPermissions: [] },
          handle: () => 'handled',
        },
      ],
    });
    try {
      const reply = await transport.request(
        {
          messageType: 'GetThingQuery',
          targetService: 'svc',
          input: {},
          headers: { correlationId: 'c', requestId: 'r' },
        },
        2000,
      );
      expect(reply).to.deep.equal({ ok: true, result: 'handled' });
    } finally {
      await running.stop();
      await transport.close();
    }
  });
});
