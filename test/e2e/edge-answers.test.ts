import { expect } from 'chai';
import { startGateway, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs } from '../support/http';

const admin = httpAs(['admin:all']);
const nested = (levels: number): string => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

/** What the gateway answers to malformed or hostile requests, end to end (npm start, embedded bus). */
describe('edge answers to hostile input (end to end)', function () {
  this.timeout(30000);
  let gw: GatewayProcess;

  before(async () => {
    gw = await startGateway({ BUS_URL: 'embedded', MAX_JSON_DEPTH: '20' });
  });
  after(async () => gw?.stop());

  describe('JSON nesting limit (MAX_JSON_DEPTH)', () => {
    for (const [label, send, path] of [
      ['the public /api/login', http, '/api/login'],
      ['an authenticated route', admin, '/api/users'],
    ] as const) {
      it(`answers 400 VALIDATION_ERROR on ${label} for a body nested deeper than the limit, 5,000 levels included`, async () => {
        for (const levels of [21, 5000]) {
          const res = await send('POST', `${gw.baseUrl}${path}`, { body: nested(levels), headers: { 'content-type': 'application/json' } });
          expect(res.status, res.text).to.equal(400);
          expect(res.body).to.include({ code: 'VALIDATION_ERROR', error: 'Validation failed' });
          expect(res.body.message).to.match(/deeper than 20 levels/);
          expect(res.body.correlationId).to.equal(res.headers.get('x-correlation-id'));
          expect(res.headers.get('x-request-id')).to.be.a('string');
        }
      });
    }

    it('lets a body at the limit through to the service', async () => {
      const res = await http('POST', `${gw.baseUrl}/api/login`, { body: { email: 'nobody@example.com', password: 'x', extra: JSON.parse(nested(18)) } });
      expect(res.body.code, res.text).to.not.equal('VALIDATION_ERROR');
      expect(res.status).to.equal(401);
    });
  });
});
