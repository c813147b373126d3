import * as amqp from 'amqplib';

/** A publisher on the discovery exchange written with amqplib alone: what anyone with broker credentials can do. */
export interface RoguePublisher {
  /** Publishes to `P.discovery`; an object body is sent as JSON. Resolves once the broker confirmed it. */
  publish(routingKey: string, body: unknown, props?: amqp.Options.Publish): Promise<void>;
  close(): Promise<void>;
}

export async function roguePublisher(url: string, prefix: string): Promise<RoguePublisher> {
  const conn = await amqp.connect(url);
  const ch = await conn.createConfirmChannel();
  return {
    async publish(routingKey, body, props = {}) {
      const content = Buffer.isBuffer(body)
        ? body
        : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
      ch.publish(`${prefix}.discovery`, routingKey, content, { contentType: 'application/json', ...props });
      await ch.waitForConfirms();
    },
    async close() {
      await conn.close().catch(() => undefined);
    },
  };
}

/** A contract as a rogue would announce it. */
export function rogueContract(
  messageType: string,
  targetService: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    messageType,
    targetService,
    inputSchema: { type: 'object' },
    outputSchema: { type: 'object' },
    requiredPermissions: [],
    ...extra,
  };
}
