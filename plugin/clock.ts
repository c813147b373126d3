/** A timer as the clock hands it out; unref() lets the process exit while it is pending. */
export interface ClockTimer {
  unref(): unknown;
}

/**
 * Time and timers, injected where pacing is decided (ConfigSync, AnnouncementInbox) so their tests move time by
 * hand instead of waiting for it.
 */
export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
};
