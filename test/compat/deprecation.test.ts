import { expect } from 'chai';
import { Deprecations } from '../../plugin/compat/deprecation';
import type { Contract } from '../../plugin/contracts/types';

function contract(messageType: string, extra: Partial<Contract> = {}): Contract {
  return { messageType, targetService: 'users', inputSchema: {}, outputSchema: {}, requiredPermissions: [], ...extra };
}

describe('Deprecation and Sunset headers', () => {
  it('dates the deprecation from when the gateway first served it so, and keeps that date while it stays deprecated', () => {
    let now = Date.UTC(2030, 0, 1, 0, 0, 5);
    const d = new Deprecations(() => now);
    d.update([contract('A', { deprecated: true }), contract('B')]);
    expect(d.of('A')).to.deep.equal({ Deprecation: `@${Date.UTC(2030, 0, 1, 0, 0, 5) / 1000}` });
    expect(d.of('B')).to.equal(undefined);
    now += 60_000;
    d.update([contract('A', { deprecated: true })]);
    expect(d.of('A')?.Deprecation).to.equal(`@${Date.UTC(2030, 0, 1, 0, 0, 5) / 1000}`);
    // Undeprecated then deprecated again: a new date.
    d.update([contract('A')]);
    expect(d.of('A')).to.equal(undefined);
    d.update([contract('A', { deprecated: true })]);
    expect(d.of('A')?.Deprecation).to.equal(`@${now / 1000}`);
  });

  it('gives the sunset as an HTTP-date, and never dates the deprecation after it (RFC 9745)', () => {
    const d = new Deprecations(() => Date.UTC(2030, 5, 1));
    d.update([
      contract('A', { deprecated: true, sunset: '2030-03-01' }),
      contract('B', { sunset: '2031-01-31T12:00:00+01:00' }),
    ]);
    expect(d.of('A')).to.deep.equal({
      Deprecation: `@${Date.UTC(2030, 2, 1) / 1000}`,
      Sunset: 'Fri, 01 Mar 2030 00:00:00 GMT',
    });
    expect(d.of('B')).to.deep.equal({ Sunset: 'Fri, 31 Jan 2031 11:00:00 GMT' });
  });
});
