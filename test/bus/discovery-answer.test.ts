import { expect } from 'chai';
import { answerDiscovery } from '../../sdk/serve';

describe('answering discovery requests', () => {
  it('announces at once, then at most once per gap however many requests come', () => {
    let calls = 0;
    let clock = 1_000;
    const timers: Array<{ fn: () => void; ms: number }> = [];
    const answer = answerDiscovery(
      () => (calls += 1),
      50,
      () => clock,
      (fn, ms) => timers.push({ fn, ms }),
    );
    answer();
    expect(calls).to.equal(1);
    clock += 10;
    for (let i = 0; i < 1000; i += 1) answer(); // a flood within the gap: one call queued for its end
    expect(calls).to.equal(1);
    expect(
      timers.map((t) => t.ms),
      'one call, for the end of the gap',
    ).to.deep.equal([40]);
    clock += 40;
    timers[0]!.fn();
    expect(calls).to.equal(2);
    clock += 100;
    answer(); // after a quiet gap: at once again
    expect(calls).to.equal(3);
  });
});
