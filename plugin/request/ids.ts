import { randomBytes } from 'node:crypto';

/** Random per process, so ids of two gateway replicas never meet. */
const PROCESS_PART = randomBytes(8).toString('hex');
let counter = 0;

/**
 * A unique id for a request or a message: the process's random part and a counter. Generated on every request,
 * so it costs no entropy: randomUUID() twice per request showed up in profiles (bench/REPORT.md).
 */
export function newId(): string {
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
  return `${PROCESS_PART}-${counter.toString(36)}`;
}
