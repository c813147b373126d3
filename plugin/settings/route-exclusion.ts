/** A message type as the registry accepts it (plugin/contracts/registry.ts). */
const MESSAGE_TYPE = '[A-Za-z0-9][A-Za-z0-9._:-]{0,199}';

/**
 * Contracts taken off their generated routes (part of the plugin settings, plugin/settings/index.ts): an operator who
 * serves a contract through a hand-written pipeline with stricter steps makes that pipeline its only way in.
 */
export interface RouteExclusionSettings {
  /** Message types with no generated route and no generic dispatch (`POST /api/actions`, `GET /api/data`); sorted. */
  excludeFromGeneratedRoutes: string[];
}

export const ROUTE_EXCLUSION_SETTINGS_SCHEMA_PROPERTIES = {
  excludeFromGeneratedRoutes: {
    type: ['array', 'string'],
    items: { type: 'string', pattern: `^${MESSAGE_TYPE}$` },
    // The environment's form: message types separated by commas.
    pattern: `^\\s*${MESSAGE_TYPE}(\\s*,\\s*${MESSAGE_TYPE})*\\s*$`,
    description: 'message types served only by hand-written pipelines: no generated route, no generic dispatch (env EXCLUDE_FROM_GENERATED_ROUTES, comma-separated)',
  },
} as const;

export function resolveRouteExclusionSettings(raw: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = process.env): RouteExclusionSettings {
  const given = raw.excludeFromGeneratedRoutes ?? env.EXCLUDE_FROM_GENERATED_ROUTES;
  const list = (Array.isArray(given) ? given : typeof given === 'string' ? given.split(',') : [])
    .filter((t): t is string => typeof t === 'string')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  return { excludeFromGeneratedRoutes: [...new Set(list)].sort() };
}
