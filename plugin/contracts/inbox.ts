import { createHash } from 'node:crypto';
import type { AnnouncementOrigin } from '../bus/transport';
import type { ContractRegistry } from './registry';
import { inert, OnceLog } from '../log-once';
import type { Logger } from '../logger';
import { systemClock, type Clock, type ClockTimer } from '../clock';

/** Whose broker user may announce for a service (see docs/operations.md, "Trust on the bus"). */
export interface AnnouncerCheck {
  /** service → the broker user that must have published its announcements (RabbitMQ's validated user_id). */
  users: Readonly<Record<string, string>>;
  /** Every announcement must carry a user_id: the mapped user, or a user named like the service. */
  required: boolean;
  /** Only the services in `users` may announce (a services file lists every service there is). */
  listedOnly?: boolean;
}

export interface InboxOptions {
  /** Announcements are applied at most once per interval, as one batch (one registry change). */
  intervalMs: number;
  announcers?: AnnouncerCheck;
  logger?: Pick<Logger, 'warn'>;
  /** Distinct instances waiting for the next batch; beyond it new ones wait for the next announcement. */
  maxPending?: number;
  /**
   * Bytes of announcements waiting for the next batch, per broker user and in total; beyond either, an announcement
   * is dropped (logged) and its service's next announcement tried again. Unset: unbounded.
   */
  pendingBudget?: { perUserBytes: number; totalBytes: number };
  /** Time and timers of the batching; the system's by default. */
  clock?: Clock;
}

interface Waiting {
  input: unknown;
  hash: string | undefined;
  /** The broker user the budget charges it to, when broker users are required; undefined: its service's budget. */
  userId: string | undefined;
  /** That budget, as log lines name it. */
  account: string;
  bytes: number;
}

/** How a refusal for trust begins, so the refusal metric sorts it as `not_trusted` (observability/refusals.ts). */
const NOT_TRUSTED = 'not trusted: ';

const DEFAULT_MAX_PENDING = 10_000;
/** Announcements applied in one batch at most; the rest wait for the next one. */
const MAX_BATCH = 500;
/**
 * Bytes (on the wire) applied in one batch at most, beyond its first announcement: validating is about 50 ms per MB
 * and runs in one go, so a batch of full-size announcements holds the event loop (and /health) for a bounded time.
 */
const MAX_BATCH_BYTES = 1024 * 1024;
/**
 * Applying a batch runs the registry's change listeners (validators compiled, documents rebuilt) synchronously: the
 * next batch waits at least this many times as long as the last one took, so announcements never take more than
 * about a fifth of the gateway's time, whatever the listeners cost.
 */
const BUSY_FACTOR = 4;

/** Why the broker user that published an announcement may not announce for its service; undefined when it may. */
export function announcerProblem(
  service: string,
  origin: AnnouncementOrigin,
  check: AnnouncerCheck | undefined,
): string | undefined {
  const mapped = Object.hasOwn(check?.users ?? {}, service) ? check?.users[service] : undefined;
  if (mapped === undefined && check?.listedOnly) return `${service} is not a service of the services file`;
  if (mapped === undefined && !check?.required) return undefined;
  const expected = mapped ?? service;
  if (origin.userId === undefined)
    return `it carries no broker user (user_id); ${service} announces as broker user ${expected}`;
  if (origin.userId !== expected)
    return `broker user ${origin.userId} may not announce for ${service} (expected ${expected})`;
  return undefined;
}

/**
 * The digest and size of an announcement handed over without them (in-process); an undefined digest when it cannot
 * be serialised.
 */
function measure(input: unknown, origin: AnnouncementOrigin): { digest: string | undefined; bytes: number } {
  if (origin.digest !== undefined && origin.bytes !== undefined) return { digest: origin.digest, bytes: origin.bytes };
  try {
    const text = JSON.stringify(input);
    return {
      digest: origin.digest ?? createHash('sha1').update(text).digest('base64'),
      bytes: origin.bytes ?? Buffer.byteLength(text),
    };
  } catch {
    return { digest: origin.digest, bytes: origin.bytes ?? 0 }; // e.g. nested too deep: the registry refuses it anyway
  }
}

/**
 * Between the bus and the registry: bursts of announcements become one registry change per interval (the latest
 * announcement of each instance wins), and an instance re-announcing exactly what the registry holds for it only
 * renews its lease. A flood of changing announcements therefore costs one rebuild (and at most one config write)
 * per interval (longer when applying took long: see BUSY_FACTOR), however fast it comes.
 */
export class AnnouncementInbox {
  private readonly pending = new Map<string, Waiting>();
  /** instance key → hash of its last accepted announcement, for the renew-only path. */
  private readonly accepted = new Map<string, string>();
  /** Bytes waiting, per budget (`broker user U`, or `service S` when users are not required) and in total. */
  private readonly pendingByUser = new Map<string, number>();
  private pendingBytes = 0;
  private timer: ClockTimer | undefined;
  private nextFlushAt = 0;
  private stopped = false;
  private readonly log: OnceLog;
  private readonly clock: Clock;

  constructor(
    private readonly registry: ContractRegistry,
    private readonly opts: InboxOptions,
  ) {
    this.log = new OnceLog(opts.logger);
    this.clock = opts.clock ?? systemClock;
  }

