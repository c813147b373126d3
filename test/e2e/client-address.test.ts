import { expect } from 'chai';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/gateway-process';
import { gatewayWithBus } from '../support/gateway-with-bus';
import { httpAs } from '../support/http';
import { serve } from '../../sdk';

const http = httpAs(['admin:all']);

/** The caller's address reaches the service as the clientAddress header, as the host sees it. */
describe('the client address in the message headers', function () {
  this.timeout(60000);
  const fx = gatewayWithBus({ START_REFERENCE_SERVICES: 'false' }, () =>
    mkdtempSync(join(tmpdir(), 'contracts-addr-')),
  );

  it('is the socket peer, and X-Forwarded-For does not change it while the host trusts no proxy', async () => {
    fx.running.push(
      await serve({
        transport: fx.transport,
        service: 'whoami-service',
        operations: [
          {
            contract: {
              messageType: 'WhoAmIQuery',
              http: { method: 'GET', paths: ['/api/whoami'] },
              inputSchema: { type: 'object' },
              outputSchema: { type: 'object' },
              requiredPermissions: [],
            },
            handle: (_input, ctx) => ({ clientAddress: ctx.clientAddress ?? null }),
          },
        ],
      }),
    );
    const plain = await eventually(async () => {
      const res = await http('GET', `${fx.gw.baseUrl}/api/whoami`);
      expect(res.status, res.text).to.equal(200);
      return res;
    });
    expect(plain.body.clientAddress).to.be.oneOf(['127.0.0.1', '::ffff:127.0.0.1']);
    const forwarded = await http('GET', `${fx.gw.baseUrl}/api/whoami`, {
      headers: { 'x-forwarded-for': '203.0.113.5' },
    });
    expect(forwarded.body.clientAddress).to.equal(plain.body.clientAddress);
  });
});
