import * as amqp from 'amqplib';

/** Deletes the exchanges a test run's prefix made, so runs leave nothing behind on the shared broker. */
export async function deleteBusTopology(url: string, prefix: string): Promise<void> {
  // A cluster's BUS_URL lists every node: any one of them will do.
  const conn = await amqp.connect(url.split(',')[0]!);
  try {
    for (const name of [`${prefix}.requests`, `${prefix}.discovery`, `${prefix}.replies`, `${prefix}.announcements`]) {
      const ch = await conn.createChannel();
      ch.on('error', () => undefined);
      await ch.deleteExchange(name).catch(() => undefined);
      await ch.close().catch(() => undefined);
    }
  } finally {
    await conn.close().catch(() => undefined);
  }
}

/**
 * Deletes the work queues of these services under a prefix (they outlive their consumers for a while: x-expires), and
 * their own announcement and reply exchanges.
 */
export async function deleteWorkQueues(url: string, prefix: string, services: string[]): Promise<void> {
  const conn = await amqp.connect(url);
  try {
    for (const service of services) {
      const ch = await conn.createChannel();
      ch.on('error', () => undefined);
      await ch.deleteQueue(`${prefix}.svc.${service}`).catch(() => undefined);
      await ch.deleteExchange(`${prefix}.announcements.${service}`).catch(() => undefined);
      await ch.deleteExchange(`${prefix}.replies.${service}`).catch(() => undefined);
      await ch.close().catch(() => undefined);
    }
  } finally {
    await conn.close().catch(() => undefined);
  }
}
