import type { Reply } from './transport';

/** Whether a value has the shape of the reply envelope (docs/bus-protocol.md "Replies"). */
export function isReply(value: unknown): value is Reply {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  const r = value as { ok?: unknown; error?: unknown };
  if (r.ok === true) return true;
  if (r.ok !== false || !r.error || typeof r.error !== 'object') return false;
  return typeof (r.error as { code?: unknown }).code === 'string';
}

/** The reply that stands in for a failed handler or a malformed reply: the code only, the cause stays in the log. */
export function internalErrorReply(): Reply {
  return { ok: false, error: { code: 'INTERNAL_ERROR' } };
}
