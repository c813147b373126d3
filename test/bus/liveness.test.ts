import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import type { ChannelModel } from 'amqplib';
import { dropWhenSilent } from '../../plugin/bus/amqp/liveness';

/** Just what dropWhenSilent reads of amqplib's connection: its heartbeat and socket. */
function fakeModel(heartbeat: number) {
  const destroyed: string[] = [];
  const connection = {
    heartbeat,
    stream: { bytesRead: 0, destroy: (err?: Error) => destroyed.push(err?.message ?? '') },
  };
  const model = Object.assign(new EventEmitter(), { connection }) as unknown as ChannelModel;
  return { model, connection, destroyed };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a connection that hears nothing for a whole heartbeat is dropped', function () {
  this.timeout(10_000);

  it('drops a silent connection after one heartbeat, once, and says for how long', async () => {
    const { model, destroyed } = fakeModel(1);
    const told: number[] = [];
    dropWhenSilent(model, (ms) => told.push(ms));
    await sleep(900);
    expect(destroyed, 'not before a whole heartbeat').to.deep.equal([]);
    await sleep(1300);
    expect(told).to.have.length(1);
    expect(told[0]).to.be.at.least(1000);
    expect(destroyed).to.have.length(1);
    expect(destroyed[0]).to.match(/^no frame from the broker for \d+ ms$/);
    model.emit('close');
  });

  it('keeps a connection that receives frames, and one without heartbeats', async () => {
    const live = fakeModel(1);
    const beats = setInterval(() => {
      live.connection.stream.bytesRead += 8;
    }, 200);
    const off = fakeModel(0);
    dropWhenSilent(live.model, () => undefined);
    dropWhenSilent(off.model, () => undefined);
    try {
      await sleep(2500);
      expect(live.destroyed).to.deep.equal([]);
      expect(off.destroyed).to.deep.equal([]);
    } finally {
      clearInterval(beats);
      live.model.emit('close');
    }
  });

  it('stops watching once the connection closes', async () => {
    const { model, destroyed } = fakeModel(1);
    dropWhenSilent(model, () => undefined);
    model.emit('close');
    await sleep(1800);
    expect(destroyed).to.deep.equal([]);
  });
});
