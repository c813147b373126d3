import type { HandlerContext } from '../../sdk';
import type { Database, SqlClient } from './database';

/**
 * Runs a command's change in one transaction and, when the request carries an Idempotency-Key, records the answer
 * as its last statement: both commit or neither does, so a crash cannot keep a change whose answer a retry would
 * not find (and run again), nor an answer whose change is gone. Everything `change` reads or writes goes through
 * `tx` (the embedded database runs one transaction at a time: a query outside it would wait for it forever).
 */
export function changeWithAnswer<T>(
  db: Database,
  ctx: HandlerContext | undefined,
  change: (tx: SqlClient) => Promise<T>,
): Promise<T> {
  return db.transaction(async (tx) => {
    const out = await change(tx);
    await ctx?.idempotency?.record(tx, out);
    return out;
  });
}
