import { expect } from 'chai';
import { nestedDeeperThan } from '../../plugin/request/json-depth';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');
const nested = (levels: number): string => '['.repeat(levels) + ']'.repeat(levels);

describe('JSON nesting depth check', () => {
  it('allows exactly the limit and refuses one level more, for arrays and objects alike', () => {
    expect(nestedDeeperThan(bytes(nested(64)), 64)).to.equal(false);
    expect(nestedDeeperThan(bytes(nested(65)), 64)).to.equal(true);
    const objects = (levels: number): string => `${'{"a":'.repeat(levels - 1)}{}${'}'.repeat(levels - 1)}`;
    expect(nestedDeeperThan(bytes(objects(3)), 3)).to.equal(false);
    expect(nestedDeeperThan(bytes(objects(4)), 3)).to.equal(true);
  });

  it('counts depth, not the number of brackets: siblings do not add up', () => {
    expect(nestedDeeperThan(bytes(`{"a":${'[1],'.repeat(500)}[2]}`), 2)).to.equal(false);
  });

  it('ignores brackets inside strings, escaped quotes and multi-byte characters included', () => {
    expect(nestedDeeperThan(bytes(JSON.stringify({ s: '[[[[[{{{{{' })), 1)).to.equal(false);
    expect(nestedDeeperThan(bytes(JSON.stringify({ s: 'say \\"[[[[\\" ü€😀 [[[[' })), 1)).to.equal(false);
    expect(nestedDeeperThan(bytes(JSON.stringify({ s: 'ü"[[', t: [[['x']]] })), 3)).to.equal(true);
  });

  it('finds a deep body of 5,000 levels without recursion', () => {
    expect(nestedDeeperThan(bytes(nested(5000)), 100)).to.equal(true);
  });
});
