import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, type RunningService } from '../../sdk';

/**
 * A service with one list route, `GET /api/<noun>` (`List<Noun>Query`, permission `<noun>:read`, an empty list),
 * on its own AMQP transport to `busUrl`; the SDK's default lease unless `ttlMs` says otherwise. Stop it with
 * `stopListService`.
 */
export async function startListService(
  busUrl: string,
  prefix: string,
  noun: string,
  ttlMs?: number,
): Promise<{ transport: AmqpTransport; service: RunningService }> {
  const transport = new AmqpTransport(busUrl, { prefix });
  await transport.start();
  try {
    const service = await serve({
      transport,
      service: `${noun}-service`,
      ttlMs,
      operations: [
        {
          contract: {
            messageType: `List${noun[0]!.toUpperCase()}${noun.slice(1)}Query`,
            inputSchema: { type: 'object' },
            outputSchema: { type: 'object' },
            requiredPermissions: [`${noun}:read`],
          },
          handle: () => ({ [noun]: [] }),
        },
      ],
    });
    return { transport, service };
  } catch (err) {
    await transport.close().catch(() => undefined);
    throw err;
  }
}

/** Withdraws the service's contracts and closes its transport; never throws. */
export async function stopListService(
  s: { transport: AmqpTransport; service: RunningService } | undefined,
): Promise<void> {
  await s?.service.stop().catch(() => undefined);
  await s?.transport.close().catch(() => undefined);
}