  /** One announcement as it came off the bus (an object naming a service; the registry checks the rest). */
  offer(input: unknown, origin: AnnouncementOrigin = {}): void {
    if (this.stopped || !input || typeof input !== 'object') return;
    const { service, instanceId } = input as { service?: unknown; instanceId?: unknown };
    if (typeof service !== 'string' || typeof instanceId !== 'string') {
      this.registry.apply(input); // refused there, with the reason logged
      return;
    }
    const problem = announcerProblem(service, origin, this.opts.announcers);
    if (problem) {
      this.log.warn(
        JSON.stringify([service, origin.userId, 'announcer']),
        `refused announcement for service ${inert(service)} instance ${inert(instanceId)}: ${inert(problem, 200)}`,
      );
      this.registry.refuse(`${NOT_TRUSTED}${problem}`);
      return;
    }
    const key = JSON.stringify([service, instanceId]);
    const { digest: hash, bytes } = measure(input, origin);
    if (
      hash !== undefined &&
      !this.pending.has(key) &&
      this.accepted.get(key) === hash &&
      this.registry.renew(service, instanceId)
    )
      return;
    if (!this.pending.has(key) && this.pending.size >= (this.opts.maxPending ?? DEFAULT_MAX_PENDING)) {
      this.log.warn(
        'inbox-full',
        `announcements: more than ${this.opts.maxPending ?? DEFAULT_MAX_PENDING} instances waiting; later ones wait for their next announcement`,
      );
      return;
    }
    // A required broker user is one service's; a shared one tells nobody apart, so then each service has its own budget.
    const userId = this.opts.announcers?.required ? origin.userId : undefined;
    const account = userId !== undefined ? `broker user ${inert(userId)}` : `service ${inert(service)}`;
    const full = this.overPendingBudget(key, account, bytes);
    if (full) {
      this.log.warn(
        JSON.stringify([account, 'pending']),
        `refused announcement for service ${inert(service)} instance ${inert(instanceId)}: ${full}`,
      );
      return;
    }
    this.unqueue(key);
    this.pending.set(key, { input, hash, userId, account, bytes });
    this.pendingBytes += bytes;
    this.pendingByUser.set(account, (this.pendingByUser.get(account) ?? 0) + bytes);
    this.schedule();
  }

  /** Why `bytes` more for this budget may not wait (the one it replaces counted out), or undefined. */
  private overPendingBudget(key: string, account: string, bytes: number): string | undefined {
    const budget = this.opts.pendingBudget;
    if (!budget) return undefined;
    const replaced = this.pending.get(key);
    const userBytes =
      (this.pendingByUser.get(account) ?? 0) - (replaced?.account === account ? replaced.bytes : 0) + bytes;
    if (userBytes > budget.perUserBytes) {
      return `${account} has ${userBytes} bytes waiting, over ${budget.perUserBytes} (announcementRetainedBytesPerUser)`;
    }
    if (this.pendingBytes - (replaced?.bytes ?? 0) + bytes > budget.totalBytes)
      return `announcements waiting are over ${budget.totalBytes} bytes (announcementRetainedBytesTotal)`;
    return undefined;
  }

  /** Takes an instance's waiting announcement out of the queue and its byte counts. */
  private unqueue(key: string): Waiting | undefined {
    const waiting = this.pending.get(key);
    if (!waiting) return undefined;
    this.pending.delete(key);
    this.pendingBytes -= waiting.bytes;
    const user = waiting.account;
    const left = (this.pendingByUser.get(user) ?? 0) - waiting.bytes;
    if (left > 0) this.pendingByUser.set(user, left);
    else this.pendingByUser.delete(user);
    return waiting;
  }

  /** Applies what is waiting now, up to MAX_BATCH instances (tests call it to make a batch by hand). */
  flush(): void {
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    const started = this.clock.now();
    const keys = this.nextBatch();
    if (keys.length > 0) {
      const waiting = keys.map((k) => this.unqueue(k) as Waiting);
      const { accepted } = this.registry.applyAll(
        waiting.map((w) => w.input),
        waiting.map((w) => (w.userId !== undefined ? { userId: w.userId } : {})),
      );
      keys.forEach((key, i) => {
        const withdrawn = ((waiting[i] as Waiting).input as { withdrawn?: unknown }).withdrawn === true;
        const hash = (waiting[i] as Waiting).hash;
        if (accepted[i] && !withdrawn && hash !== undefined) this.accepted.set(key, hash);
        else if (accepted[i]) this.accepted.delete(key);
      });
      // Instances the registry no longer holds (expired, evicted) need no hash.
      if (this.accepted.size > this.registry.instances().length * 2 + 64) this.prune();
    }
    const now = this.clock.now();
    this.nextFlushAt = now + Math.max(this.opts.intervalMs, (now - started) * BUSY_FACTOR);
    if (this.pending.size > 0) this.schedule();
  }

  /** The instances of the next batch, oldest first: at most MAX_BATCH, and MAX_BATCH_BYTES after the first. */
  private nextBatch(): string[] {
    const keys: string[] = [];
    let bytes = 0;
    for (const [key, waiting] of this.pending) {
      if (keys.length >= MAX_BATCH || (keys.length > 0 && bytes + waiting.bytes > MAX_BATCH_BYTES)) break;
      keys.push(key);
      bytes += waiting.bytes;
    }
    return keys;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
    this.pendingByUser.clear();
    this.pendingBytes = 0;
  }

  private schedule(): void {
    if (this.timer) return;
    const wait = Math.max(0, this.nextFlushAt - this.clock.now());
    this.timer = this.clock.setTimeout(() => this.flush(), wait);
    this.timer.unref();
  }

  private prune(): void {
    const live = new Set(this.registry.instances().map((i) => JSON.stringify([i.service, i.instanceId])));
    for (const key of this.accepted.keys()) if (!live.has(key)) this.accepted.delete(key);
  }
}
