import { expect } from 'chai';
import { ContractRegistry } from '../../plugin/contracts/registry';
import { AnnouncementInbox, announcerProblem } from '../../plugin/contracts/inbox';
import type { Announcement, Contract } from '../../plugin/contracts/types';
import { ManualClock } from '../support/manual-clock';

function contract(messageType: string, targetService: string, permissions: string[] = []): Contract {
  return {
    messageType,
    targetService,
    inputSchema: { type: 'object' },
    outputSchema: {},
    requiredPermissions: permissions,
  };
}

function announce(service: string, instanceId: string, contracts: Contract[]): Announcement {
  return { service, instanceId, contracts, ttlMs: 10_000 };
}

function setup(announcers?: { users: Record<string, string>; required: boolean }) {
  let now = 1_000;
  const warnings: string[] = [];
  const logger = { warn: (m: string) => warnings.push(m) };
  const registry = new ContractRegistry({ now: () => now, logger });
  const changes: string[][] = [];
  registry.on('change', (c) => changes.push(c.map((x) => `${x.messageType}:${x.requiredPermissions.join('+')}`)));
  // A long interval: nothing is applied but by flush(), so the test decides what a batch is.
  const inbox = new AnnouncementInbox(registry, { intervalMs: 60_000, logger, announcers });
  return { registry, inbox, changes, warnings, tick: (ms: number) => (now += ms) };
}

describe('announcement inbox', () => {
  it('coalesces a burst into one registry change: the latest announcement of each instance wins', () => {
    const { inbox, changes, registry } = setup();
    inbox.offer(announce('svc', 'i1', [contract('DoCommand', 'svc')])); // the first one after a quiet period
    inbox.flush();
    for (let v = 0; v < 500; v += 1) inbox.offer(announce('svc', 'i1', [contract('DoCommand', 'svc', [`v${v}`])]));
    inbox.offer(announce('other', 'o1', [contract('OtherCommand', 'other')]));
    inbox.flush();
    expect(changes).to.deep.equal([['DoCommand:'], ['DoCommand:v499', 'OtherCommand:']]);
    expect(registry.instances()).to.have.length(2);
    inbox.stop();
  });

  it('an exact repeat only renews the lease, without a change', () => {
    const { inbox, changes, registry, tick } = setup();
    const a = announce('svc', 'i1', [contract('DoCommand', 'svc')]);
    inbox.offer(a, { digest: 'd1' });
    inbox.flush();
    tick(5_000);
    inbox.offer(a, { digest: 'd1' }); // applied at once, no batch needed
    expect(registry.instances()[0]?.leaseExpiresAt).to.equal(16_000);
    inbox.flush();
    expect(changes).to.have.length(1);
    inbox.stop();
  });

  it('a refused announcement is not remembered as the instance content: its repeat is checked again', () => {
    const { inbox, registry } = setup();
    inbox.offer(announce('svc', 'i1', [contract('DoCommand', 'svc')]), { digest: 'good' });
    inbox.flush();
    inbox.offer({ ...announce('svc', 'i1', []), ttlMs: -1 }, { digest: 'bad' });
    inbox.flush();
    inbox.offer({ ...announce('svc', 'i1', []), ttlMs: -1 }, { digest: 'bad' });
    inbox.flush();
    expect(registry.contracts().map((c) => c.messageType)).to.deep.equal(['DoCommand']);
    inbox.stop();
  });

  it('a withdrawal in the same batch as announcements of its instance ends it', () => {
    const { inbox, registry } = setup();
    inbox.offer(announce('svc', 'i1', [contract('DoCommand', 'svc')]));
    inbox.offer({ service: 'svc', instanceId: 'i1', withdrawn: true });
    inbox.flush();
    expect(registry.instances()).to.deep.equal([]);
    inbox.stop();
  });

  describe('broker users', () => {
    it('refuses an announcement whose user_id is not the one of its service', () => {
      const { inbox, registry, warnings } = setup({ users: { 'users-service': 'svc-users' }, required: false });
      inbox.offer(announce('users-service', 'u1', [contract('ListUsersQuery', 'users-service')]), { userId: 'guest' });
      inbox.offer(announce('users-service', 'u1', [contract('ListUsersQuery', 'users-service')]), { userId: 'guest' });
      inbox.flush();
      expect(registry.contracts()).to.deep.equal([]);
      expect(warnings).to.deep.equal([
        'refused announcement for service users-service instance u1: broker user guest may not announce for users-service (expected svc-users)',
      ]);
      inbox.offer(announce('users-service', 'u1', [contract('ListUsersQuery', 'users-service')]), {
        userId: 'svc-users',
      });
      inbox.flush();
      expect(registry.contracts()).to.have.length(1);
      inbox.stop();
    });

    it('requires a user_id named like the service, or the mapped one, when required', () => {
      const check = { users: { 'auth-service': 'auth' }, required: true };
      expect(announcerProblem('users-service', { userId: 'users-service' }, check)).to.equal(undefined);
      expect(announcerProblem('auth-service', { userId: 'auth' }, check)).to.equal(undefined);
      expect(announcerProblem('auth-service', { userId: 'auth-service' }, check)).to.equal(
        'broker user auth-service may not announce for auth-service (expected auth)',
      );
      expect(announcerProblem('users-service', {}, check)).to.equal(
        'it carries no broker user (user_id); users-service announces as broker user users-service',
      );
      expect(announcerProblem('users-service', {}, { users: {}, required: false })).to.equal(undefined);
    });
  });
});

describe('announcement inbox: pacing, on a clock the test moves', () => {
  function paced(intervalMs: number) {
    const clock = new ManualClock();
    const registry = new ContractRegistry({ now: () => clock.now() });
    const changes: number[] = [];
    registry.on('change', () => changes.push(clock.now()));
    const inbox = new AnnouncementInbox(registry, { intervalMs, clock });
    return { clock, registry, inbox, changes };
  }

  it('applies the first announcement at once and the next burst one interval after the last batch', () => {
    const { clock, inbox, changes } = paced(1000);
    const start = clock.now();
    inbox.offer(announce('svc', 'i1', [contract('OneCommand', 'svc')]));
    clock.advance(0);
    expect(changes).to.deep.equal([start]);
    for (let i = 0; i < 5; i++) inbox.offer(announce('svc', `i${i}`, [contract(`Cmd${i}Command`, 'svc')]));
    clock.advance(999);
    expect(changes).to.have.length(1);
    clock.advance(1);
    expect(changes).to.deep.equal([start, start + 1000]);
    inbox.stop();
    expect(clock.waiting()).to.equal(0);
  });

  it('waits four times as long as applying the last batch took, when that is longer than the interval', () => {
    const { clock, registry, inbox, changes } = paced(100);
    registry.on('change', () => clock.pass(500)); // the listeners (validators, documents) take 500 ms
    const start = clock.now();
    inbox.offer(announce('svc', 'i1', [contract('OneCommand', 'svc')]));
    clock.advance(0);
    inbox.offer(announce('svc', 'i2', [contract('TwoCommand', 'svc')]));
    clock.advance(1999);
    expect(changes).to.deep.equal([start]);
    clock.advance(1);
    expect(changes).to.deep.equal([start, start + 500 + 2000]);
    inbox.stop();
  });
});
