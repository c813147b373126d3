import { randomUUID } from 'node:crypto';
import type { Reply, RequestMessage } from '../../plugin/bus/transport';
import { ServiceError } from '../service-error';
import { requestFingerprint } from './fingerprint';
import { beforeDeadline, outsideRequest } from '../deadline';
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
/** How often claims whose release failed are released again, and how many are remembered for it. */
const RELEASE_RETRY_MS = 500;
const MAX_UNRELEASED = 1000;
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
  private readonly unreleased = new Map<string, { id: IdempotencyId; token: string; until?: number }>();
  private releaseTimer: NodeJS.Timeout | undefined;
  private releasing = false;

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
  async run(
    message: RequestMessage,
    toReply: (out: unknown) => Reply,
    run: (scope: IdempotencyScope) => Promise<Reply>,
  ): Promise<Reply> {
    const key = String(message.headers.idempotencyKey);
    // The gateway sends 1-255 characters; anything else came from elsewhere on the bus and is not stored.
    if (key.length < 1 || key.length > MAX_KEY_LENGTH) return malformedKey();
    const id: IdempotencyId = { service: this.service, caller: message.headers.user?.userId ?? '', key };
    const fingerprint = requestFingerprint(message.messageType, message.input);
    this.purgeNowAndThen();
    let claim: Claim;
    const token = randomUUID();
    try {
      // A store that hangs must not hold the request past its deadline: the caller gets a 503 it can retry.
      claim = await beforeDeadline(
        this.releaseAbandoned(id).then(() => this.claim(id, fingerprint, token, message.redelivered === true)),
      );
    } catch (err) {
      // The claim may have been taken all the same (its answer lost, or its statement still on its way).
      this.abandoned(id, token, err);
      // Never run a keyed command without its key: the client retries with the same key.
      return new ServiceError('SERVICE_UNAVAILABLE', 'The idempotency store is unavailable', {
        retryAfter: 1,
      }).toReply();
    }
    if (claim.state !== 'claimed' && claim.fingerprint !== fingerprint) return keyReused();
    if (claim.state === 'done') return { ...claim.reply, replayed: true };
    if (claim.state === 'running') return stillRunning();
    return this.runClaimed(id, claim.token, toReply, run);
  }

  private async claim(id: IdempotencyId, fingerprint: string, token: string, redelivered: boolean): Promise<Claim> {
    const request = { id, fingerprint, ttlMs: this.ttlMs, leaseMs: this.leaseMs, token };
    let claim = await this.store.claim(request);
    const until = Date.now() + this.redeliveryWaitMs;
    while (redelivered && claim.state === 'running' && claim.fingerprint === fingerprint && Date.now() < until) {
      await sleep(Math.min(250, this.leaseMs / 4));
      claim = await this.store.claim(request);
    }
    return claim;
  }

  private async runClaimed(
    id: IdempotencyId,
    token: string,
    toReply: (out: unknown) => Reply,
    run: (scope: IdempotencyScope) => Promise<Reply>,
  ): Promise<Reply> {
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
    if (!isKept(reply)) {
      // A no-op when the answer was recorded and committed.
      await beforeDeadline(this.store.release(id, token)).catch((err: unknown) => this.abandoned(id, token, err));
      return reply;
    }
    try {
      if (!recorded) await beforeDeadline(this.store.complete(id, token, reply));
    } catch (err) {
      // The answer stands; a retry may find the key running (409) until the lease lapses, then run again.
      this.onError(err);
    }
    return reply;
  }

  /**
   * A claim this instance may hold but could not release, or whose taking it never heard of (the store was
   * unreachable or stalled, which is often what the request was answered for): it is released again every half second,
   * and before the next attempt with its key, so that a retry once the store is back runs at once instead of finding
   * the key running (409) until its lease lapses. A stalled statement may still land when the store comes back, so the
   * releases go on for a lease after the first one that went through.
   */
  private abandoned(id: IdempotencyId, token: string, err: unknown): void {
    this.onError(err);
    if (this.unreleased.size >= MAX_UNRELEASED) return; // the lease frees the rest
    this.unreleased.set(nameOf(id), { id, token });
    if (this.releaseTimer) return;
    // Not on this request's clock: the retries go on after its deadline.
    this.releaseTimer = outsideRequest(() => setInterval(() => void this.releaseAll(), RELEASE_RETRY_MS));
    this.releaseTimer.unref();
  }

  /** One release after the other, and none after the first that fails: a store that is still away gets one a tick. */
  private async releaseAll(): Promise<void> {
    if (this.releasing) return;
    this.releasing = true;
    try {
      for (const { id } of [...this.unreleased.values()]) await this.releaseAbandoned(id);
    } catch {
      // Still unreachable: the next tick tries again.
    } finally {
      this.releasing = false;
      if (this.unreleased.size === 0 && this.releaseTimer) {
        clearInterval(this.releaseTimer);
        this.releaseTimer = undefined;
      }
    }
  }

  private async releaseAbandoned(id: IdempotencyId): Promise<void> {
    const name = nameOf(id);
    const entry = this.unreleased.get(name);
    if (!entry) return;
    await this.store.release(entry.id, entry.token);
    entry.until ??= Date.now() + this.leaseMs;
    if (Date.now() >= entry.until && this.unreleased.get(name) === entry) this.unreleased.delete(name);
  }

  private purgeNowAndThen(): void {
    if (Date.now() - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = Date.now();
    outsideRequest(() => this.store.purgeExpired()).catch((err: unknown) => this.onError(err));
  }
}

function nameOf(id: IdempotencyId): string {
  return JSON.stringify([id.service, id.caller, id.key]);
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
