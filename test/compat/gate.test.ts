import { expect } from 'chai';
import { ContractRegistry } from '../../plugin/contracts/registry';
import { validateAnnouncement } from '../../plugin/contracts/announcement-validation';
import { type BreakingChange, type BreakingChangeMode, contractHash } from '../../plugin/compat/gate';
import type { Contract } from '../../plugin/contracts/types';
import { resolveSettings } from '../../plugin/settings';
import { InvalidSettingError } from '../../plugin/settings/invalid-setting';
import { validateSettings } from '../../plugin/settings/validation';

function contract(outputRequired: string[] = ['name'], extra: Partial<Contract> = {}): Contract {
  return {
    messageType: 'GetUserQuery',
    targetService: 'users',
    inputSchema: { type: 'object', properties: { userId: { type: 'string' } } },
    outputSchema: {
      type: 'object',
      properties: { name: { type: 'string' }, email: { type: 'string' } },
      required: outputRequired,
    },
    requiredPermissions: ['users:read'],
    ...extra,
  };
}
const v1 = contract(['name', 'email']);
/** v1 with `email` made optional: breaking for clients that read it. */
const v2 = contract(['name']);
const other = contract([], { messageType: 'ListUsersQuery' });

function setup(mode: BreakingChangeMode) {
  const warnings: string[] = [];
  const found: BreakingChange[] = [];
  const registry = new ContractRegistry({ logger: { warn: (m) => warnings.push(m) }, breakingChanges: mode });
  registry.on('breaking', (c) => found.push(c));
  const announce = (instanceId: string, contracts: Contract[]) =>
    registry.apply({ service: 'users', instanceId, contracts, ttlMs: 10_000 });
  const served = () => registry.get('GetUserQuery')?.outputSchema.required;
  return { registry, warnings, found, announce, served };
}

