import type { Reply } from '../../plugin/bus/transport';

/**
 * What the PostgreSQL store needs from a database client: pg's Pool and PoolClient and PGlite all fit, so the store
 * can write with the client of the handler's own transaction.
 */
export interface SqlClient {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>;
}

/** One key: keys are kept per service and per caller (the gateway's user id; '' for anonymous calls). */
export interface IdempotencyId {
  service: string;
  caller: string;
  key: string;
}

export interface ClaimRequest {
  id: IdempotencyId;
  /** The request the key was first used with (message type and input). */
  fingerprint: string;
  /** How long the key is remembered from its first use. */
  ttlMs: number;
  /** How long the claim of a running attempt lasts unless renewed. */
  leaseMs: number;
  /**
   * The token the claim gets when it is taken (a new one when absent): a caller that never got the answer (the store
   * stalled, the connection dropped) can still release the claim it may have taken.
   */
  token?: string;
}

/**
 * What claim() found: `claimed` — this attempt runs (no live record, an expired one, or a running one whose lease
 * lapsed: its instance died); `done` — answered before; `running` — another attempt holds a live lease.
 */
export type Claim =
  | { state: 'claimed'; token: string }
  | { state: 'done'; fingerprint: string; reply: Reply }
  | { state: 'running'; fingerprint: string };

/**
 * Where a service keeps its idempotency keys: in memory (one instance, tests) or in PostgreSQL (shared by every
 * instance, and written in the handler's transaction). Every write of a running attempt names its claim's token, so
 * an attempt whose lease was taken over can no longer record or release anything.
 */
export interface IdempotencyStore {
  claim(request: ClaimRequest): Promise<Claim>;
  /** Extends a running claim's lease; false when the claim is no longer this token's. */
  renew(id: IdempotencyId, token: string, leaseMs: number): Promise<boolean>;
  /**
   * Records the answer of a running claim. With `client`, the write goes through it: pass the client of the
   * transaction that made the change, so both commit or neither does. Throws IdempotencyClaimLost when the claim
   * is no longer this token's (the transaction must then roll back).
   */
  complete(id: IdempotencyId, token: string, reply: Reply, client?: SqlClient): Promise<void>;
  /** Forgets a running claim (its attempt failed without an answer worth keeping): a retry runs again. */
  release(id: IdempotencyId, token: string): Promise<void>;
  /** Deletes expired keys; returns how many. */
  purgeExpired(): Promise<number>;
}

export class IdempotencyClaimLost extends Error {
  constructor() {
    super('The idempotency claim was taken over by another attempt');
    this.name = 'IdempotencyClaimLost';
  }
}
