/**
 * The `reason` label of a refused announcement: the registry's reasons are sentences naming indexes and message
 * types, so each is sorted into one of a few fixed kinds. A new kind of refusal gets a line here; an unknown one is
 * counted as `other` (and its sentence is in the log).
 */
const KINDS: ReadonlyArray<readonly [kind: string, pattern: RegExp]> = [
  // First: the inbox's trust refusals quote a service name, which may look like anything below.
  ['not_trusted', /^not trusted: /],
  ['duplicate_message_type', /^contracts\[\d+\] repeats /],
  ['schema_over_limit', /\(schemaMax\w+\)$/],
  ['too_many_services', /^more than \d+ services/],
  ['invalid_contract', /^contracts\[\d+\] /],
  ['too_many_contracts', /^more than \d+ contracts/],
  ['invalid_ttl', /^ttlMs /],
  ['unreadable', /^announcement could not be read/],
  ['malformed', /^(announcement is not an object|announcement has no |withdrawn must be|contracts is not an array)/],
  ['not_trusted', /\b(not (allowed|trusted|permitted)|untrusted|unsigned|signature|user_id)\b/i],
];

export const OTHER_REASON = 'other';

export function refusalKind(reason: string): string {
  for (const [kind, pattern] of KINDS) if (pattern.test(reason)) return kind;
  return OTHER_REASON;
}
