import type { IncomingHttpHeaders } from 'node:http';
import type { AuthenticatedUser } from './claims';
import type { Logger } from '../logger';
import { isDevelopmentAuthEnv } from '../settings/auth';

/**
 * Development mode: when DEVELOPMENT_AUTH_ENABLED is exactly `true`, X-Dev-User-Id (required) and
 * X-Dev-Permissions (comma-separated, trimmed, empties dropped) stand for the caller; no token is verified.
 * Node lower-cases header names, so they match in any case. Returns undefined when X-Dev-User-Id is absent or
 * blank: development authentication then yields no user and the request is handled as any other.
 */
export function developmentUser(headers: IncomingHttpHeaders): AuthenticatedUser | undefined {
  const userId = single(headers['x-dev-user-id'])?.trim();
  if (!userId) return undefined;
  const raw = headers['x-dev-permissions'];
  const list = Array.isArray(raw) ? raw.join(',') : (raw ?? '');
  const permissions = [
    ...new Set(
      list
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== ''),
    ),
  ];
  return {
    userId,
    email: `${userId}@development.local`,
    name: `Development User ${userId}`,
    permissions,
  };
}

/** The text to shout at start when development mode is on. */
export function developmentModeWarning(): string {
  const bar = '!'.repeat(78);
  return [
    bar,
    '!! DEVELOPMENT AUTHENTICATION IS ENABLED (DEVELOPMENT_AUTH_ENABLED=true)',
    '!! Any caller can act as ANY user with ANY permissions by sending the X-Dev-User-Id and',
    '!! X-Dev-Permissions headers; no token is verified for such requests.',
    '!! NEVER enable this outside a developer machine. Unset DEVELOPMENT_AUTH_ENABLED to turn it off.',
    bar,
  ].join('\n');
}

/** Logs the warning (as an error, so it shows at every log level) when development mode is on; true if it is. */
export function warnIfDevelopmentMode(log: Pick<Logger, 'error'>, env: NodeJS.ProcessEnv = process.env): boolean {
  if (!isDevelopmentAuthEnv(env)) return false;
  log.error(developmentModeWarning());
  return true;
}

function single(v: string | string[] | undefined): string | undefined {
  // A repeated X-Dev-User-Id is ambiguous: no user.
  return Array.isArray(v) ? undefined : v;
}
