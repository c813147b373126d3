import { importJWK, type JWK } from 'jose';
import { errorMessage } from '../errors/describe';

/** The key set could not be fetched or read; `retryAfterSeconds` says when the next fetch may happen. */
export class KeySetUnavailableError extends Error {
  constructor(
    readonly retryAfterSeconds: number,
    reason: string,
  ) {
    super(`JWKS unavailable: ${reason}`);
    this.name = 'KeySetUnavailableError';
  }
}

/** The token names a kid the (fresh enough) key set does not have, or a key that is not an RS256 signing key. */
export class UnknownKeyError extends Error {
  constructor(reason = 'no matching key') {
    super(reason);
    this.name = 'UnknownKeyError';
  }
}

export interface KeySetOptions {
  uri: string;
  /** Least time between two fetches after a successful one: bounds what unknown kids can trigger. */
  cooldownMs: number;
  /** Least time between two fetches after a failed one. */
  failureBackoffMs: number;
  /** Bound on one fetch, body included. */
  timeoutMs: number;
  /** A fetched set is refetched (on use) once it is this old; while that fails, the old keys stay in use. */
  maxAgeMs: number;
  /** Largest key-set document accepted. */
  maxBytes?: number;
  fetch?: typeof fetch;
  now?: () => number;
}

type VerifyKey = Awaited<ReturnType<typeof importJWK>>;

const MAX_KID_LENGTH = 256;

/**
 * The RS256 public keys of JWKS_URI, by kid. Our own small fetcher rather than jose's createRemoteJWKSet, for
 * exact semantics: every fetch (success or failure) holds the next one back (cooldown / failure backoff) so no
 * stream of tokens, whatever their kid, makes more than one outbound request per window; an unreachable,
 * slow, non-200 or non-JSON key set is a KeySetUnavailableError (→ 503) while a kid missing from a set that was
 * fetched is an UnknownKeyError (→ 401). Concurrent callers share one in-flight fetch. Only the `jwks_uri`
 * configured is ever requested: token headers (jku, x5u, jwk, x5c) are never looked at.
 */
export class RemoteKeySet {
  private readonly opts: Required<Omit<KeySetOptions, 'fetch' | 'now'>>;
  private readonly fetchImpl: typeof fetch;
  private readonly now: () => number;
  private jwks = new Map<string, JWK>();
  private imported = new Map<string, Promise<VerifyKey>>();
  private fetchedAt?: number;
  private nextFetchAt = 0;
  private lastFailure?: string;
  private pending?: Promise<void>;
  /** Outbound requests made, for tests and diagnostics. */
  fetchCount = 0;

  constructor(options: KeySetOptions) {
    const { uri, cooldownMs, failureBackoffMs, timeoutMs, maxAgeMs, maxBytes = 512 * 1024 } = options;
    this.opts = { uri, cooldownMs, failureBackoffMs, timeoutMs, maxAgeMs, maxBytes };
    this.fetchImpl = options.fetch ?? ((...args) => fetch(...args));
    this.now = options.now ?? Date.now;
  }

  /** The verification key for `kid`. Throws UnknownKeyError or KeySetUnavailableError; never anything else. */
  async keyFor(kid: string): Promise<VerifyKey> {
    if (kid === '' || kid.length > MAX_KID_LENGTH) throw new UnknownKeyError('unusable kid');
    await this.ensureLoaded();
    let jwk = this.jwks.get(kid);
    if (!jwk) {
      // Possibly a rotation: look again, at most once per cooldown whatever the kid.
      if (this.pending || this.now() >= this.nextFetchAt) {
        await this.refresh();
        jwk = this.jwks.get(kid);
      }
      if (!jwk) throw new UnknownKeyError();
    }
    return this.importKey(kid, jwk);
  }

