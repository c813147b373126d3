import { expect } from 'chai';
import { createTransport } from '../../plugin/bus';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { InProcessHub, defaultHub } from '../../plugin/bus/inprocess/hub';
import { InProcessTransport } from '../../plugin/bus/inprocess';
import type { Reply } from '../../plugin/bus/transport';
import { rejection, requestFor, transportConformance } from './conformance';

transportConformance('in-process', async () => {
  const hub = new InProcessHub();
  const gateway = new InProcessTransport(hub);
  const service = new InProcessTransport(hub);
  const service2 = new InProcessTransport(hub);
  await Promise.all([gateway.start(), service.start(), service2.start()]);
  return {
    gateway,
    service,
    service2,
    cleanup: async () => {
      await Promise.all([gateway.close(), service.close(), service2.close()]);
    },
  };
});

describe('InProcessTransport specifics', () => {
  it('copies the reply, so the service cannot change it after returning', async () => {
    const hub = new InProcessHub();
    const gateway = new InProcessTransport(hub);
    const service = new InProcessTransport(hub);
    await Promise.all([gateway.start(), service.start()]);
    const kept = { list: [1] };
    await service.serve('copy', async () => ({ ok: true, result: kept }));
    const reply = (await gateway.request(requestFor('copy'), 1000)) as { ok: true; result: { list: number[] } };
    kept.list.push(2);
    expect(reply.result).to.deep.equal({ list: [1] });
    await Promise.all([gateway.close(), service.close()]);
  });

  it('encodes like the wire: a Date arrives as an ISO string, undefined members vanish', async () => {
    const hub = new InProcessHub();
    const gateway = new InProcessTransport(hub);
    const service = new InProcessTransport(hub);
    await Promise.all([gateway.start(), service.start()]);
    const when = new Date('2024-01-02T03:04:05.000Z');
    await service.serve(
      'dates',
      async (m): Promise<Reply> => ({ ok: true, result: { when, gone: undefined, echo: m.input } }),
    );
    const reply = await gateway.request(requestFor('dates', { at: when as unknown as string }), 1000);
    expect(reply).to.deep.equal({ ok: true, result: { when: when.toISOString(), echo: { at: when.toISOString() } } });
    await Promise.all([gateway.close(), service.close()]);
  });

  it('does not run the handler synchronously inside request()', async () => {
    const hub = new InProcessHub();
    const gateway = new InProcessTransport(hub);
    const service = new InProcessTransport(hub);
    await Promise.all([gateway.start(), service.start()]);
    let ran = false;
    await service.serve('async', async () => {
      ran = true;
      return { ok: true };
    });
    const pending = gateway.request(requestFor('async'), 1000);
    expect(ran).to.equal(false);
    await pending;
    expect(ran).to.equal(true);
    await Promise.all([gateway.close(), service.close()]);
  });

  it('does not deliver a request that expired while it waited for a busy consumer', async () => {
    const hub = new InProcessHub();
    const gateway = new InProcessTransport(hub);
    const service = new InProcessTransport(hub);
    await Promise.all([gateway.start(), service.start()]);
    const handled: unknown[] = [];
    await service.serve(
      'busy',
      async (m) => {
        handled.push(m.input.n);
        await new Promise((r) => setTimeout(r, 150));
        return { ok: true };
      },
      { prefetch: 1 },
    );
    const first = gateway.request(requestFor('busy', { n: 1 }), 1000);
    const second = await rejection(gateway.request(requestFor('busy', { n: 2 }), 50));
    expect(second.code).to.equal('TIMEOUT');
    await first;
    await new Promise((r) => setTimeout(r, 20));
    expect(handled).to.deep.equal([1]);
    await Promise.all([gateway.close(), service.close()]);
  });

  it('a transport that was never started rejects requests with 503', async () => {
    const transport = new InProcessTransport(new InProcessHub());
    expect(transport.state()).to.equal('connecting');
    const err = await rejection(transport.request(requestFor('x'), 1000));
    expect(err.status).to.equal(503);
    await transport.close();
  });
});

describe('createTransport', () => {
  it('gives the in-process transport on the process-wide hub for "embedded", asked for by name', async () => {
    expect(defaultHub()).to.equal(defaultHub());
    expect(createTransport({ url: 'embedded' }).kind).to.equal('inprocess');
    expect(createTransport({ url: ' embedded ' }).kind).to.equal('inprocess');
    // a gateway and a service created independently find each other with no more configuration
    const gateway = createTransport({ url: 'embedded' });
    const service = createTransport({ url: 'embedded' });
    await Promise.all([gateway.start(), service.start()]);
    const sub = await service.serve('embedded-echo', async (m) => ({ ok: true, result: m.input }));
    expect(await gateway.request(requestFor('embedded-echo', { hi: 1 }), 1000)).to.deep.equal({
      ok: true,
      result: { hi: 1 },
    });
    await sub.close();
    await Promise.all([gateway.close(), service.close()]);
    expect(defaultHub().hasConsumer('embedded-echo')).to.equal(false);
  });

  it('gives the AMQP transport for amqp:// and amqps:// (without connecting)', () => {
    const plain = createTransport({ url: 'amqp://guest:guest@localhost:5672', prefix: 'p' });
    const tls = createTransport({ url: 'amqps://broker.example:5671/vhost' });
    expect(plain).to.be.instanceOf(AmqpTransport);
    expect(plain.kind).to.equal('amqp');
    expect(tls.kind).to.equal('amqp');
    expect(plain.state()).to.equal('connecting');
  });

  it('refuses no URL at all, naming BUS_URL: a service that forgot it would serve a bus nobody else can reach', () => {
    for (const url of [undefined, '', '  ']) {
      expect(() => createTransport({ url }), String(url)).to.throw(
        /^no bus URL: set BUS_URL to amqp:\/\/user:pass@host:5672 \(or to embedded/,
      );
    }
  });

  it('rejects any other URL', () => {
    for (const url of ['http://localhost', 'redis://x', 'amqp:/missing-slash', 'kafka']) {
      expect(() => createTransport({ url }), url).to.throw('BUS_URL must be amqp://, amqps:// or embedded');
    }
  });
});
