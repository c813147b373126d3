/**
 * Slows password guessing on one account: after `maxFailures` failed logins within `windowMs`, that account's
 * logins are refused (429 RATE_LIMIT_EXCEEDED with retryAfter) until the window has passed. A success clears it.
 */
export class LoginThrottle {
  private readonly failures = new Map<string, { count: number; first: number }>();

  constructor(private readonly maxFailures = 5, private readonly windowMs = 15 * 60 * 1000) {}

  /** Seconds to wait, or 0 when a login may be tried. */
  retryAfter(account: string, now = Date.now()): number {
    const f = this.failures.get(account);
    if (!f) return 0;
    if (now - f.first >= this.windowMs) {
      this.failures.delete(account);
      return 0;
    }
    return f.count >= this.maxFailures ? Math.ceil((f.first + this.windowMs - now) / 1000) : 0;
  }

  failed(account: string, now = Date.now()): void {
    const f = this.failures.get(account);
    if (!f || now - f.first >= this.windowMs) this.failures.set(account, { count: 1, first: now });
    else f.count++;
  }

  succeeded(account: string): void {
    this.failures.delete(account);
  }
}
