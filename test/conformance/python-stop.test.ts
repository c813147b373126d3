import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as amqp from 'amqplib';
import { AMQP_URL, uniquePrefix } from '../support/env';
import { deleteBusTopology } from '../support/broker';
import { startCommandProcess, type ServiceProcess } from '../support/service-process';

const ROOT = resolve(__dirname, '..', '..', '..');
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

/** Whether the work queue is there, asked on a channel of its own (a missing queue closes it). */
async function queueExists(queue: string): Promise<boolean> {
  const conn = await amqp.connect(AMQP_URL);
  try {
    const ch = await conn.createChannel();
    ch.on('error', () => undefined);
    return await ch.checkQueue(queue).then(
      () => true,
      () => false,
    );
  } finally {
    await conn.close().catch(() => undefined);
  }
}

/**
 * The Python example stops quietly beside another instance: the broker refuses to delete a work queue another
 * instance consumes (406), which is what should happen, so nothing is printed; the last instance deletes it.
 */
describe('examples/python/service.py: stopping beside another instance', function () {
  this.timeout(60_000);
  const prefix = uniquePrefix('pystop');
  const started: ServiceProcess[] = [];
  const start = async () => {
    const s = await startCommandProcess(PYTHON, [join(ROOT, 'examples', 'python', 'service.py')], {
      BUS_URL: `amqp://guest:guest@${new URL(AMQP_URL).host}`,
      BUS_PREFIX: prefix,
      SERVICE_NAME: 'catalog-service',
    });
    started.push(s);
    return s;
  };

  after(async () => {
    for (const s of started) await s.stop();
    await deleteBusTopology(AMQP_URL, prefix).catch(() => undefined);
  });

  it('the first stops with exit 0 and no error line; the last deletes the work queue', async () => {
    const first = await start();
    const second = await start();
    await first.stop();
    expect(await first.exited).to.equal(0);
    expect(first.output()).not.to.match(/PRECONDITION_FAILED|in use|bus:/);
    expect(await queueExists(`${prefix}.svc.catalog-service`)).to.equal(true);
    await second.stop();
    expect(await second.exited).to.equal(0);
    expect(second.output()).not.to.include('bus:');
    expect(await queueExists(`${prefix}.svc.catalog-service`)).to.equal(false);
  });
});
