import { parentPort, workerData } from 'node:worker_threads';
import * as amqp from 'amqplib';

/*
 * The attacker's side of test/support/deep-headers.ts, in a worker thread with a large stack: amqplib encodes a
 * header table recursively too, and a table nested thousands deep needs more stack than a thread has by default.
 */

export type DeepCommand =
  | {
      id: number;
      op: 'publish';
      exchange: string;
      routingKey: string;
      body: string;
      props: amqp.Options.Publish;
      depth: number;
    }
  | {
      id: number;
      op: 'answerDeep';
      queue: string;
      exchange: string;
      bindingKey: string;
      replyExchange: string;
      depth: number;
      body: string;
    }
  | { id: number; op: 'close' };

function nested(depth: number): Record<string, unknown> {
  let table: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) table = { a: table };
  return table;
}

async function main(): Promise<void> {
  const { url } = workerData as { url: string };
  const conn = await amqp.connect(url);
  const ch = await conn.createConfirmChannel();
  ch.on('error', () => undefined);
  const port = parentPort!;
  port.on('message', (cmd: DeepCommand) => {
    const done = (error?: unknown) =>
      port.postMessage({
        id: cmd.id,
        error: error === undefined ? undefined : String(error instanceof Error ? error.message : error),
      });
    void (async () => {
      if (cmd.op === 'publish') {
        ch.publish(cmd.exchange, cmd.routingKey, Buffer.from(cmd.body), {
          ...cmd.props,
          headers: { deep: nested(cmd.depth) },
        });
        await ch.waitForConfirms();
      } else if (cmd.op === 'answerDeep') {
        // A service's own work queue (the broker definitions declared it): every request is answered with a reply
        // whose headers nest `depth` deep.
        await ch.checkQueue(cmd.queue);
        await ch.bindQueue(cmd.queue, cmd.exchange, cmd.bindingKey);
        await ch.consume(cmd.queue, (msg) => {
          if (!msg) return;
          const replyTo = msg.properties.replyTo as string | undefined;
          if (replyTo) {
            ch.publish(cmd.replyExchange, replyTo, Buffer.from(cmd.body), {
              correlationId: msg.properties.correlationId,
              userId: decodeURIComponent(new URL(url).username),
              headers: { deep: nested(cmd.depth) },
            });
          }
          ch.ack(msg);
        });
      } else {
        await conn.close().catch(() => undefined);
      }
    })().then(() => done(), done);
  });
  port.postMessage({ id: 0 });
}

main().catch((err: unknown) =>
  parentPort!.postMessage({ id: 0, error: String(err instanceof Error ? err.message : err) }),
);
