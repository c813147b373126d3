import type { OwnershipRules } from './contracts/ownership';
import { DEFAULT_ANNOUNCEMENT_LIMITS, type AnnouncementLimits } from './contracts/limits';
import { DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND } from './bus/constants';

/** The defaults the descriptions name, from the one place they are set. */
const D = DEFAULT_ANNOUNCEMENT_LIMITS;

/**
 * The settings that decide which announcements the gateway trusts (part of the plugin settings, plugin/settings.ts):
 * who may own which message types and paths, how large an announcement may be, how fast they are applied and which
 * broker user may announce for which service. YAML (`plugins.contracts`); REQUIRE_ANNOUNCEMENT_USER and
 * ANNOUNCEMENT_USERS stand in for the broker-user settings.
 */
export interface BusTrustSettings {
  ownership: OwnershipRules;
  announcementLimits: AnnouncementLimits;
  /** Announcements are applied in batches, at most one per interval (one registry change, one config rewrite). */
  announcementApplyIntervalMs: number;
  /** Announcement bytes taken off the bus per second; the broker holds (and at its cap drops the oldest of) the rest. */
  announcementBytesPerSecond: number;
  /** service → the broker user that must publish its announcements (RabbitMQ's validated user_id). */
  announcementUsers: Record<string, string>;
  /** Every announcement must carry a user_id: the mapped user, or one named like the service. */
  requireAnnouncementUser: boolean;
  /** At most one rewrite of gateway.config.yml (and host reload) per this many ms. */
  configWriteIntervalMs: number;
}

/** Setting name → the limit it sets. */
export const LIMIT_SETTINGS = {
  announcementMaxBytes: 'maxBytes',
  announcementMaxContracts: 'maxContracts',
  schemaMaxBytes: 'maxSchemaBytes',
  schemaMaxDepth: 'maxSchemaDepth',
  schemaMaxProperties: 'maxSchemaProperties',
  serviceMaxInstances: 'maxInstancesPerService',
  announcedServicesMax: 'maxServices',
} as const satisfies Record<string, keyof AnnouncementLimits>;

const limit = (description: string, maximum: number) => ({ type: 'integer', minimum: 1, maximum, description }) as const;

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
  announcementMaxBytes: limit(`bytes of one announcement message, checked before parsing (default ${D.maxBytes})`, 16 * 1024 * 1024),
  announcementMaxContracts: limit(`contracts in one announcement (default ${D.maxContracts})`, 100000),
  schemaMaxBytes: limit(`bytes of one inputSchema/outputSchema (default ${D.maxSchemaBytes})`, 16 * 1024 * 1024),
  schemaMaxDepth: limit(`nesting depth of one schema (default ${D.maxSchemaDepth})`, 1000),
  schemaMaxProperties: limit(`object members and array items in one schema, at every depth (default ${D.maxSchemaProperties})`, 1000000),
  serviceMaxInstances: limit(`live instances of one service; a new one replaces the one heard from longest ago (default ${D.maxInstancesPerService})`, 100000),
  announcedServicesMax: limit(`services with a live instance; announcements of more are refused (default ${D.maxServices})`, 100000),
  announcementApplyIntervalMs: { type: 'integer', minimum: 0, maximum: 60000, description: 'announcements are applied in one batch per interval (default 1000; a lone one at once)' },
  announcementBytesPerSecond: limit(`announcement bytes taken off the bus per second (default ${DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND})`, 1024 * 1024 * 1024),
  announcementUsers: {
    type: 'object',
    additionalProperties: { type: 'string', minLength: 1 },
    description: "service → the broker user that must have published its announcements (RabbitMQ's user_id)",
  },
  requireAnnouncementUser: {
    type: 'boolean',
    description: 'refuse announcements without the user_id of their service (announcementUsers, or a user named like the service); env REQUIRE_ANNOUNCEMENT_USER=true',
  },
  configWriteIntervalMs: { type: 'integer', minimum: 0, maximum: 600000, description: 'at most one rewrite of gateway.config.yml per interval (default 1000)' },
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

function intSetting(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : fallback;
}

/**
 * ANNOUNCEMENT_USERS, the environment's form of announcementUsers: `service=user` pairs, comma-separated. Returns
 * the map, or what is wrong with the text.
 */
export function parseUserMap(text: string): Record<string, string> | string {
  const out: Record<string, string> = {};
  for (const pair of text.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    const match = /^([^=\s]+)=([^=\s]+)$/.exec(pair);
    if (!match) return `must be service=user pairs separated by commas (got ${JSON.stringify(pair)})`;
    out[match[1] as string] = match[2] as string;
  }
  return out;
}

function stringMap(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!v || typeof v !== 'object' || Array.isArray(v)) return out;
  for (const [key, value] of Object.entries(v)) if (typeof value === 'string' && value !== '') out[key] = value;
  return out;
}

function envUserMap(text: string | undefined): Record<string, string> {
  const parsed = parseUserMap(text ?? '');
  return typeof parsed === 'string' ? {} : parsed; // validateSettings has stopped the start on a malformed one
}

export function resolveBusTrustSettings(raw: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = process.env): BusTrustSettings {
  const ownership: OwnershipRules = {
    messageTypes: listMap(raw.ownedMessageTypes),
    pathPrefixes: listMap(raw.ownedPathPrefixes),
    allowPathsOutsideApi: raw.allowPathsOutsideApi === true,
  };
  const publicServices = stringList(raw.publicContractServices);
  if (publicServices) ownership.publicServices = publicServices;
  const httpPathServices = stringList(raw.httpPathServices);
  if (httpPathServices) ownership.httpPathServices = httpPathServices;
  const announcementLimits: AnnouncementLimits = { ...DEFAULT_ANNOUNCEMENT_LIMITS };
  for (const [setting, key] of Object.entries(LIMIT_SETTINGS)) {
    const v = raw[setting];
    if (typeof v === 'number' && Number.isInteger(v) && v > 0) announcementLimits[key] = v;
  }
  return {
    ownership,
    announcementLimits,
    announcementApplyIntervalMs: intSetting(raw.announcementApplyIntervalMs, 1000),
    announcementBytesPerSecond: intSetting(raw.announcementBytesPerSecond, DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND) || DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND,
    announcementUsers: raw.announcementUsers !== undefined ? stringMap(raw.announcementUsers) : envUserMap(env.ANNOUNCEMENT_USERS),
    requireAnnouncementUser: typeof raw.requireAnnouncementUser === 'boolean' ? raw.requireAnnouncementUser : env.REQUIRE_ANNOUNCEMENT_USER === 'true',
    configWriteIntervalMs: intSetting(raw.configWriteIntervalMs, 1000),
  };
}

/**
 * The broker user that must have published what comes from `service` — its announcements and its replies: the one
 * announcementUsers names, else, with requireAnnouncementUser, one named like the service; undefined: anyone.
 */
export function serviceBrokerUser(trust: Pick<BusTrustSettings, 'announcementUsers' | 'requireAnnouncementUser'>, service: string): string | undefined {
  const mapped = Object.hasOwn(trust.announcementUsers, service) ? trust.announcementUsers[service] : undefined;
  return mapped ?? (trust.requireAnnouncementUser ? service : undefined);
}
