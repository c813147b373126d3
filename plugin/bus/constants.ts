/** Retry-After (seconds) on every 503 a transport produces: not connected, closing, no instance, not accepted. */
export const BUS_RETRY_AFTER_S = 5;

/** Announcement bytes the gateway takes off the bus per second unless announcementBytesPerSecond says. */
export const DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND = 4 * 1024 * 1024;

/** Requests a consumer holds at once when serve() is not given a prefetch (both transports). */
export const DEFAULT_PREFETCH = 16;

/**
 * Backoff of everything that retries against the broker (the connection, a channel it closed; the first start
 * waits longer between its attempts, start-with-retry.ts):
 * the first pause and the cap. Short at first, so a broker blip costs little; capped, so a broker away for long
 * costs a line and an attempt every few seconds.
 */
export const RETRY_FIRST_DELAY_MS = 100;
export const RETRY_MAX_DELAY_MS = 5_000;

/** Bytes of one reply the gateway parses unless maxReplyBytes says otherwise; a larger one is answered 502. */
export const DEFAULT_MAX_REPLY_BYTES = 1024 * 1024;

/** Nesting of objects and arrays a reply may have (the envelope included); a deeper one is answered 502 unparsed. */
export const MAX_REPLY_DEPTH = 256;
