// A calendar date, or a date-time with seconds optional and a zone (Z or ±hh:mm) required: a sunset must mean one
// instant everywhere, so a date-time without a zone (local to whom?) is refused.
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2})))?$/;

/** The instant (ms) of an ISO 8601 date (midnight UTC) or date-time; undefined when it is not one or not a real day. */
export function parseIsoDate(text: string): number | undefined {
  const m = ISO_DATE.exec(text);
  if (!m) return undefined;
  const [, year, month, day, hour, minute] = m;
  if (hour !== undefined && (Number(hour) > 23 || Number(minute) > 59)) return undefined;
  // Date.parse rolls 2026-02-30 over to March; a day that does not exist is refused instead.
  const midnight = Date.UTC(Number(year), Number(month) - 1, Number(day));
  const check = new Date(midnight);
  if (
    check.getUTCFullYear() !== Number(year) ||
    check.getUTCMonth() !== Number(month) - 1 ||
    check.getUTCDate() !== Number(day)
  )
    return undefined;
  const ms = Date.parse(m[4] === undefined ? `${text}T00:00:00Z` : text);
  return Number.isFinite(ms) ? ms : undefined;
}

/** A contract's `deprecated` and `sunset` as announced, checked; the reason when they are unusable. */
export function validateDeprecation(
  value: Record<string, unknown>,
): { deprecated?: boolean; sunset?: string } | string {
  const out: { deprecated?: boolean; sunset?: string } = {};
  if (value.deprecated !== undefined) {
    if (typeof value.deprecated !== 'boolean') return 'deprecated must be a boolean';
    out.deprecated = value.deprecated;
  }
  if (value.sunset !== undefined) {
    if (typeof value.sunset !== 'string' || value.sunset.length > 40 || parseIsoDate(value.sunset) === undefined) {
      return 'sunset must be an ISO 8601 date (2027-01-31) or date-time with a zone (2027-01-31T12:00:00Z)';
    }
    out.sunset = value.sunset;
  }
  return out;
}