describe('breaking changes to served contracts', () => {
  it('accept: serves the change and reports nothing', () => {
    const { registry, warnings, found, announce, served } = setup('accept');
    announce('u1', [v1]);
    announce('u2', [v2]);
    expect(served()).to.deep.equal(['name']);
    expect(found).to.deep.equal([]);
    expect(warnings).to.deep.equal([]);
    expect(registry.breakingChanges()).to.deep.equal([]);
  });

  it('warn: serves the change, logs and reports it once with the previous hash and the reasons', () => {
    const { registry, warnings, found, announce, served } = setup('warn');
    announce('u1', [v1]);
    announce('u2', [v2]);
    announce('u2', [v2]);
    announce('u3', [v2]);
    expect(served()).to.deep.equal(['name']);
    expect(found).to.have.length(1);
    const [change] = registry.breakingChanges();
    expect(change).to.include({
      messageType: 'GetUserQuery',
      service: 'users',
      outcome: 'accepted',
      previousHash: contractHash(v1),
      hash: contractHash(v2),
    });
    expect(change?.reasons).to.deep.equal(['output.email may be missing now']);
    expect(warnings.filter((w) => w.includes('breaking change'))).to.have.length(1);
  });

  it('warn: an old instance re-announcing the version it always had is not a change', () => {
    const { found, announce, served } = setup('warn');
    announce('old', [v2]);
    announce('new', [v1]);
    announce('old', [v2]);
    expect(found).to.deep.equal([]);
    expect(served()).to.deep.equal(['name', 'email']);
  });

  it('refuse: the served version stays, the announcement is refused that change, its other contracts count', () => {
    const { registry, warnings, found, announce, served } = setup('refuse');
    announce('u1', [v1]);
    const result = announce('u2', [v2, other]);
    expect(result.accepted).to.equal(true);
    expect(served()).to.deep.equal(['name', 'email']);
    expect(registry.get('ListUsersQuery')).to.not.equal(undefined);
    // The old instance goes: the refused change is still not served.
    registry.apply({ service: 'users', instanceId: 'u1', contracts: [], ttlMs: 0, withdrawn: true });
    announce('u2', [v2, other]);
    expect(served()).to.deep.equal(['name', 'email']);
    expect(found).to.have.length(1);
    expect(registry.breakingChanges()[0]).to.include({
      outcome: 'refused',
      previousHash: contractHash(v1),
      hash: contractHash(v2),
    });
    expect(warnings.filter((w) => w.includes('refused; the previous version stays served'))).to.have.length(1);
  });

  it('refuse: a compatible change is served, and clears a refusal listed before', () => {
    const { registry, announce, served } = setup('refuse');
    announce('u1', [v1]);
    announce('u2', [v2]);
    expect(registry.breakingChanges()).to.have.length(1);
    const compatible = contract(['name', 'email'], {
      outputSchema: {
        ...v1.outputSchema,
        properties: { name: { type: 'string' }, email: { type: 'string' }, age: { type: 'integer' } },
      },
    });
    announce('u2', [compatible]);
    expect(registry.get('GetUserQuery')?.outputSchema.properties).to.have.property('age');
    expect(served()).to.deep.equal(['name', 'email']);
    expect(registry.breakingChanges()).to.deep.equal([]);
  });

  it('refuse: a contract no longer announced stays served; warn: it is reported and goes with the instances that had it', () => {
    const refusing = setup('refuse');
    refusing.announce('u1', [v1, other]);
    refusing.announce('u1', [other]);
    expect(refusing.served()).to.deep.equal(['name', 'email']);
    expect(refusing.registry.breakingChanges()[0]).to.include({ outcome: 'refused', hash: 'none' });
    const warning = setup('warn');
    warning.announce('u1', [v1, other]);
    warning.announce('u1', [other]);
    expect(warning.served()).to.equal(undefined);
    expect(warning.found[0]).to.include({ outcome: 'accepted', messageType: 'GetUserQuery' });
    expect(warning.registry.breakingChanges()).to.deep.equal([], 'forgotten once not served');
  });

  it('refuse: the refused version coming back, from the same or new instances, is logged and counted once', () => {
    const { found, warnings, announce, registry } = setup('refuse');
    announce('u1', [v1]);
    for (let round = 0; round < 3; round++) {
      announce('u2', [v2]);
      announce('u1', [v1]);
      registry.apply({ service: 'users', instanceId: `new-${round}`, contracts: [v2], ttlMs: 10_000 });
    }
    expect(registry.get('GetUserQuery')?.outputSchema.required).to.deep.equal(['name', 'email']);
    expect(found.map((c) => [c.outcome, c.previousHash, c.hash])).to.deep.equal([
      ['refused', contractHash(v1), contractHash(v2)],
    ]);
    expect(warnings.filter((w) => w.includes('breaking change'))).to.have.length(1);
  });

  it('reads breakingChanges from the block or BREAKING_CHANGES, warn by default, and refuses another value', () => {
    expect(resolveSettings({}, {}).breakingChanges).to.equal('warn');
    expect(resolveSettings({}, { BREAKING_CHANGES: 'refuse' }).breakingChanges).to.equal('refuse');
    expect(resolveSettings({ breakingChanges: 'accept' }, { BREAKING_CHANGES: 'refuse' }).breakingChanges).to.equal(
      'accept',
    );
    expect(() => validateSettings({}, { BREAKING_CHANGES: 'block' })).to.throw(
      InvalidSettingError,
      /^BREAKING_CHANGES /,
    );
    expect(() => validateSettings({ breakingChanges: 'ignore' }, {})).to.throw(
      InvalidSettingError,
      /^plugins\.contracts\.breakingChanges /,
    );
  });

  it('does not judge a contract another service holds (ownership decides that)', () => {
    const { registry, found } = setup('refuse');
    registry.apply({ service: 'users', instanceId: 'u1', contracts: [v1], ttlMs: 10_000 });
    registry.apply({
      service: 'people',
      instanceId: 'p1',
      contracts: [{ ...v2, targetService: 'people' }],
      ttlMs: 10_000,
    });
    expect(found).to.deep.equal([]);
  });
});

describe('deprecated and sunset in an announcement', () => {
  const check = (extra: Record<string, unknown>) =>
    validateAnnouncement({ service: 'users', instanceId: 'u1', ttlMs: 1000, contracts: [{ ...v1, ...extra }] });

  it('keeps deprecated and an ISO 8601 sunset (a date, or a date-time with a zone)', () => {
    for (const sunset of [
      '2030-01-31',
      '2030-01-31T12:30:00Z',
      '2030-01-31T12:30+02:00',
      '2030-01-31T12:30:00.250-05:00',
    ]) {
      const result = check({ deprecated: true, sunset });
      expect(result.ok, sunset).to.equal(true);
      if (result.ok) expect(result.announcement.contracts[0]).to.include({ deprecated: true, sunset });
    }
  });

  it('refuses an invalid sunset or a deprecated that is not a boolean', () => {
    for (const sunset of [
      '2030-02-30',
      '31/01/2030',
      '2030-01-31T12:30:00',
      '2030-13-01',
      'tomorrow',
      20300131,
      '2030-01-31T25:00Z',
    ]) {
      const result = check({ deprecated: true, sunset });
      expect(result.ok, String(sunset)).to.equal(false);
      if (!result.ok) expect(result.reason).to.match(/^contracts\[0\] sunset must be an ISO 8601 date/);
    }
    const result = check({ deprecated: 'yes' });
    expect(result.ok).to.equal(false);
    if (!result.ok) expect(result.reason).to.equal('contracts[0] deprecated must be a boolean');
  });
});
