import type { Announcement, Contract, ContractRateLimit, HttpOverride, JsonSchema, Maintenance } from './types';
import { DEFAULT_ANNOUNCEMENT_LIMITS, schemaOverLimits, type AnnouncementLimits } from './limits';
import { schemaCostProblem, type PatternTally } from '../validation/schema-cost';
import { validateDeprecation } from '../compat/deprecation-fields';
import { isRecord } from '../is-record';

/*
 * What an announcement must be before the registry takes it (docs/bus-protocol.md); the registry's own checks
 * (budgets, capacity, ownership) need what it already holds and stay there.
 */

export type ValidationResult = { ok: true; announcement: Announcement } | { ok: false; reason: string };

/** The bounds validation applies (the registry's options carry them). */
export interface ValidationOptions {
  /** Leases above this are treated as malformed (a typo such as seconds-as-ms×1000 would pin a dead service). */
  maxTtlMs?: number;
  /** Size bounds of announcements (contracts, schemas, instances, services); defaults DEFAULT_ANNOUNCEMENT_LIMITS. */
  limits?: Partial<AnnouncementLimits>;
}

export const DEFAULT_MAX_TTL_MS = 60 * 60 * 1000;

const HTTP_METHODS: ReadonlySet<string> = new Set(['GET', 'POST', 'PUT', 'DELETE', 'PATCH']);
// Message types end up in URL paths, YAML keys and AMQP `type`; keep them to a safe alphabet.
const MESSAGE_TYPE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;

function isNonEmptyString(value: unknown, max = 200): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= max;
}

function validateHttp(value: unknown): HttpOverride | string {
  if (!isRecord(value)) return 'http must be an object';
  if (typeof value.method !== 'string' || !HTTP_METHODS.has(value.method)) return 'http.method is not an HTTP method';
  const paths = value.paths;
  if (!Array.isArray(paths) || paths.length === 0) return 'http.paths must be a non-empty array';
  if (!paths.every((p) => isNonEmptyString(p, 500) && p.startsWith('/'))) return 'http.paths must be absolute paths';
  return { method: value.method as HttpOverride['method'], paths: [...paths] as string[] };
}

const MAX_RATE_LIMIT = 1_000_000_000;
const MAX_RATE_WINDOW_MS = 24 * 60 * 60 * 1000;

function validateRateLimit(value: unknown): ContractRateLimit | string {
  if (!isRecord(value)) return 'rateLimit must be an object';
  const { max, windowMs } = value;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > MAX_RATE_LIMIT)
    return 'rateLimit.max must be a positive integer';
  if (windowMs === undefined) return { max };
  if (typeof windowMs !== 'number' || !Number.isInteger(windowMs) || windowMs < 1000 || windowMs > MAX_RATE_WINDOW_MS) {
    return 'rateLimit.windowMs must be an integer from 1000 to 86400000';
  }
  return { max, windowMs };
}

/** The longest Retry-After a maintenance may announce: a day (a longer one is more likely a unit mistake). */
const MAX_MAINTENANCE_RETRY_AFTER_S = 86_400;

function validateMaintenance(value: unknown): Maintenance | string {
  if (!isRecord(value)) return 'maintenance must be an object';
  const seconds = value.retryAfterSeconds;
  if (
    typeof seconds !== 'number' ||
    !Number.isInteger(seconds) ||
    seconds < 1 ||
    seconds > MAX_MAINTENANCE_RETRY_AFTER_S
  )
    return `maintenance.retryAfterSeconds must be an integer from 1 to ${MAX_MAINTENANCE_RETRY_AFTER_S}`;
  return { retryAfterSeconds: seconds };
}

