import { expect } from 'chai';
import { InProcessHub } from '../../plugin/bus/inprocess/hub';
import { InProcessTransport } from '../../plugin/bus/inprocess';
import type { Announcement } from '../../plugin/contracts/types';
import { serve } from '../../sdk';

/** Lets the in-process bus deliver what was published. */
const delivered = () => new Promise((r) => setTimeout(r, 20));

describe('the SDK announces maintenance', () => {
  it('at once and with every re-announcement, until maintenance(false); a bad value throws and announces nothing', async () => {
    const hub = new InProcessHub();
    const gateway = new InProcessTransport(hub);
    const service = new InProcessTransport(hub);
    await Promise.all([gateway.start(), service.start()]);
    const heard: Announcement[] = [];
    await gateway.onAnnouncement((a) => heard.push(a));
    const running = await serve({
      transport: service,
      service: 'reports',
      ttlMs: 300,
      operations: [
        {
          contract: {
            messageType: 'ListReportsQuery',
            inputSchema: { type: 'object' },
            outputSchema: {},
            requiredPermissions: [],
          },
          handle: () => [],
        },
      ],
    });
    try {
      await delivered();
      expect(heard.at(-1)?.service).to.equal('reports');
      expect(heard.at(-1)?.maintenance).to.equal(undefined);
      await running.maintenance({ retryAfterSeconds: 120 });
      await delivered();
      expect(heard.at(-1)).to.deep.include({ service: 'reports', maintenance: { retryAfterSeconds: 120 } });
      expect(heard.at(-1)?.contracts.map((c) => c.messageType)).to.deep.equal(['ListReportsQuery']);
      // The re-announcement (every ttlMs / 3) keeps it.
      const count = heard.length;
      await new Promise((r) => setTimeout(r, 250));
      expect(heard.length).to.be.greaterThan(count);
      expect(heard.at(-1)?.maintenance).to.deep.equal({ retryAfterSeconds: 120 });
      for (const bad of [0, 86_401, 2.5, Number.NaN]) {
        await running.maintenance({ retryAfterSeconds: bad }).then(
          () => expect.fail(`accepted ${bad}`),
          (err: unknown) => expect(err).to.be.instanceOf(RangeError),
        );
      }
      await delivered();
      expect(heard.at(-1)?.maintenance, 'a refused value changes nothing').to.deep.equal({ retryAfterSeconds: 120 });
      await running.maintenance(false);
      await delivered();
      expect(heard.at(-1)?.maintenance).to.equal(undefined);
      expect(heard.at(-1)?.withdrawn).to.equal(undefined);
    } finally {
      await running.stop();
      await Promise.all([gateway.close(), service.close()]);
    }
  });
});
