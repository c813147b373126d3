import { expect } from 'chai';
import type { Channel } from 'amqplib';
import { CONFIRM_STALL_MS, ConfirmWatches } from '../../plugin/bus/amqp/confirm-stall';

/* The watch the gateway keeps of its request channels' confirms: which channel is stuck, and what waited on it. */

const channel = () => ({}) as unknown as Channel;

describe('a request channel the broker stops confirming is found stuck', () => {
  it('finds a channel stuck once its oldest publish waited the stall period, and hands what waited on it once', () => {
    const watches = new ConfirmWatches();
    const ch = channel();
    const watch = watches.of(ch);
    watch.sent(1_000, 'a');
    watch.sent(2_000, 'b');
    expect(watches.stuck(ch, 1_000 + CONFIRM_STALL_MS - 1), 'not before the stall period').to.equal(undefined);
    expect(watches.stuck(ch, 1_000 + CONFIRM_STALL_MS)).to.deep.equal(['a', 'b']);
    expect(watches.stuck(ch, 1_000 + 10 * CONFIRM_STALL_MS), 'found stuck once').to.equal(undefined);
  });

  it('measures from the oldest publish not yet confirmed: a confirmed one does not count', () => {
    const watches = new ConfirmWatches();
    const ch = channel();
    const watch = watches.of(ch);
    const first = watch.sent(1_000, 'a');
    watch.sent(2_500, 'b');
    watch.confirmed(first);
    expect(watch.waitedMs(4_000)).to.equal(1_500);
    expect(watches.stuck(ch, 1_000 + CONFIRM_STALL_MS)).to.equal(undefined);
    expect(watches.stuck(ch, 2_500 + CONFIRM_STALL_MS)).to.deep.equal(['b']);
  });

  it('never finds a channel stuck whose publishes were all confirmed, however long ago they went', () => {
    const watches = new ConfirmWatches();
    const ch = channel();
    const watch = watches.of(ch);
    watch.confirmed(watch.sent(0, 'a'));
    expect(watch.waitedMs(60_000)).to.equal(0);
    expect(watches.stuck(ch, 60_000)).to.equal(undefined);
  });

  it('keeps one watch per channel: another channel is not stuck for the first one', () => {
    const watches = new ConfirmWatches();
    const [one, two] = [channel(), channel()];
    watches.of(one).sent(0, 'a');
    expect(watches.of(one)).to.equal(watches.of(one));
    expect(watches.stuck(two, CONFIRM_STALL_MS)).to.equal(undefined);
    expect(watches.stuck(one, CONFIRM_STALL_MS)).to.deep.equal(['a']);
  });
});
