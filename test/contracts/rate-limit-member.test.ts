import { expect } from 'chai';
import { validateAnnouncement } from '../../plugin/contracts/announcement-validation';

function announcement(rateLimit: unknown) {
  return {
    service: 'reports',
    instanceId: 'r1',
    ttlMs: 10_000,
    contracts: [
      {
        messageType: 'ExportReportQuery',
        targetService: 'reports',
        inputSchema: {},
        outputSchema: {},
        requiredPermissions: [],
        rateLimit,
      },
    ],
  };
}

describe('the contract member rateLimit', () => {
  it('is kept when it is { max, windowMs } or { max }', () => {
    const full = validateAnnouncement(announcement({ max: 10, windowMs: 5000 }));
    expect(full.ok && full.announcement.contracts[0]!.rateLimit).to.deep.equal({ max: 10, windowMs: 5000 });
    const short = validateAnnouncement(announcement({ max: 3, extra: 'dropped' }));
    expect(short.ok && short.announcement.contracts[0]!.rateLimit).to.deep.equal({ max: 3 });
  });

  it('is optional', () => {
    const res = validateAnnouncement(announcement(undefined));
    expect(res.ok && res.announcement.contracts[0]).not.to.have.property('rateLimit');
  });

  it('refuses the announcement when it is unusable', () => {
    for (const bad of [
      5,
      { max: 0 },
      { max: 1.5 },
      { max: '10' },
      { windowMs: 1000 },
      { max: 1, windowMs: 10 },
      { max: 1, windowMs: 86_400_001 },
    ]) {
      const res = validateAnnouncement(announcement(bad));
      expect(res.ok, JSON.stringify(bad)).to.equal(false);
      if (!res.ok) expect(res.reason).to.match(/rateLimit/);
    }
  });
});
