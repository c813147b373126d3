import { expect } from 'chai';
import { startGateway, type GatewayProcess } from '../support/gateway-process';
import { httpAs } from '../support/http';

const http = httpAs(['admin:all']);

/** Failures inside the host itself, before any of our policies answers, still leave in the JSON error body. */
describe('errors raised by the host (end to end)', () => {
  let gw: GatewayProcess;
  before(async () => {
    gw = await startGateway({ BUS_URL: 'embedded' });
  });
  after(async () => gw?.stop());

  it('answers a path Express cannot decode with 400 BAD_REQUEST, never a stack trace', async () => {
    const res = await http('GET', `${gw.baseUrl}/api/users/%E0%A4%A`);
    expect(res.status).to.equal(400);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.body).to.include({ code: 'BAD_REQUEST', error: 'Bad Request' });
    expect(res.body.correlationId).to.equal(res.headers.get('x-correlation-id'));
    expect(res.headers.get('x-request-id')).to.be.a('string').and.not.equal('');
    expect(res.text).not.to.match(/URIError|node_modules|at |\/work\/|decode/);
  });

  it('answers a path outside /api that nothing serves with 404 in the error body', async () => {
    const res = await http('GET', `${gw.baseUrl}/no-such-page`);
    expect(res.status).to.equal(404);
    expect(res.body).to.include({ code: 'NOT_FOUND' });
    expect(res.text).not.to.match(/Cannot GET|<html/i);
  });

  it('keeps serving afterwards', async () => {
    expect((await http('GET', `${gw.baseUrl}/api/users`)).status).to.equal(200);
  });
});
