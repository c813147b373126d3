import type { Request, Response } from 'express';
import type { Contract } from '../contracts/types';
import type { InstanceInfo } from '../contracts/leases';
import type { Refusal, RegistryConflict } from '../contracts/ownership';
import type { BreakingChange } from '../compat/gate';
import type { Conflict } from '../contracts/endpoint-specs';
import type { PlannedRoutes } from '../contracts/route-plan';
import { successStatus } from '../contracts/success-status';
import type { Runtime } from '../runtime';
import { contractTimeoutMs, timeoutClamped, type TimeoutSettings } from '../contracts/timeouts';
import { DEFAULT_MAX_REQUEST_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS } from '../settings/defaults';
import { traceOf } from '../request/trace';
import { sendError, sendJson } from '../http/respond';
import { authenticateRequest } from '../auth/authenticate';

interface DiscoveredEndpoint {
  method: string;
  path: string;
  successStatus: number;
  whenQuery?: string;
  generic?: true;
}

export interface InstanceView {
  service: string;
  instanceId: string;
  lastSeen: string;
  leaseExpiresAt: string;
}

interface DiscoveredContract extends Contract {
  public: boolean;
  /** The deadline the gateway keeps: timeoutMs, or requestTimeoutMs, capped by maxRequestTimeoutMs. */
  effectiveTimeoutMs: number;
  /** Present (true) when timeoutMs asks for more than maxRequestTimeoutMs. */
  timeoutClamped?: true;
  endpoints: DiscoveredEndpoint[];
  instances: InstanceView[];
}

export interface DiscoveryListing {
  count: number;
  services: string[];
  contracts: DiscoveredContract[];
  /** `messageTypes[].services[0]` holds the type; `refused`: contracts announced but not served, with why. */
  conflicts: { messageTypes: RegistryConflict[]; routes: Conflict[]; refused: Refusal[] };
  /** Changes that break clients of a served contract (accepted under breakingChanges: warn, or refused). */
  breakingChanges?: BreakingChange[];
}

export function instanceView(i: InstanceInfo): InstanceView {
  return {
    service: i.service,
    instanceId: i.instanceId,
    lastSeen: new Date(i.lastSeen).toISOString(),
    leaseExpiresAt: new Date(i.leaseExpiresAt).toISOString(),
  };
}

/**
 * GET /api/discovery/contracts's body: every contract of the route plan with the routes the config writer generates
 * for it and the instances serving it. Pure, for tests.
 */
export function discoveryListing(
  routes: PlannedRoutes,
  instances: readonly InstanceInfo[],
  registryConflicts: RegistryConflict[] = [],
  refused: Refusal[] = [],
  timeouts: TimeoutSettings = {
    requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS,
    maxRequestTimeoutMs: DEFAULT_MAX_REQUEST_TIMEOUT_MS,
  },
): DiscoveryListing {
  const { contracts } = routes;
  const endpointsOf = new Map<string, DiscoveredEndpoint[]>();
  const add = (messageType: string, e: DiscoveredEndpoint): void => {
    endpointsOf.set(messageType, [...(endpointsOf.get(messageType) ?? []), e]);
  };
  for (const e of routes.endpoints) {
    if (e.dispatch) {
      for (const t of e.messageTypes)
        add(t, { method: e.method, path: e.path, successStatus: successStatus(t, e.method), generic: true });
      continue;
    }
    if (e.messageType)
      add(e.messageType, { method: e.method, path: e.path, successStatus: successStatus(e.messageType, e.method) });
    for (const v of e.variants)
      add(v.messageType, {
        method: e.method,
        path: e.path,
        successStatus: successStatus(v.messageType, e.method),
        whenQuery: v.whenQuery,
      });
  }
  const listed = contracts.map((c) => ({
    ...structuredClone(c),
    public: c.public === true,
    effectiveTimeoutMs: contractTimeoutMs(c, timeouts),
    ...(timeoutClamped(c, timeouts) ? { timeoutClamped: true as const } : {}),
    endpoints: endpointsOf.get(c.messageType) ?? [],
    // Only the serving service's instances: another service may announce the type too, and be refused it.
    instances: instances
      .filter((i) => i.service === c.targetService && i.messageTypes.includes(c.messageType))
      .map(instanceView),
  }));
  return {
    count: listed.length,
    services: [...new Set(instances.map((i) => i.service))].sort(),
    contracts: listed,
    conflicts: { messageTypes: registryConflicts, routes: routes.conflicts, refused },
  };
}

/**
 * GET /api/discovery/contracts. Under /api, so authenticated like every non-public /api endpoint:
 * any valid caller, no particular permission — it shows the API surface and which instances
 * serve it, which is no secret to a client but is not for anonymous callers either.
 */
export function discoveryHandler(runtime: Runtime) {
  return (req: Request, res: Response): void => void discovery(runtime, req, res);
}

async function discovery(runtime: Runtime, req: Request, res: Response): Promise<void> {
  const trace = traceOf(req, res);
  try {
    const config = runtime.settings.auth;
    await authenticateRequest(req, runtime.services.verifiers.obtain(config), config.developmentAuthEnabled);
    const { registry, routes } = runtime.discovery;
    const listing = discoveryListing(
      routes.routes(),
      registry.instances(),
      registry.conflicts(),
      registry.refusals(),
      runtime.settings,
    );
    sendJson(res, 200, { ...listing, breakingChanges: registry.breakingChanges() });
  } catch (err) {
    sendError(res, err, trace.correlationId);
  }
}
