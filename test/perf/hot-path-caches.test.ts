import { expect } from 'chai';
import { ContractRegistry } from '../../plugin/contracts/registry';
import type { Contract } from '../../plugin/contracts/types';
import { schemaHash } from '../../plugin/validation/schema-hash';
import { stripWriteOnly } from '../../plugin/validation/write-only';
import { detectStyle } from '../../plugin/config-writer/gateway-config';

/** The per-request caches of the hot path (bench/ measures their effect; these check they stay correct). */
describe('hot-path caches', () => {
  const contract = (messageType: string, extra: Partial<Contract> = {}): Contract => ({
    messageType,
    targetService: 'users',
    inputSchema: { type: 'object', properties: { userId: { type: 'string' } } },
    outputSchema: { type: 'object' },
    requiredPermissions: ['users:read'],
    ...extra,
  });

  it('registry.get hands out one frozen snapshot until the contract changes, then a new one', () => {
    const registry = new ContractRegistry();
    registry.apply({ service: 'users', instanceId: 'u1', contracts: [contract('GetUserQuery')], ttlMs: 10_000 });
    const first = registry.get('GetUserQuery');
    expect(first).to.equal(registry.get('GetUserQuery'));
    expect(Object.isFrozen(first)).to.equal(true);
    expect(Object.isFrozen(first?.inputSchema.properties)).to.equal(true);
    expect(() => (first as Contract).requiredPermissions.push('x')).to.throw(TypeError);
    // The registry's own copy is untouched by anything a caller could try.
    expect(registry.contracts()[0]?.requiredPermissions).to.deep.equal(['users:read']);

    registry.apply({
      service: 'users',
      instanceId: 'u1',
      contracts: [contract('GetUserQuery', { requiredPermissions: ['users:admin'] })],
      ttlMs: 10_000,
    });
    const second = registry.get('GetUserQuery');
    expect(second).to.not.equal(first);
    expect(second?.requiredPermissions).to.deep.equal(['users:admin']);
    expect(registry.get('Nope')).to.equal(undefined);
  });

  it('schemaHash remembers frozen schemas only, and an equal mutable schema still hashes alike', () => {
    const mutable: Record<string, unknown> = { type: 'object' };
    const before = schemaHash(mutable);
    mutable.required = ['a'];
    expect(schemaHash(mutable)).to.not.equal(before);
    const frozen = Object.freeze({ type: 'object', required: ['a'] });
    expect(schemaHash(frozen)).to.equal(schemaHash(mutable));
    expect(schemaHash(frozen)).to.equal(schemaHash({ type: 'object', required: ['a'] }));
  });

  it('stripWriteOnly returns the value untouched when the schema has no writeOnly, and still strips when it has', () => {
    const plain = Object.freeze({ type: 'object', properties: { password: { type: 'string' } } });
    const value = { password: 'shown: the schema does not hide it' };
    expect(stripWriteOnly(value, plain)).to.equal(value);
    const hiding = Object.freeze({ type: 'object', properties: { password: { type: 'string', writeOnly: true } } });
    expect(stripWriteOnly({ password: 'x', name: 'n' }, hiding)).to.deep.equal({ name: 'n' });
    expect(
      stripWriteOnly({ password: 'x', name: 'n' }, { type: 'object', properties: { password: { writeOnly: true } } }),
    ).to.deep.equal({ name: 'n' });
  });

  it('detectStyle reads a large config in linear time and still sees flush sequences after comments', () => {
    const entry = (i: number) => `  e${i}:\n    # note\n\n    methods:\n    - GET\n`;
    const text = `apiEndpoints:\n${Array.from({ length: 20_000 }, (_, i) => entry(i)).join('')}`;
    const started = Date.now();
    const style = detectStyle(text);
    expect(Date.now() - started).to.be.below(5_000); // generous: quadratic took minutes here
    expect(style.indentSeq).to.equal(false);
  });
});
