import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Options } from 'amqplib';
import type { DeepCommand } from './deep-header-worker';

type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;

/** A broker client (amqplib, as an attacker has it) that sends header tables nested thousands deep. */
export interface DeepHeaderClient {
  /** Publishes `body` with headers `{ deep: {a: {a: …}} }` nested `depth` deep; resolves once the broker confirmed it. */
  publish(exchange: string, routingKey: string, body: string, depth: number, props?: Options.Publish): Promise<void>;
  /** Consumes `queue` (there already; bound to `exchange` with `bindingKey`) and answers each request with such headers, through `replyExchange`. */
  answerDeep(
    queue: string,
    exchange: string,
    bindingKey: string,
    replyExchange: string,
    depth: number,
    body: string,
  ): Promise<void>;
  close(): Promise<void>;
}

export async function deepHeaderClient(url: string): Promise<DeepHeaderClient> {
  const worker = new Worker(join(__dirname, 'deep-header-worker.js'), {
    workerData: { url },
    resourceLimits: { stackSizeMb: 64 },
  });
  const waiting = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  let next = 1;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  const ready = new Promise<void>((resolve, reject) => waiting.set(0, { resolve, reject }));
  worker.on('message', (m: { id: number; error?: string }) => {
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.error !== undefined) w?.reject(new Error(m.error));
    else w?.resolve();
  });
  worker.on('error', (err: Error) => {
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
  });
  const send = (cmd: WithoutId<DeepCommand>): Promise<void> => {
    const id = next++;
    const done = new Promise<void>((resolve, reject) => waiting.set(id, { resolve, reject }));
    worker.postMessage({ ...cmd, id });
    return done;
  };
  const close = async (): Promise<void> => {
    await Promise.race([send({ op: 'close' }).catch(() => undefined), new Promise((r) => setTimeout(r, 2000))]);
    await worker.terminate();
    await exited;
  };
  try {
    await ready;
  } catch (err) {
    await worker.terminate();
    throw err;
  }
  return {
    publish: (exchange, routingKey, body, depth, props = {}) =>
      send({ op: 'publish', exchange, routingKey, body, depth, props }),
    answerDeep: (queue, exchange, bindingKey, replyExchange, depth, body) =>
      send({ op: 'answerDeep', queue, exchange, bindingKey, replyExchange, depth, body }),
    close,
  };
}
