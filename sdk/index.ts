export { serve, answer } from './serve';
export type { Operation, Handler, HandlerContext, ServeOptions, RunningService, Answer } from './serve';
export { operation, type TypedContract, type TypedHandler, type InputOf, type OutputOf } from './operation';
export { ServiceError } from './service-error';
export { stopOnSignals, type StopOnSignalsOptions } from './stop-on-signals';
export { createTransport } from '../plugin/bus';
export { MemoryIdempotencyStore } from './idempotency/memory-store';
export {
  PgIdempotencyStore,
  idempotencyMigration,
  idempotencyMigrationStatements,
  DEFAULT_IDEMPOTENCY_TABLE,
} from './idempotency/pg-store';
export { IdempotencyClaimLost } from './idempotency/store';
export type { IdempotencyStore, SqlClient, Claim, ClaimRequest, IdempotencyId } from './idempotency/store';
export type { IdempotencyOptions, IdempotencyScope } from './idempotency/guard';
export { DEFAULT_IDEMPOTENCY_TTL_MS } from './idempotency/guard';
export { requestTimeLeft, beforeDeadline, DeadlineReached, REPLY_MARGIN_MS } from './deadline';
