import { expect } from 'chai';
import { MemoryIdempotencyStore, serve } from '../../sdk';
import { InProcessHub } from '../../plugin/bus/inprocess/hub';
import { InProcessTransport } from '../../plugin/bus/inprocess';

const contract = (messageType: string) => ({
  messageType,
  inputSchema: { type: 'object' },
  outputSchema: { type: 'object' },
  requiredPermissions: [],
});

/**
 * An operation whose answers carry credentials (a login's tokens) is never deduplicated by an Idempotency-Key:
 * its answer is not kept, so a repeat of the key runs again and gets tokens of its own, never the first ones.
 */
describe('serve(): secretAnswers operations and the idempotency store', () => {
  it('a keyed repeat runs again and is not marked replayed; a plain operation is still replayed', async () => {
    const transport = new InProcessTransport(new InProcessHub());
    await transport.start();
    const store = new MemoryIdempotencyStore();
    let logins = 0;
    let creates = 0;
    const running = await serve({
      transport,
      service: 'auth',
      idempotency: { store },
      operations: [
        { contract: contract('LoginCommand'), handle: () => ({ token: `t${++logins}` }), secretAnswers: true },
        { contract: contract('CreateThingCommand'), handle: () => ({ id: `c${++creates}` }) },
      ],
    });
    const send = (messageType: string) =>
      transport.request(
        {
          messageType,
          targetService: 'auth',
          input: {},
          headers: { correlationId: 'c', requestId: 'r', idempotencyKey: 'one-key' },
        },
        2000,
      );
    try {
      expect(await send('LoginCommand')).to.deep.equal({ ok: true, result: { token: 't1' } });
      expect(await send('LoginCommand')).to.deep.equal({ ok: true, result: { token: 't2' } });
      expect(await send('CreateThingCommand')).to.deep.equal({ ok: true, result: { id: 'c1' } });
      expect(await send('CreateThingCommand')).to.deep.equal({ ok: true, result: { id: 'c1' }, replayed: true });
      expect(creates).to.equal(1);
    } finally {
      await running.stop();
      await transport.close();
    }
  });
});