  /** First load, or a refetch of a set past its max age (keeping the old keys if the refetch fails). */
  private async ensureLoaded(): Promise<void> {
    const now = this.now();
    const stale = this.fetchedAt === undefined || now - this.fetchedAt >= this.opts.maxAgeMs;
    if (!stale) return;
    if (this.pending || now >= this.nextFetchAt) {
      try {
        await this.refresh();
      } catch (err) {
        if (this.fetchedAt === undefined) throw err;
        // Stale keys are better than none while the key set is away; the next attempt waits for the backoff.
      }
      return;
    }
    if (this.fetchedAt === undefined) throw this.unavailable(this.lastFailure ?? 'not loaded');
  }

  private refresh(): Promise<void> {
    this.pending ??= this.load().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async load(): Promise<void> {
    this.fetchCount++;
    try {
      const keys = await this.fetchKeys();
      this.jwks = keys;
      this.imported = new Map();
      this.fetchedAt = this.now();
      this.lastFailure = undefined;
      this.nextFetchAt = this.fetchedAt + this.opts.cooldownMs;
    } catch (err) {
      this.lastFailure = errorMessage(err);
      this.nextFetchAt = this.now() + this.opts.failureBackoffMs;
      throw this.unavailable(this.lastFailure);
    }
  }

  private unavailable(reason: string): KeySetUnavailableError {
    const waitMs = Math.max(this.nextFetchAt - this.now(), 0);
    return new KeySetUnavailableError(Math.max(1, Math.ceil(waitMs / 1000)), reason);
  }

  private async fetchKeys(): Promise<Map<string, JWK>> {
    const signal = AbortSignal.timeout(this.opts.timeoutMs);
    let res: Response;
    try {
      res = await this.fetchImpl(this.opts.uri, {
        method: 'GET',
        redirect: 'manual',
        signal,
        headers: { accept: 'application/jwk-set+json, application/json' },
      });
    } catch {
      throw new Error(signal.aborted ? 'timed out' : 'unreachable');
    }
    // The body is read (bounded) even when it is thrown away: a drained response keeps the connection reusable.
    let text: string;
    try {
      text = await readLimited(res, this.opts.maxBytes);
    } catch (err) {
      throw new Error(signal.aborted ? 'timed out' : err instanceof Error ? err.message : 'body could not be read');
    }
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new Error('not JSON');
    }
    const keys = (doc as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(keys)) throw new Error('not a JSON Web Key Set');
    const byKid = new Map<string, JWK>();
    for (const k of keys) {
      if (!k || typeof k !== 'object') continue;
      const jwk = k as JWK;
      if (typeof jwk.kid !== 'string' || jwk.kid === '' || byKid.has(jwk.kid)) continue;
      byKid.set(jwk.kid, jwk);
    }
    return byKid;
  }

  /** Only an RSA signing key meant for RS256 is usable; only its public members are imported. */
  private importKey(kid: string, jwk: JWK): Promise<VerifyKey> {
    let key = this.imported.get(kid);
    if (!key) {
      if (jwk.kty !== 'RSA' || typeof jwk.n !== 'string' || typeof jwk.e !== 'string')
        throw new UnknownKeyError('not an RSA key');
      if (jwk.alg !== undefined && jwk.alg !== 'RS256') throw new UnknownKeyError('key not meant for RS256');
      if (jwk.use !== undefined && jwk.use !== 'sig') throw new UnknownKeyError('key not meant for signatures');
      key = importJWK({ kty: 'RSA', n: jwk.n, e: jwk.e }, 'RS256').catch(() => {
        throw new UnknownKeyError('key could not be imported');
      });
      // A key that fails to import fails the same way next time: cache the failure too.
      key.catch(() => undefined);
      this.imported.set(kid, key);
    }
    return key;
  }
}

/** The body as text, refused (and the stream cancelled) once it passes `maxBytes`. */
async function readLimited(res: Response, maxBytes: number): Promise<string> {
  if (!res.body) return '';
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body.cancel().catch(() => undefined);
    throw new Error('document too large');
  }
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new Error('document too large');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
