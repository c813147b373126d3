import { expect } from 'chai';
import { Leases, type InstanceRecord } from '../../plugin/contracts/leases';

const record = (service: string, instanceId: string, lastSeen: number, ttlMs = 100): InstanceRecord => ({
  service,
  instanceId,
  contracts: [],
  hashes: [],
  user: `service ${service}`,
  brokerUser: undefined,
  lastSeen,
  leaseExpiresAt: lastSeen + ttlMs,
  ttlMs,
  changedAt: lastSeen,
  changedSeq: 0,
  maintenanceSeconds: undefined,
});

describe('Leases: one record per service instance, with its lease', () => {
  it('keeps records by instance and by service, and forgets a service with its last instance', () => {
    const leases = new Leases();
    leases.keep(record('users', 'u1', 0));
    leases.keep(record('users', 'u2', 0));
    leases.keep(record('users', 'u1', 5));
    expect([leases.serviceCount, leases.instanceCount]).to.deep.equal([1, 2]);
    expect(leases.get('users', 'u1')?.lastSeen).to.equal(5);
    expect([...(leases.instancesOf('users')?.values() ?? [])].map((r) => r.instanceId)).to.deep.equal(['u1', 'u2']);
    expect(leases.remove('users', 'u1')?.instanceId).to.equal('u1');
    expect(leases.remove('users', 'u1')).to.equal(undefined);
    expect(leases.hasService('users')).to.equal(true);
    leases.remove('users', 'u2');
    expect([leases.hasService('users'), leases.serviceCount, leases.instanceCount]).to.deep.equal([false, 0, 0]);
  });

  it('renews a known instance, lists the expired ones, and gives every instance a whole lease from now', () => {
    const leases = new Leases();
    leases.keep(record('users', 'u1', 0));
    leases.keep({ ...record('orders', 'o1', 0), leaseExpiresAt: 2000 });
    expect(leases.renew('users', 'nobody', 50)).to.equal(false);
    expect(leases.renew('users', 'u1', 50)).to.equal(true);
    expect(leases.get('users', 'u1')).to.include({ lastSeen: 50, leaseExpiresAt: 150 });
    expect(leases.expired(150).map((r) => r.instanceId)).to.deep.equal(['u1']);
    expect(leases.instanceCount, 'expired() only lists them').to.equal(2);
    leases.renewAll(500);
    expect(leases.get('users', 'u1')?.leaseExpiresAt).to.equal(600);
    expect(leases.get('orders', 'o1')?.leaseExpiresAt, 'a lease running longer is kept').to.equal(2000);
  });

  it('holds a service in maintenance only while every instance says so, with the soonest Retry-After', () => {
    const leases = new Leases();
    expect(leases.maintenanceOf('users'), 'a service with no instance').to.equal(undefined);
    leases.keep({ ...record('users', 'u1', 0), maintenanceSeconds: 120 });
    expect(leases.maintenanceOf('users')).to.equal(120);
    leases.keep(record('users', 'u2', 0));
    expect(leases.maintenanceOf('users'), 'u2 still serves').to.equal(undefined);
    leases.keep({ ...record('users', 'u2', 0), maintenanceSeconds: 30 });
    expect(leases.maintenanceOf('users')).to.equal(30);
    leases.keep({ ...record('orders', 'o1', 0), maintenanceSeconds: 5 });
    expect(leases.maintenanceOf('users'), 'another service counts for nothing').to.equal(30);
    leases.remove('users', 'u2');
    expect(leases.maintenanceOf('users')).to.equal(120);
  });
});
