import { givenValue } from './declarations';

/**
 * Contracts taken off their generated routes (part of the plugin settings, plugin/settings/index.ts): an operator who
 * serves a contract through a hand-written pipeline with stricter steps makes that pipeline its only way in.
 */
export interface RouteExclusionSettings {
  /** Message types with no generated route and no generic dispatch (`POST /api/actions`, `GET /api/data`); sorted. */
  excludeFromGeneratedRoutes: string[];
}

export function resolveRouteExclusionSettings(
  raw: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = process.env,
): RouteExclusionSettings {
  const given = givenValue(raw, env, 'excludeFromGeneratedRoutes');
  const list = (Array.isArray(given) ? given : typeof given === 'string' ? given.split(',') : [])
    .filter((t): t is string => typeof t === 'string')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  return { excludeFromGeneratedRoutes: [...new Set(list)].sort() };
}
