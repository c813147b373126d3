import { randomBytes, randomUUID } from 'node:crypto';

/** Random per process, so ids of two gateway replicas never meet. */
const PROCESS_PART = randomBytes(8).toString('hex');
let counter = 0;

/**
 * A unique id for a bus message (internal: the reply is matched by it): the process's random part and a counter,
 * so it costs no entropy.
 */
export function newId(): string {
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
  return `${PROCESS_PART}-${counter.toString(36)}`;
}

/**
 * A generated X-Correlation-Id or X-Request-Id: a random UUID (v4), as documented, so clients and log tools can
 * rely on the format. Node serves them from a cached entropy batch, cheap enough for two per request.
 */
export function newTraceId(): string {
  return randomUUID();
}
