import type { NextFunction, Request, Response } from 'express';
import type { Contract } from '../contracts/types';
import type { InstanceInfo } from '../contracts/leases';
import type { RegistryConflict } from '../contracts/ownership';
import type { Runtime } from '../runtime';
import { traceOf } from '../request/trace';
import { sendJson } from '../http/respond';
import { instanceView } from './discovery';

export interface DebugSnapshotInput {
  now: number;
  bus: { kind: string; state: string };
  contracts: readonly Contract[];
  instances: readonly InstanceInfo[];
  conflicts: RegistryConflict[];
  openapi?: { version: string; generatedAt: Date };
}

/** GET /debug/contracts's body: the registry as it stands — entries with their ages, instances with their leases. */
export function debugSnapshot(input: DebugSnapshotInput): Record<string, unknown> {
  const { now } = input;
  const entries = input.contracts.map((c) => {
    const holders = input.instances.filter((i) => i.messageTypes.includes(c.messageType));
    return {
      messageType: c.messageType,
      targetService: c.targetService,
      instanceIds: holders.map((i) => i.instanceId),
      ageMs: holders.length ? now - Math.max(...holders.map((i) => i.lastSeen)) : null,
      leaseRemainingMs: holders.length ? Math.max(...holders.map((i) => i.leaseExpiresAt)) - now : null,
    };
  });
  const out: Record<string, unknown> = {
    now: new Date(now).toISOString(),
    bus: input.bus,
    entries,
    instances: input.instances.map((i) => ({
      ...instanceView(i),
      messageTypes: [...i.messageTypes],
      ageMs: now - i.lastSeen,
      leaseRemainingMs: i.leaseExpiresAt - now,
    })),
    conflicts: input.conflicts,
  };
  if (input.openapi)
    out.openapi = { version: input.openapi.version, generatedAt: input.openapi.generatedAt.toISOString() };
  return out;
}

/**
 * GET /debug/contracts, only with `debugEndpoints: true` (or DEBUG_ENDPOINTS=true). Otherwise it passes the request
 * on, so it ends exactly like any path nobody serves (404). The setting is read per request from the runtime.
 */
export function debugHandler(runtime: Runtime, openapi: () => { version: string; generatedAt: Date } | undefined) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!runtime.settings.debugEndpoints) {
      next();
      return;
    }
    traceOf(req, res);
    res.setHeader('Cache-Control', 'no-store');
    sendJson(
      res,
      200,
      debugSnapshot({
        now: Date.now(),
        bus: { kind: runtime.services.transport.kind, state: runtime.services.transport.state() },
        contracts: runtime.discovery.registry.contracts(),
        instances: runtime.discovery.registry.instances(),
        conflicts: runtime.discovery.registry.conflicts(),
        openapi: openapi(),
      }),
    );
  };
}
