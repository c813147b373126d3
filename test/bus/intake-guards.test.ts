import { expect } from 'chai';
import { ByteBudget } from '../../plugin/bus/byte-budget';
import { inert, OnceLog } from '../../plugin/log-once';

describe('announcement intake guards', () => {
  it('ByteBudget allows a second worth of bytes, then answers how long to wait', () => {
    let now = 0;
    const budget = new ByteBudget(1000, () => now);
    expect(budget.take(600)).to.equal(0);
    expect(budget.take(400)).to.equal(0);
    expect(budget.take(500)).to.equal(500); // 500 bytes over: half a second
    now += 500;
    expect(budget.take(100)).to.equal(100); // refilled 500, still 100 short
    now += 10_000;
    expect(budget.take(1000)).to.equal(0); // never more than one second's worth saved up
    expect(budget.take(1)).to.equal(1);
  });

  it('OnceLog logs a key once per window and counts the repeats it held back', () => {
    let now = 0;
    const lines: string[] = [];
    const log = new OnceLog({ warn: (m) => lines.push(m) }, { windowMs: 1000, maxKeys: 2, now: () => now });
    log.warn('a', 'dropped a');
    log.warn('a', 'dropped a');
    log.warn('a', 'dropped a');
    log.warn('b', 'dropped b');
    now += 1000;
    log.warn('a', 'dropped a');
    expect(lines).to.deep.equal(['dropped a', 'dropped b', 'dropped a (2 more like it since the last line)']);
    log.warn('c', 'dropped c'); // over maxKeys: the least recently used key (b) is forgotten
    log.warn('b', 'dropped b');
    expect(lines.slice(-2)).to.deep.equal(['dropped c', 'dropped b']);
  });

  it('inert keeps wire text to one bounded line and names non-strings by type', () => {
    expect(inert('svc\nFAKE LOG LINE\u001b[31m')).to.equal('svc?FAKE LOG LINE?[31m');
    expect(inert('x'.repeat(200), 10)).to.equal(`${'x'.repeat(10)}…`);
    expect(inert({ deep: {} })).to.equal('(object)');
    expect(inert(null)).to.equal('(null)');
  });
});
