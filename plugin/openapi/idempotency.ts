import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PATTERN,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  REPLAYED_HEADER,
} from '../pipeline/idempotency-key';
import type { ParameterObject } from './parameters';
import { FRESH_IDEMPOTENCY_KEY } from './examples';

/** The Idempotency-Key header parameter of every operation that takes one (commands and POSTs). */
export const IDEMPOTENCY_KEY_PARAMETER: ParameterObject = {
  name: IDEMPOTENCY_KEY_HEADER,
  in: 'header',
  required: false,
  description:
    `Makes a retry of this request safe (IETF httpapi draft "The Idempotency-Key HTTP Header Field"): 1-${MAX_IDEMPOTENCY_KEY_LENGTH} ` +
    'visible ASCII characters, optionally in double quotes; a fresh random value (a UUID) per operation, reused only for ' +
    'its retries. Another form is answered 400. A service that keeps keys answers a repeat with the same body with the ' +
    `first answer (status, body, Location) and \`${REPLAYED_HEADER}: true\`, without running it again; the same key with ` +
    'another body is 422, a repeat while the first is still running is 409 (retry after `Retry-After`). Keys are kept 24 h; ' +
    'answers that carry credentials (logins) are not kept, so those requests are not deduplicated.',
  // The gateway's own rule (the pattern it parses with). maxLength leaves out only quoted keys of 254-255 characters.
  schema: { type: 'string', minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH, pattern: IDEMPOTENCY_KEY_PATTERN },
  example: FRESH_IDEMPOTENCY_KEY,
};
