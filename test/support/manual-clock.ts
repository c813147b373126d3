import type { Clock, ClockTimer } from '../../plugin/clock';

interface Pending {
  at: number;
  callback: () => void;
  cancelled: boolean;
}

/** A clock whose time moves only when a test says so: advance() runs the timers that fall due, in order. */
export class ManualClock implements Clock {
  private time = 1_000_000;
  private readonly pending: Pending[] = [];

  now(): number {
    return this.time;
  }

  setTimeout(callback: () => void, ms: number): ClockTimer {
    const timer: Pending = { at: this.time + Math.max(0, ms), callback, cancelled: false };
    this.pending.push(timer);
    return Object.assign(timer, { unref: () => timer });
  }

  clearTimeout(timer: ClockTimer): void {
    (timer as unknown as Pending).cancelled = true;
  }

  /** Timers waiting to run. */
  waiting(): number {
    return this.pending.filter((t) => !t.cancelled).length;
  }

  /** Moves time forward without running anything (work that took that long). */
  pass(ms: number): void {
    this.time += ms;
  }

  /** Moves time forward by `ms`, running each timer when its time comes (timers they set included). */
  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      const next = this.pending.filter((t) => !t.cancelled && t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.pending.splice(this.pending.indexOf(next), 1);
      this.time = Math.max(this.time, next.at);
      next.callback();
    }
    this.time = Math.max(this.time, until);
  }
}
