/**
 * A byte allowance per second (a token bucket holding at most one second's worth). take() spends a message's bytes
 * and answers how long (ms) until the allowance is back in credit; a consumer that acks only after that wait is
 * held to the allowance by the broker's prefetch.
 */
export class ByteBudget {
  private tokens: number;
  private last: number;

  constructor(
    private readonly bytesPerSecond: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = bytesPerSecond;
    this.last = now();
  }

  take(bytes: number): number {
    const now = this.now();
    this.tokens = Math.min(this.bytesPerSecond, this.tokens + ((now - this.last) * this.bytesPerSecond) / 1000);
    this.last = now;
    this.tokens -= bytes;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / this.bytesPerSecond);
  }
}
