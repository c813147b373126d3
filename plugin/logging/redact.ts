/**
 * A last guard on what a log line may carry: the gateway never logs a credential on purpose, but a message built
 * from someone else's text (a service's error, a driver's message) might hold one.
 */
const JWT = /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi;
const NAMED =
  /\b(password|passwd|secret|token|accessToken|refreshToken|apiKey|api_key|authorization)("?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;}&]+)/gi;
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s:/@]+:[^\s@/]+@/gi;

export function redact(text: string): string {
  return text
    .replace(JWT, '[redacted]')
    .replace(BEARER, '$1 [redacted]')
    .replace(NAMED, '$1$2[redacted]')
    .replace(URL_CREDENTIALS, '$1[redacted]@');
}
