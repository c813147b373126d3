import { expect } from 'chai';
import { answerDiscovery } from '../../sdk/serve';

describe('answering discovery requests', () => {
  it('announces at once, then at most once per gap however many requests come', async () => {
    let calls = 0;
    let clock = 1_000;
    const answer = answerDiscovery(() => (calls += 1), 50, () => clock);
    answer();
    expect(calls).to.equal(1);
    for (let i = 0; i < 1000; i += 1) answer(); // a flood within the gap: one call queued for its end
    expect(calls).to.equal(1);
    clock += 50;
    await new Promise((r) => setTimeout(r, 80));
    expect(calls).to.equal(2);
    clock += 100;
    answer(); // after a quiet gap: at once again
    expect(calls).to.equal(3);
  });
});
