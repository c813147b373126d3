/**
 * The token of an Authorization header: a leading "Bearer " is stripped when present
 * (scheme case-insensitive); a header without a scheme is taken as the token itself. Returns:
 * - undefined when there is no header, or it is empty (→ NO_AUTH_HEADER);
 * - '' when the header is there but carries no token (`Bearer`, `Bearer   `) (→ INVALID_TOKEN);
 * - otherwise the token text (another scheme such as `Basic abc` stays as is and fails as a token).
 */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  // A repeated Authorization header is ambiguous: refuse it rather than pick one.
  if (Array.isArray(header)) return header.length === 0 ? undefined : '';
  const value = header.trim();
  if (value === '') return undefined;
  const m = /^bearer(?:\s+|$)/i.exec(value);
  return m ? value.slice(m[0].length).trim() : value;
}
