import { expect } from 'chai';
import { DiscoveryGrace } from '../../plugin/contracts/discovery-grace';
import { noHandler, type ContractSource } from '../../plugin/pipeline/resolve-contract';
import { resolveSettings } from '../../plugin/settings';
import { toErrorBody } from '../../plugin/errors/error-body';

describe('discovery grace', () => {
  it('runs for graceMs from when the services were asked, and starts again after the bus was lost', () => {
    let now = 1_000;
    const grace = new DiscoveryGrace(5000, () => now);
    expect(grace.remainingMs(), 'not asked yet: the whole grace').to.equal(5000);
    grace.asked();
    now += 1200;
    expect(grace.remainingMs()).to.equal(3800);
    grace.asked();
    expect(grace.remainingMs(), 'a second request does not move the start').to.equal(3800);
    now += 3800;
    expect(grace.remainingMs()).to.equal(0);
    grace.lost();
    expect(grace.remainingMs()).to.equal(5000);
    grace.asked();
    now += 4999;
    expect(grace.remainingMs()).to.equal(1);
  });

  it('0 is no grace at all', () => {
    expect(new DiscoveryGrace(0).remainingMs()).to.equal(0);
  });

  it('defaults to 5000 ms; DISCOVERY_GRACE_MS=0 turns it off', () => {
    expect(resolveSettings({}, {}).discoveryGraceMs).to.equal(5000);
    expect(resolveSettings({}, { DISCOVERY_GRACE_MS: '0' }).discoveryGraceMs).to.equal(0);
    expect(resolveSettings({ discoveryGraceMs: 800 }, { DISCOVERY_GRACE_MS: '0' }).discoveryGraceMs).to.equal(800);
  });

  describe('a route no contract serves', () => {
    const source = (state: string, remainingMs: number): ContractSource => ({
      settings: {},
      transport: { state: () => state },
      discoveryGrace: { remainingMs: () => remainingMs },
      contract: () => undefined,
    });

    it('within the grace: 503 SERVICE_UNAVAILABLE with the grace left as Retry-After, in the error body', () => {
      const { status, body, headers } = toErrorBody(noHandler('No handler for X', source('up', 2300)), 'cid');
      expect(status).to.equal(503);
      expect(body).to.include({ code: 'SERVICE_UNAVAILABLE', retryAfter: 3 });
      expect(headers).to.deep.equal({ 'Retry-After': '3' });
    });

    it('after it: 404 HANDLER_NOT_FOUND; with the bus not up: 503 as before', () => {
      expect(toErrorBody(noHandler('No handler for X', source('up', 0)), 'cid')).to.deep.include({ status: 404 });
      expect(toErrorBody(noHandler('No handler for X', source('down', 0)), 'cid')).to.deep.include({ status: 503 });
      expect(toErrorBody(noHandler('No handler for X', source('blocked', 0)), 'cid')).to.deep.include({ status: 503 });
    });

    it('while the broker refuses the announcement listener, even after the grace: 503 with Retry-After', () => {
      const deaf: ContractSource = {
        ...source('up', 0),
        transport: { state: () => 'up', announcementsUnheard: () => 'announcement listener: the broker refused it' },
      };
      const { status, body, headers } = toErrorBody(noHandler('No handler for X', deaf), 'cid');
      expect(status).to.equal(503);
      expect(body).to.include({ code: 'SERVICE_UNAVAILABLE', retryAfter: 5 });
      expect(body.message).to.match(/cannot hear the services' announcements/);
      expect(headers).to.deep.equal({ 'Retry-After': '5' });
      const hearing: ContractSource = {
        ...source('up', 0),
        transport: { state: () => 'up', announcementsUnheard: () => undefined },
      };
      expect(toErrorBody(noHandler('No handler for X', hearing), 'cid')).to.deep.include({ status: 404 });
    });
  });
});
