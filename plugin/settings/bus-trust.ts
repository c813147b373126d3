import type { OwnershipRules } from '../contracts/ownership';
import { DEFAULT_ANNOUNCEMENT_LIMITS, type AnnouncementLimits } from '../contracts/limits';
import { DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND } from '../bus/constants';
import { DEFAULT_MAX_LEASE_MS, DEFAULT_RETAINED_BYTES_PER_USER, DEFAULT_RETAINED_BYTES_TOTAL } from './defaults';
import { readServicesFile, type ServicesList } from '../bus/services-file';
import { firstUseFile, readPins } from '../contracts/first-use';
import { InvalidSettingError } from './invalid-setting';
import { ANNOUNCEMENT_USERS_ENV, envOf, envValue } from './declarations';

export interface BusTrustSettings {
  ownership: OwnershipRules;
  announcementLimits: AnnouncementLimits;
  /** Announcements are applied in batches, at most one per interval (one registry change, one config rewrite). */
  announcementApplyIntervalMs: number;
  /** Announcement bytes taken off the bus per second from each intake queue (one per service in announcementUsers, one shared); the broker holds (and at its cap drops the oldest of) the rest. */
  announcementBytesPerSecond: number;
  /** service → the broker user that must publish its announcements (RabbitMQ's validated user_id). */
  announcementUsers: Record<string, string>;
  /** Every announcement must carry a user_id: the mapped user, or one named like the service. */
  requireAnnouncementUser: boolean;
  /**
   * The services file (busServicesFile) this trust comes from, when one is set: then only the services it lists may
   * announce, each only the message types it owns there, and announcementUsers and the pins are the file's.
   */
  servicesFile?: string;
  /**
   * Trust on first use (no services file, firstUsePins not false): `file` keeps the pins (in dataDir), undefined
   * when there is no data folder (the pins last as long as the process). Unset: off.
   */
  firstUse?: { file: string | undefined };
  /**
   * Bytes of contracts (as JSON, each distinct contract once) the gateway retains per broker user and in total, and
   * as much again of announcements waiting to be applied: over either, an announcement is refused.
   */
  retainedBudget: { perUserBytes: number; totalBytes: number };
  /** Longest lease an announcement may hold; a longer one is clamped to it (a dead claimant's claim lapses by then). */
  maxLeaseMs: number;
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

/**
 * The settings a services file stands in for: with one, setting any of these too would be a second list to keep
 * in step by hand, so the start stops instead.
 */
const FILE_REPLACES = [
  'ownedMessageTypes',
  'ownedPathPrefixes',
  'publicContractServices',
  'httpPathServices',
  'announcementUsers',
] as const;

/**
 * The services file named by busServicesFile (or BUS_SERVICES_FILE), read and checked, or undefined without one.
 * Throws an InvalidSettingError naming the setting, the file and its problem.
 */
export function servicesFileOf(
  raw: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
): { file: string; list: ServicesList } | undefined {
  const fromBlock = typeof raw.busServicesFile === 'string' && raw.busServicesFile.trim() !== '';
  const file = fromBlock ? (raw.busServicesFile as string).trim() : envValue(env, 'busServicesFile')?.trim();
  if (!file) return undefined;
  const label = fromBlock ? 'busServicesFile' : envOf('busServicesFile');
  const also =
    FILE_REPLACES.find((key) => raw[key] !== undefined) ??
    (raw.announcementUsers === undefined && env[ANNOUNCEMENT_USERS_ENV] ? ANNOUNCEMENT_USERS_ENV : undefined);
  if (also)
    throw new InvalidSettingError(label, `${file}: ${also} is set too; the services file replaces it (one list)`);
  const required = raw.requireAnnouncementUser ?? envValue(env, 'requireAnnouncementUser')?.trim();
  if (required === false || required === 'false')
    throw new InvalidSettingError(
      label,
      `${file}: requireAnnouncementUser is false; a services file requires every announcement's broker user`,
    );
  try {
    return { file, list: readServicesFile(file) };
  } catch (err) {
    throw new InvalidSettingError(label, (err as Error).message);
  }
}

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
  for (const pair of text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')) {
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

export function resolveBusTrustSettings(
  raw: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = process.env,
): BusTrustSettings {
  const fromFile = servicesFileOf(raw, env);
  const announcementLimits: AnnouncementLimits = { ...DEFAULT_ANNOUNCEMENT_LIMITS };
  for (const [setting, key] of Object.entries(LIMIT_SETTINGS)) {
    const v = raw[setting];
    if (typeof v === 'number' && Number.isInteger(v) && v > 0) announcementLimits[key] = v;
  }
  const settings: BusTrustSettings = {
    ownership: fromFile ? fileOwnership(fromFile.list, raw) : settingsOwnership(raw),
    announcementLimits,
    announcementApplyIntervalMs: intSetting(raw.announcementApplyIntervalMs, 1000),
    announcementBytesPerSecond:
      intSetting(raw.announcementBytesPerSecond, DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND) ||
      DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND,
    announcementUsers: fromFile
      ? Object.fromEntries(Object.entries(fromFile.list).map(([service, entry]) => [service, entry.user]))
      : raw.announcementUsers !== undefined
        ? stringMap(raw.announcementUsers)
        : envUserMap(env[ANNOUNCEMENT_USERS_ENV]),
    requireAnnouncementUser:
      fromFile !== undefined ||
      (typeof raw.requireAnnouncementUser === 'boolean'
        ? raw.requireAnnouncementUser
        : envValue(env, 'requireAnnouncementUser') === 'true'),
    retainedBudget: {
      perUserBytes:
        intSetting(raw.announcementRetainedBytesPerUser, DEFAULT_RETAINED_BYTES_PER_USER) ||
        DEFAULT_RETAINED_BYTES_PER_USER,
      totalBytes:
        intSetting(raw.announcementRetainedBytesTotal, DEFAULT_RETAINED_BYTES_TOTAL) || DEFAULT_RETAINED_BYTES_TOTAL,
    },
    maxLeaseMs:
      intSetting(raw.maxLeaseMs ?? intFromText(envValue(env, 'maxLeaseMs')), DEFAULT_MAX_LEASE_MS) ||
      DEFAULT_MAX_LEASE_MS,
    configWriteIntervalMs: intSetting(raw.configWriteIntervalMs, 1000),
  };
  if (fromFile) settings.servicesFile = fromFile.file;
  else {
    const firstUse = firstUseOf(raw, env);
    if (firstUse) settings.firstUse = firstUse;
  }
  return settings;
}

/**
 * Where the first-use pins are kept, when trust on first use is on; the file is read here so that a broken one
 * stops the start (InvalidSettingError naming dataDir), rather than starting with no pins.
 */
export function firstUseOf(
  raw: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
): { file: string | undefined } | undefined {
  const on = raw.firstUsePins ?? envValue(env, 'firstUsePins')?.trim();
  if (on === false || on === 'false') return undefined;
  const given = typeof raw.dataDir === 'string' ? raw.dataDir.trim() : envValue(env, 'dataDir')?.trim();
  const file = firstUseFile(given, env);
  if (file === undefined) return { file: undefined };
  try {
    readPins(file);
  } catch (err) {
    throw new InvalidSettingError(
      given ? (typeof raw.dataDir === 'string' ? 'dataDir' : envOf('dataDir')) : 'EG_CONFIG_DIR',
      (err as Error).message,
    );
  }
  return { file };
}

function settingsOwnership(raw: Record<string, unknown>): OwnershipRules {
  const ownership: OwnershipRules = {
    messageTypes: listMap(raw.ownedMessageTypes),
    pathPrefixes: listMap(raw.ownedPathPrefixes),
    allowPathsOutsideApi: raw.allowPathsOutsideApi === true,
  };
  const publicServices = stringList(raw.publicContractServices);
  if (publicServices) ownership.publicServices = publicServices;
  const httpPathServices = stringList(raw.httpPathServices);
  if (httpPathServices) ownership.httpPathServices = httpPathServices;
  return ownership;
}

/** The file's pins; what it does not give a service (a message type, public, http.paths) the service may not have. */
function fileOwnership(list: ServicesList, raw: Record<string, unknown>): OwnershipRules {
  const entries = Object.entries(list);
  return {
    messageTypes: Object.fromEntries(entries.map(([service, e]) => [service, e.messageTypes])),
    pathPrefixes: Object.fromEntries(entries.map(([service, e]) => [service, e.pathPrefixes])),
    allowPathsOutsideApi: raw.allowPathsOutsideApi === true,
    publicServices: entries.filter(([, e]) => e.public).map(([service]) => service),
    httpPathServices: entries.filter(([, e]) => e.httpPaths).map(([service]) => service),
    ownedOnly: true,
  };
}

function intFromText(text: string | undefined): number | undefined {
  return text !== undefined && /^\d+$/.test(text.trim()) ? Number(text.trim()) : undefined;
}

/**
 * The broker user that must have published what comes from `service` — its announcements and its replies: the one
 * announcementUsers names, else, with requireAnnouncementUser, one named like the service; undefined: anyone.
 */
export function serviceBrokerUser(
  trust: Pick<BusTrustSettings, 'announcementUsers' | 'requireAnnouncementUser'>,
  service: string,
): string | undefined {
  const mapped = Object.hasOwn(trust.announcementUsers, service) ? trust.announcementUsers[service] : undefined;
  return mapped ?? (trust.requireAnnouncementUser ? service : undefined);
}
