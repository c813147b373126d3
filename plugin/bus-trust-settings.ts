import type { OwnershipRules } from './contracts/ownership';

/**
 * The settings that decide which announcements the gateway trusts (part of the plugin settings, plugin/settings.ts):
 * who may own which message types and paths. YAML only (`plugins.contracts`): lists and maps do not fit a variable.
 */
export interface BusTrustSettings {
  ownership: OwnershipRules;
}

const SERVICE_LIST = { type: 'array', items: { type: 'string', minLength: 1 } } as const;

export const BUS_TRUST_SETTINGS_SCHEMA_PROPERTIES = {
  ownedMessageTypes: {
    type: 'object',
    additionalProperties: { type: 'array', items: { type: 'string', pattern: '^[A-Za-z0-9._:-]+\\*?$' } },
    description: 'service → message types only it may announce (exact, or a prefix ending in *); pins win over first-come',
  },
  ownedPathPrefixes: {
    type: 'object',
    additionalProperties: { type: 'array', items: { type: 'string', pattern: '^/' } },
    description: 'service → path prefixes (e.g. /api/users) under which only it may have routes',
  },
  publicContractServices: { ...SERVICE_LIST, description: 'the services that may declare public: true contracts; unset: any' },
  httpPathServices: { ...SERVICE_LIST, description: 'the services that may declare http.paths; unset: any' },
  allowPathsOutsideApi: { type: 'boolean', description: 'accept http.paths outside /api/<name>/ (default false)' },
} as const;

function stringList(v: unknown): string[] | undefined {
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string' && s !== '') : undefined;
}

function listMap(v: unknown): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (!v || typeof v !== 'object' || Array.isArray(v)) return out;
  for (const [service, list] of Object.entries(v)) out[service] = stringList(list) ?? [];
  return out;
}

export function resolveBusTrustSettings(raw: Record<string, unknown> = {}): BusTrustSettings {
  const ownership: OwnershipRules = {
    messageTypes: listMap(raw.ownedMessageTypes),
    pathPrefixes: listMap(raw.ownedPathPrefixes),
    allowPathsOutsideApi: raw.allowPathsOutsideApi === true,
  };
  const publicServices = stringList(raw.publicContractServices);
  if (publicServices) ownership.publicServices = publicServices;
  const httpPathServices = stringList(raw.httpPathServices);
  if (httpPathServices) ownership.httpPathServices = httpPathServices;
  return { ownership };
}
