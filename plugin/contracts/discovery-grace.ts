/**
 * Whether the gateway has heard the bus long enough to take a route it does not know as final. Right after a start
 * or a reconnect the registry may be incomplete: the services answer the discovery request within moments, and
 * their routes reach the host shortly after. Until `graceMs` after the gateway asked them, a route it does not know
 * is answered 503 with Retry-After (noHandler in plugin/pipeline/resolve-contract.ts), not a 404 that a client
 * would take as final.
 */
export class DiscoveryGrace {
  /** When the gateway last asked every service to announce, since the bus came up; undefined: not yet. */
  private askedAt?: number;

  constructor(
    private readonly graceMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The bus is not up: once it is back, what it brings must be heard again. */
  lost(): void {
    this.askedAt = undefined;
  }

  /** The gateway listens for announcements and has asked every service to announce (or tried to). */
  asked(): void {
    this.askedAt ??= this.now();
  }

  /** Milliseconds until a route not known is final: 0 once the grace has passed (or with no grace at all). */
  remainingMs(): number {
    if (this.graceMs === 0) return 0;
    if (this.askedAt === undefined) return this.graceMs;
    return Math.max(0, this.askedAt + this.graceMs - this.now());
  }
}
