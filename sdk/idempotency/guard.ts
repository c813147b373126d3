import type { Reply, RequestMessage } from '../../plugin/bus/transport';
import { ServiceError } from '../service-error';
import { requestFingerprint } from './fingerprint';
import type { Claim, IdempotencyId, IdempotencyStore, SqlClient } from './store';

export interface IdempotencyOptions {
  store: IdempotencyStore;
  /** How long a key is remembered from its first use. Default 24 h. */
  ttlMs?: number;
  /**
   * How long a running attempt's claim lasts unless renewed (renewed every third of it while the handler runs).
   * When an instance dies holding a request, the redelivered copy runs once this has lapsed. Default 5 s.
   */
  leaseMs?: number;
  /** How long a redelivered request waits for an attempt still running elsewhere before answering 409. Default 60 s. */
  redeliveryWaitMs?: number;
}

/** What a handler sees of its request's key (HandlerContext.idempotency). */
export interface IdempotencyScope {
  readonly key: string;
  /** The caller the key belongs to ('' for anonymous calls). */
  readonly caller: string;
  /**
   * Records `out` (what the handler is about to return) as the key's answer through `client`: call it with the
   * client of the transaction that makes the change, as its last statement, so the change and the answer commit
   * together. Throws when the claim was taken over (roll back). Without it the SDK records the answer afterwards.
   */
  record(client: SqlClient, out: unknown): Promise<void>;
}

export const DEFAULT_IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const DEFAULT_LEASE_MS = 5_000;
const DEFAULT_REDELIVERY_WAIT_MS = 60_000;
const PURGE_EVERY_MS = 60 * 60 * 1000;
const MAX_KEY_LENGTH = 255;
/** Answers a retry may get again; the others (failures, overload) are not the request's outcome, so a retry runs. */
const NOT_KEPT = new Set(['INTERNAL_ERROR', 'SERVICE_UNAVAILABLE', 'TIMEOUT', 'RATE_LIMIT_EXCEEDED']);

function isKept(reply: Reply): boolean {
  return reply.ok || !NOT_KEPT.has(reply.error.code);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Deduplicates a service's requests by (caller, Idempotency-Key): the first runs and its answer is kept; a repeat
 * with the same request gets that answer again (`replayed`), with another request 422, while the first still runs
 * 409 — except a redelivery (the instance holding it died or lost its channel), which waits for the running attempt
 * to finish or for its lease to lapse, then replays or runs.
 */
export class IdempotencyGuard {
  private readonly store: IdempotencyStore;
  private readonly ttlMs: number;
  private readonly leaseMs: number;
  private readonly redeliveryWaitMs: number;
  private lastPurge = Date.now();

  constructor(
    private readonly service: string,
    opts: IdempotencyOptions,
    private readonly onError: (err: unknown) => void,
  ) {
    this.store = opts.store;
    this.ttlMs = opts.ttlMs ?? DEFAULT_IDEMPOTENCY_TTL_MS;
    this.leaseMs = Math.max(100, opts.leaseMs ?? DEFAULT_LEASE_MS);
    this.redeliveryWaitMs = opts.redeliveryWaitMs ?? DEFAULT_REDELIVERY_WAIT_MS;
  }

  /** Runs `run` at most once per key; `toReply` turns what a handler returns into the reply envelope. */
  async run(message: RequestMessage, toReply: (out: unknown) => Reply, run: (scope: IdempotencyScope) => Promise<Reply>): Promise<Reply> {
    const key = String(message.headers.idempotencyKey);
    // The gateway sends 1-255 characters; anything else came from elsewhere on the bus and is not stored.
    if (key.length < 1 || key.length > MAX_KEY_LENGTH) return malformedKey();
    const id: IdempotencyId = { service: this.service, caller: message.headers.user?.userId ?? '', key };
    const fingerprint = requestFingerprint(message.messageType, message.input);
    this.purgeNowAndThen();
    let claim: Claim;
    try {
      claim = await this.claim(id, fingerprint, message.redelivered === true);
    } catch (err) {
      // Never run a keyed command without its key: the client retries with the same key.
      this.onError(err);
      return new ServiceError('SERVICE_UNAVAILABLE', 'The idempotency store is unavailable', { retryAfter: 1 }).toReply();
    }
    if (claim.state !== 'claimed' && claim.fingerprint !== fingerprint) return keyReused();
    if (claim.state === 'done') return { ...claim.reply, replayed: true };
    if (claim.state === 'running') return stillRunning();
    return this.runClaimed(id, claim.token, toReply, run);
  }

  private async claim(id: IdempotencyId, fingerprint: string, redelivered: boolean): Promise<Claim> {
    const request = { id, fingerprint, ttlMs: this.ttlMs, leaseMs: this.leaseMs };
    let claim = await this.store.claim(request);
    const until = Date.now() + this.redeliveryWaitMs;
    while (redelivered && claim.state === 'running' && claim.fingerprint === fingerprint && Date.now() < until) {
      await sleep(Math.min(250, this.leaseMs / 4));
      claim = await this.store.claim(request);
    }
    return claim;
  }

  private async runClaimed(id: IdempotencyId, token: string, toReply: (out: unknown) => Reply, run: (scope: IdempotencyScope) => Promise<Reply>): Promise<Reply> {
    let recorded = false;
    const scope: IdempotencyScope = {
      key: id.key,
      caller: id.caller,
      record: async (client, out) => {
        await this.store.complete(id, token, toReply(out), client);
        recorded = true;
      },
    };
    const heartbeat = setInterval(() => {
      this.store.renew(id, token, this.leaseMs).catch((err: unknown) => this.onError(err));
    }, this.leaseMs / 3);
    heartbeat.unref();
    let reply: Reply;
    try {
      reply = await run(scope);
    } finally {
      clearInterval(heartbeat);
    }
    try {
      if (!isKept(reply)) await this.store.release(id, token); // a no-op when the answer was recorded and committed
      else if (!recorded) await this.store.complete(id, token, reply);
    } catch (err) {
      // The answer stands; a retry may find the key running (409) until the lease lapses, then run again.
      this.onError(err);
    }
    return reply;
  }

  private purgeNowAndThen(): void {
    if (Date.now() - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = Date.now();
    this.store.purgeExpired().catch((err: unknown) => this.onError(err));
  }
}

function malformedKey(): Reply {
  return new ServiceError('VALIDATION_ERROR', 'The Idempotency-Key is malformed', {
    validationErrors: [{ field: 'Idempotency-Key', message: `must be 1-${MAX_KEY_LENGTH} characters` }],
  }).toReply();
}

function keyReused(): Reply {
  return new ServiceError('VALIDATION_ERROR', 'This Idempotency-Key was used with another request', {
    status: 422,
    validationErrors: [{ field: 'Idempotency-Key', message: 'was first used with another request body' }],
  }).toReply();
}

function stillRunning(): Reply {
  return new ServiceError('RESOURCE_CONFLICT', 'A request with this Idempotency-Key is still being processed', {
    conflictingField: 'Idempotency-Key',
    retryAfter: 1,
  }).toReply();
}
