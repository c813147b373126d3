/**
 * A test service in its own process (instance-death and fault tests): `POST /api/entries {"name"}` waits DELAY_MS,
 * then writes the entry and its idempotency answer in one PostgreSQL transaction. Keys live in a PgIdempotencyStore
 * shared by every instance (DATABASE_URL). Prints `run <key>` when a handler starts, so a test can see who holds what.
 */
import { Pool } from 'pg';
import { createTransport } from '../../plugin/bus';
import { answer, PgIdempotencyStore, serve, stopOnSignals } from '../../sdk';

async function main(): Promise<void> {
  const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
  const store = new PgIdempotencyStore(pool);
  const delayMs = Number(process.env.DELAY_MS ?? 0);
  const transport = createTransport({ url: process.env.BUS_URL, prefix: process.env.BUS_PREFIX });
  await transport.start();
  const running = await serve({
    transport,
    service: 'ledger-service',
    prefetch: Number(process.env.PREFETCH ?? 16),
    idempotency: { store, leaseMs: Number(process.env.LEASE_MS ?? 5000) },
    operations: [
      {
        contract: {
          messageType: 'CreateEntryCommand',
          inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
          outputSchema: { type: 'object' },
          requiredPermissions: ['entries:create'],
        },
        handle: async (input, ctx) => {
          console.log(`run ${ctx.idempotency?.key ?? '-'}`);
          await new Promise((r) => setTimeout(r, delayMs));
          const client = await pool.connect();
          try {
            await client.query('BEGIN');
            const { rows } = await client.query<{ id: number }>(
              'INSERT INTO entries (name, idem_key, pid) VALUES ($1, $2, $3) RETURNING id',
              [input.name, ctx.idempotency?.key ?? null, process.pid],
            );
            const id = String(rows[0].id);
            const out = answer({ id, name: input.name, pid: process.pid }, { location: `/api/entries/${id}` });
            await ctx.idempotency?.record(client, out);
            await client.query('COMMIT');
            return out;
          } catch (err) {
            await client.query('ROLLBACK').catch(() => undefined);
            throw err;
          } finally {
            client.release();
          }
        },
      },
    ],
  });
  stopOnSignals(running, transport, { drainMs: 200, log: (m) => console.log(`[ledger-service] ${m}`) });
  console.log('[ledger-service] ready');
}

main().catch((err) => {
  console.error(`[ledger-service] start failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