/** Returns a clean copy of a contract (known fields only, cloned) or the reason it is unusable. */
function validateContract(value: unknown, limits: AnnouncementLimits, patterns: PatternTally): Contract | string {
  if (!isRecord(value)) return 'is not an object';
  if (!isNonEmptyString(value.messageType) || !MESSAGE_TYPE.test(value.messageType)) return 'has no valid messageType';
  if (!isNonEmptyString(value.targetService)) return 'has no targetService';
  if (!isRecord(value.inputSchema)) return 'has no inputSchema object';
  if (!isRecord(value.outputSchema)) return 'has no outputSchema object';
  // Before anything copies or walks the schemas recursively.
  for (const key of ['inputSchema', 'outputSchema'] as const) {
    const problem = schemaOverLimits(value[key], limits) ?? schemaCostProblem(value[key], patterns);
    if (problem) return `${key} ${problem}`;
  }
  // No default here: a missing list must not silently mean "no permission needed".
  const permissions = value.requiredPermissions;
  if (!Array.isArray(permissions) || !permissions.every((p) => typeof p === 'string')) {
    return 'requiredPermissions must be an array of strings';
  }
  const contract: Contract = {
    messageType: value.messageType,
    targetService: value.targetService,
    inputSchema: structuredClone(value.inputSchema) as JsonSchema,
    outputSchema: structuredClone(value.outputSchema) as JsonSchema,
    requiredPermissions: [...permissions] as string[],
  };
  if (value.http !== undefined) {
    const http = validateHttp(value.http);
    if (typeof http === 'string') return http;
    contract.http = http;
  }
  if (value.public !== undefined) {
    if (typeof value.public !== 'boolean') return 'public must be a boolean';
    contract.public = value.public;
  }
  if (value.timeoutMs !== undefined) {
    if (typeof value.timeoutMs !== 'number' || !Number.isFinite(value.timeoutMs) || value.timeoutMs <= 0) {
      return 'timeoutMs must be a positive number';
    }
    contract.timeoutMs = value.timeoutMs;
  }
  if (value.rateLimit !== undefined) {
    const rateLimit = validateRateLimit(value.rateLimit);
    if (typeof rateLimit === 'string') return rateLimit;
    contract.rateLimit = rateLimit;
  }
  const deprecation = validateDeprecation(value);
  if (typeof deprecation === 'string') return deprecation;
  Object.assign(contract, deprecation);
  return contract;
}

export function limitsOf(options: ValidationOptions): AnnouncementLimits {
  return { ...DEFAULT_ANNOUNCEMENT_LIMITS, ...options.limits };
}

/**
 * Checks an announcement as it came off the bus. Never throws; a rejected announcement leaves no trace.
 * A withdrawal needs only service and instanceId.
 */
export function validateAnnouncement(input: unknown, options: ValidationOptions = {}): ValidationResult {
  const maxTtl = options.maxTtlMs ?? DEFAULT_MAX_TTL_MS;
  const limits = limitsOf(options);
  const maxContracts = limits.maxContracts;
  if (!isRecord(input)) return { ok: false, reason: 'announcement is not an object' };
  if (!isNonEmptyString(input.service)) return { ok: false, reason: 'announcement has no service' };
  if (!isNonEmptyString(input.instanceId)) return { ok: false, reason: 'announcement has no instanceId' };
  const { service, instanceId } = input;
  if (input.withdrawn !== undefined && typeof input.withdrawn !== 'boolean') {
    return { ok: false, reason: 'withdrawn must be a boolean' };
  }
  if (input.withdrawn === true)
    return { ok: true, announcement: { service, instanceId, contracts: [], ttlMs: 0, withdrawn: true } };
  const ttl = input.ttlMs;
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0 || ttl > maxTtl) {
    return { ok: false, reason: `ttlMs must be a number in (0, ${maxTtl}]` };
  }
  if (!Array.isArray(input.contracts)) return { ok: false, reason: 'contracts is not an array' };
  if (input.contracts.length > maxContracts)
    return { ok: false, reason: `more than ${maxContracts} contracts (announcementMaxContracts)` };
  const contracts: Contract[] = [];
  const seen = new Set<string>();
  const patterns: PatternTally = { patterns: 0 };
  for (const [index, raw] of input.contracts.entries()) {
    const contract = validateContract(raw, limits, patterns);
    if (typeof contract === 'string') return { ok: false, reason: `contracts[${index}] ${contract}` };
    if (seen.has(contract.messageType))
      return { ok: false, reason: `contracts[${index}] repeats ${contract.messageType}` };
    seen.add(contract.messageType);
    contracts.push(contract);
  }
  if (input.maintenance === undefined)
    return { ok: true, announcement: { service, instanceId, contracts, ttlMs: ttl } };
  const maintenance = validateMaintenance(input.maintenance);
  if (typeof maintenance === 'string') return { ok: false, reason: maintenance };
  return { ok: true, announcement: { service, instanceId, contracts, ttlMs: ttl, maintenance } };
}
