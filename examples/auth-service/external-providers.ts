import { createRemoteJWKSet, customFetch, jwtVerify, errors, type JWTVerifyGetKey } from 'jose';

/** A key set that could not be fetched at all (network), told apart from a token that is wrong. */
class KeySetUnreachable extends Error {}

const fetchKeySet = async (...args: Parameters<typeof fetch>): Promise<Response> => {
  try {
    return await fetch(...args);
  } catch (err) {
    throw (err as Error)?.name === 'TimeoutError' ? err : new KeySetUnreachable('key set unreachable');
  }
};

/** The three external identity providers external login accepts, by their lower-case names. */
export const PROVIDERS = ['google', 'microsoft', 'apple'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

interface ProviderConfig {
  jwksUri: string;
  issuer: string;
  audience: string;
}

/** Public defaults; the audience (your client id) has no default, so a provider is off until it is set. */
const DEFAULTS: Record<ProviderName, { jwksUri: string; issuer?: string }> = {
  google: { jwksUri: 'https://www.googleapis.com/oauth2/v3/certs', issuer: 'https://accounts.google.com' },
  microsoft: { jwksUri: 'https://login.microsoftonline.com/common/discovery/v2.0/keys' },
  apple: { jwksUri: 'https://appleid.apple.com/auth/keys', issuer: 'https://appleid.apple.com' },
};

/**
 * Provider settings from the environment: <PROVIDER>_CLIENT_ID (the audience, required to enable it),
 * <PROVIDER>_ISSUER and <PROVIDER>_JWKS_URI (defaults above; Microsoft's issuer names your tenant, so it has none).
 */
export function providersFromEnv(env: NodeJS.ProcessEnv = process.env): Partial<Record<ProviderName, ProviderConfig>> {
  const out: Partial<Record<ProviderName, ProviderConfig>> = {};
  for (const name of PROVIDERS) {
    const up = name.toUpperCase();
    const audience = env[`${up}_CLIENT_ID`];
    const issuer = env[`${up}_ISSUER`] ?? DEFAULTS[name].issuer;
    if (!audience) continue;
    if (!issuer) throw new Error(`${up}_ISSUER must be set when ${up}_CLIENT_ID is`);
    out[name] = { audience, issuer, jwksUri: env[`${up}_JWKS_URI`] ?? DEFAULTS[name].jwksUri };
  }
  return out;
}

interface ExternalIdentity {
  provider: ProviderName;
  externalUserId: string;
  email?: string;
  name?: string;
}

export type VerifyOutcome =
  | { ok: true; identity: ExternalIdentity }
  | { ok: false; reason: 'not-configured' | 'invalid' | 'unavailable' };

/** Verifies a provider's id token against that provider's key set, issuer and audience. */
export class ExternalVerifier {
  private readonly keySets = new Map<ProviderName, JWTVerifyGetKey>();

  constructor(private readonly providers: Partial<Record<ProviderName, ProviderConfig>>) {}

  async verify(provider: ProviderName, idToken: string): Promise<VerifyOutcome> {
    const cfg = this.providers[provider];
    if (!cfg) return { ok: false, reason: 'not-configured' };
    let keys = this.keySets.get(provider);
    if (!keys) {
      keys = createRemoteJWKSet(new URL(cfg.jwksUri), {
        timeoutDuration: 5000,
        cooldownDuration: 30000,
        [customFetch]: fetchKeySet,
      });
      this.keySets.set(provider, keys);
    }
    try {
      const { payload } = await jwtVerify(idToken, keys, {
        issuer: cfg.issuer,
        audience: cfg.audience,
        algorithms: ['RS256', 'ES256'],
        requiredClaims: ['sub', 'exp'],
      });
      if (typeof payload.sub !== 'string' || payload.sub === '') return { ok: false, reason: 'invalid' };
      const email = typeof payload.email === 'string' ? payload.email : undefined;
      const name = typeof payload.name === 'string' ? payload.name : undefined;
      return { ok: true, identity: { provider, externalUserId: payload.sub, email, name } };
    } catch (err) {
      // The provider's key set could not be had: not the caller's fault.
      if (
        err instanceof KeySetUnreachable ||
        err instanceof errors.JWKSTimeout ||
        (err instanceof errors.JOSEError && err.code === 'ERR_JOSE_GENERIC')
      ) {
        return { ok: false, reason: 'unavailable' };
      }
      if (err instanceof errors.JOSEError || err instanceof TypeError) return { ok: false, reason: 'invalid' };
      return { ok: false, reason: 'unavailable' };
    }
  }
}
