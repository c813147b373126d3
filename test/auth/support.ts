import nock from 'nock';
import { createHmac, generateKeyPairSync, sign as rsaSign, type KeyObject } from 'node:crypto';
import type { Request, Response, NextFunction } from 'express';
import type { JWK } from 'jose';
import { withAuthOverrides, type AuthOverrides } from '../../plugin/settings/auth';
import type { TokenVerifier } from '../../plugin/auth/verify-token';
import type { Runtime } from '../../plugin/runtime';

// nock patches http, net and fetch as soon as it is imported; undo that so the other suites of a full run
// (real brokers, real servers) are untouched, and switch it on only around the suites that use it.
nock.restore();

/** nock active for the current suite only. */
export function useNock(): void {
  before(() => {
    if (!nock.isActive()) nock.activate();
  });
  after(() => {
    nock.cleanAll();
    nock.enableNetConnect();
    nock.restore();
  });
}

export const SECRET = 'a-test-secret-that-is-long-enough-0123456789';
export const JWKS_HOST = 'https://idp.test';
export const JWKS_PATH = '/.well-known/jwks.json';
export const JWKS_URI = `${JWKS_HOST}${JWKS_PATH}`;
export const ISSUER = 'https://idp.test/';
export const AUDIENCE = 'contracts-gateway';

const AUTH_ENV = [
  'JWT_SECRET',
  'JWKS_URI',
  'JWT_ISSUER',
  'JWT_AUDIENCE',
  'JWT_CLOCK_TOLERANCE',
  'DEVELOPMENT_AUTH_ENABLED',
];

/** Clears the auth variables for a suite and puts them back after it. */
export function isolateAuthEnv(): void {
  const saved: Record<string, string | undefined> = {};
  before(() => {
    for (const k of AUTH_ENV) {
      saved[k] = process.env[k];
      delete process.env[k];
    }
  });
  afterEach(() => {
    for (const k of AUTH_ENV) delete process.env[k];
  });
  after(() => {
    for (const k of AUTH_ENV) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });
}

/**
 * The environment without the auth variables: for a runtime made when a suite's file is loaded, before isolateAuthEnv
 * clears them (a runtime's authentication settings are read from the environment when it is made).
 */
export function envWithoutAuth(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of AUTH_ENV) delete env[k];
  return env;
}

/** The verifier a policy of this runtime created with these overrides uses (shared per configuration). */
export function verifierFor(runtime: Runtime, overrides: AuthOverrides): TokenVerifier {
  return runtime.services.verifiers.obtain(withAuthOverrides(runtime.settings.auth, overrides));
}

// ---------------------------------------------------------------- keys and tokens

export interface RsaKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  jwk: JWK;
  pem: string;
}

export function rsaKey(kid: string, modulusLength = 2048): RsaKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength });
  const jwk = { ...(publicKey.export({ format: 'jwk' }) as JWK), kid, use: 'sig', alg: 'RS256' };
  return { kid, privateKey, publicKey, jwk, pem: publicKey.export({ format: 'pem', type: 'spki' }).toString() };
}

export function ecJwk(kid: string): JWK {
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { ...(publicKey.export({ format: 'jwk' }) as JWK), kid };
}

export const b64u = (v: string | Buffer): string => Buffer.from(v).toString('base64url');
const part = (v: unknown): string => b64u(JSON.stringify(v));

export const now = (): number => Math.floor(Date.now() / 1000);

/** Claims of a valid access token, an hour to live. */
export function claims(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { sub: 'user-1', iat: now(), exp: now() + 3600, ...extra };
}

/** Claims of a valid RS256 token of our identity provider (issuer and audience as configured in the tests). */
export function rsClaims(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return claims({ iss: ISSUER, aud: AUDIENCE, ...extra });
}

export function hs256(
  payload: Record<string, unknown>,
  opts: { secret?: string | Buffer; header?: Record<string, unknown> } = {},
): string {
  const input = `${part({ alg: 'HS256', typ: 'JWT', ...opts.header })}.${part(payload)}`;
  return `${input}.${createHmac('sha256', opts.secret ?? SECRET)
    .update(input)
    .digest('base64url')}`;
}

export function rs256(key: RsaKey, payload: Record<string, unknown>, header: Record<string, unknown> = {}): string {
  const input = `${part({ alg: 'RS256', typ: 'JWT', kid: key.kid, ...header })}.${part(payload)}`;
  return `${input}.${rsaSign('sha256', Buffer.from(input), key.privateKey).toString('base64url')}`;
}

/** A token whose header and payload are taken as given, with any signature text. */
export function raw(header: unknown, payload: unknown, signature = b64u('signature')): string {
  return `${part(header)}.${part(payload)}.${signature}`;
}

// ---------------------------------------------------------------- fake req / res

export interface Outcome {
  next: boolean;
  status?: number;
  body?: any;
  headers: Record<string, string>;
  req: Request;
}

export function fakeReq(
  headers: Record<string, string | string[] | undefined> = {},
  init: Partial<Request> = {},
): Request {
  const lower: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) lower[k.toLowerCase()] = v;
  return {
    method: 'GET',
    url: '/api/things',
    path: '/api/things',
    query: {},
    headers: lower,
    ...init,
  } as unknown as Request;
}

/** Runs one middleware: resolves when it calls next() or answers. */
export function run(mw: (req: Request, res: Response, next: NextFunction) => unknown, req: Request): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    const outcome: Outcome = { next: false, headers, req };
    const res = {
      headersSent: false,
      statusCode: 200,
      setHeader(name: string, value: string) {
        headers[name.toLowerCase()] = String(value);
        return res;
      },
      getHeader(name: string) {
        return headers[name.toLowerCase()];
      },
      status(code: number) {
        res.statusCode = code;
        return res;
      },
      end(text?: string) {
        res.headersSent = true;
        outcome.status = res.statusCode;
        outcome.body = text ? JSON.parse(text) : undefined;
        resolve(outcome);
      },
      destroy() {
        reject(new Error('response destroyed'));
      },
    };
    Promise.resolve(
      mw(req, res as unknown as Response, (err?: unknown) => {
        if (err) return reject(err);
        outcome.next = true;
        resolve(outcome);
      }),
    ).catch(reject);
  });
}
