import { createHash } from 'node:crypto';
import type { Request } from 'express';
import type { Contract } from '../contracts/types';
import { GatewayError } from '../errors/gateway-error';
import { DEFAULT_RATE_WINDOW_MS } from '../settings/defaults';
import type { EdgeSettings } from '../settings/edge';
import { authenticateRequest } from '../auth/authenticate';
import type { TokenVerifier } from '../auth/verify-token';

/** The budget a request is counted against: `scope` names the counter family. */
export interface AppliedLimit {
  scope: string;
  max: number;
  windowMs: number;
}

/** A hand-written pipeline's own limit (action of contract-rate-limit). */
export interface ExplicitLimit {
  max?: number;
  windowMs?: number;
  /** Counter family, so two hand-written pipelines can share or separate their budgets; default `route`. */
  scope?: string;
}

/**
 * Which limit applies: the action's own (hand-written pipelines), else the contract's `rateLimit`, else the
 * gateway-wide one of the settings, else none. A contract's limit replaces the gateway-wide one and has a
 * counter of its own, so its requests do not use up the caller's general budget.
 */
export function limitFor(
  contract: Pick<Contract, 'messageType' | 'rateLimit'> | undefined,
  settings: Pick<EdgeSettings, 'rateLimitMax' | 'rateLimitWindowMs'>,
  explicit: ExplicitLimit = {},
): AppliedLimit | undefined {
  if (explicit.max !== undefined) {
    return {
      scope: `r:${explicit.scope ?? 'route'}`,
      max: explicit.max,
      windowMs: explicit.windowMs ?? DEFAULT_RATE_WINDOW_MS,
    };
  }
  if (contract?.rateLimit) {
    return {
      scope: `c:${contract.messageType}`,
      max: contract.rateLimit.max,
      windowMs: contract.rateLimit.windowMs ?? DEFAULT_RATE_WINDOW_MS,
    };
  }
  if (settings.rateLimitMax !== undefined)
    return { scope: 'all', max: settings.rateLimitMax, windowMs: settings.rateLimitWindowMs };
  return undefined;
}

/**
 * The per-address limit of a public contract (login, refresh, external login): anyone may call those without a
 * credential, and each login costs the auth service a password hash. It is counted apart from the limit above
 * (`limitFor`), so a contract's own generous `rateLimit` cannot lift it; undefined when the contract is not public or
 * the setting is `off`.
 */
export function publicLimitFor(
  contract: Pick<Contract, 'public'> | undefined,
  settings: Pick<EdgeSettings, 'publicRateLimitMax' | 'publicRateLimitWindowMs'>,
): AppliedLimit | undefined {
  if (contract?.public !== true || settings.publicRateLimitMax === undefined) return undefined;
  return { scope: 'p', max: settings.publicRateLimitMax, windowMs: settings.publicRateLimitWindowMs };
}

/**
 * Who is counted: the user the shared token verifier confirms (from its cache when it verified the token before), or
 * in development mode the one development headers name, else the client address. A token that does not verify counts as its address, so a
 * caller cannot get fresh budgets by rotating the `sub` of unsigned tokens. Long user ids are hashed to bound the key.
 */
export async function callerKey(
  req: Request,
  verifier: TokenVerifier,
  developmentAuthEnabled: boolean,
): Promise<string> {
  try {
    return userKey(await authenticateRequest(req, verifier, developmentAuthEnabled));
  } catch {
    // The user's key is part of the work: whatever fails in it counts the caller by address.
    return addressKey(req);
  }
}

/**
 * The client address as a counter key, whatever token the request carries: a public contract's budget is the
 * address's, so a flood cannot buy fresh budgets with tokens of accounts of its own.
 */
export function addressKey(req: Request): string {
  return `ip:${clientAddress(req)}`;
}

function userKey({ userId }: { userId: string }): string {
  return userId.length <= 128 ? `u:${userId}` : `uh:${createHash('sha256').update(userId).digest('base64url')}`;
}

/** The socket's peer (Express `req.ip`); X-Forwarded-For counts only where the host app trusts a proxy. */
function clientAddress(req: Request): string {
  return req.ip ?? req.socket?.remoteAddress ?? 'unknown';
}

/** The store key (the host's Redis store adds `rl:` in front). */
export function counterKey(prefix: string, limit: AppliedLimit, caller: string): string {
  return `${prefix}:${limit.scope}:${caller}`;
}

/** Whole seconds until the window resets, at least 1; the window length when the store gave no reset time. */
export function retryAfterSeconds(resetTime: unknown, windowMs: number, now: number = Date.now()): number {
  const ms = resetTime instanceof Date ? resetTime.getTime() - now : windowMs;
  return Math.max(1, Math.ceil(ms / 1000));
}

/** 429 RATE_LIMIT_EXCEEDED: `retryAfter` in the body, Retry-After in the headers. */
export function tooManyRequests(retryAfter: number): GatewayError {
  return new GatewayError('RATE_LIMIT_EXCEEDED', 'Too many requests, please try again later', {
    extra: { retryAfter },
    headers: { 'Retry-After': String(retryAfter) },
  });
}
