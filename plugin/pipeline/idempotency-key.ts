import type { Request } from 'express';
import { GatewayError } from '../errors/gateway-error';
import { classify } from '../contracts/derive-routes';
import type { ContractKind } from '../contracts/types';

/*
 * The Idempotency-Key request header (IETF httpapi draft "The Idempotency-Key HTTP Header Field"). The draft makes
 * it a Structured Field String (`Idempotency-Key: "8e03978e-…"`); most clients send the bare token, so both forms
 * are accepted and name the same key: 1–255 characters of visible ASCII, or the same in double quotes (where a
 * space and the escapes \" and \\ are allowed too). The gateway only checks the form; the service that makes the
 * effect keeps the keys (sdk/idempotency).
 */

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
/** The response header of an answer that was recorded earlier under the same key. */
export const REPLAYED_HEADER = 'Idempotent-Replayed';
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/*
 * The one statement of the accepted forms, which the parser below and the OpenAPI document's schema both use:
 * plain, a visible ASCII character other than a quote then up to 254 more; quoted, 1-255 key characters (each a
 * space, a visible character other than " and \, or one of the escapes \" \\) between double quotes.
 */
const PLAIN_FORM = '[!#-~][!-~]{0,254}';
const QUOTED_FORM = '"(?:[ !#-\\[\\]-~]|\\\\["\\\\]){1,255}"';
export const IDEMPOTENCY_KEY_PATTERN = `^(?:${PLAIN_FORM}|${QUOTED_FORM})$`;
const FORM = new RegExp(IDEMPOTENCY_KEY_PATTERN);
const RULE = `must be 1-${MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters, optionally in double quotes`;

/** The key a header value names, or undefined when its form is wrong. */
export function parseIdempotencyKey(raw: string): string | undefined {
  if (!FORM.test(raw)) return undefined;
  return raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(["\\])/g, '$1') : raw;
}

/** Commands (whatever the method) and every POST take a key; a query read with GET does not need one. */
export function takesIdempotencyKey(method: string, messageType: string): boolean {
  return method === 'POST' || !READS.has(classify(messageType).kind);
}

const READS: ReadonlySet<ContractKind> = new Set<ContractKind>(['get', 'list', 'query']);

/**
 * The request's key, undefined when it sent none or the route does not take one; a malformed key is a 400
 * (rather than ignored: a client that believes its retry is safe must learn that it is not).
 */
export function idempotencyKeyOf(req: Request, messageType: string): string | undefined {
  const raw = req.headers['idempotency-key'];
  if (raw === undefined || !takesIdempotencyKey(req.method, messageType)) return undefined;
  const key = typeof raw === 'string' ? parseIdempotencyKey(raw) : undefined;
  if (key === undefined) {
    throw new GatewayError('VALIDATION_ERROR', `The ${IDEMPOTENCY_KEY_HEADER} header ${RULE}`, {
      details: { [IDEMPOTENCY_KEY_HEADER]: RULE },
      extra: { validationErrors: [{ field: IDEMPOTENCY_KEY_HEADER, message: RULE }] },
    });
  }
  return key;
}
