import type { Request, Response } from 'express';
import type { Runtime } from '../runtime';
import { traceOf } from '../request/trace';
import { sendError, sendJson } from '../http/respond';
import { serviceUnavailable } from '../errors/gateway-error';
import type { StoreState } from '../edge/store-health';

/** The fields GET /health reports in both of its answers (docs/operations.md "Operations endpoints"). */
interface HealthFields {
  /**
   * `node`: the broker (`host:port`) of the connection while it is up (one of BUS_URL's list). `refused`: the
   * channels the broker refuses to set up (a reply consumer at the vhost's queue limit, say), while it refuses any.
   */
  bus: { kind: 'amqp' | 'inprocess'; state: string; node?: string; reason?: string; refused?: string[] };
  /** The rate-limit counter store (the host's Redis): `degraded` while it fails or stalls; `since` then. */
  rateLimitStore: { state: StoreState; since?: string };
  /** Whether the gateway hears the services' announcements; `not heard` with why (the broker refuses its listener). */
  announcements: { state: 'heard' | 'not heard'; reason?: string };
  contracts: number;
  services: number;
  /** Services whose circuit is open (refused at once) or half-open (one trial request in flight). */
  openCircuits: Array<{ service: string; state: string; retryAfterSeconds?: number }>;
  /** Services every live instance of which announced maintenance. */
  maintenance: Array<{ service: string; retryAfterSeconds: number }>;
  uptimeSeconds: number;
}

function healthFields(runtime: Runtime, now = Date.now()): HealthFields {
  const store = runtime.services.rateLimits.store;
  const since = store.since();
  // Counts only: an anonymous probe must not make the gateway copy every contract it holds.
  const counts = runtime.discovery.registry.counts();
  const node = runtime.services.transport.node?.();
  const reason = runtime.services.transport.blockedReason?.();
  const unheard = runtime.discovery.unheard();
  const refused = runtime.services.transport.refusedChannels?.() ?? [];
  return {
    bus: {
      kind: runtime.services.transport.kind,
      state: runtime.services.transport.state(),
      ...(node !== undefined ? { node } : {}),
      ...(reason !== undefined ? { reason } : {}),
      ...(refused.length > 0 ? { refused } : {}),
    },
    rateLimitStore: { state: store.state(), ...(since !== undefined ? { since: new Date(since).toISOString() } : {}) },
    announcements: unheard === undefined ? { state: 'heard' } : { state: 'not heard', reason: unheard },
    contracts: counts.contracts,
    services: counts.services,
    openCircuits: runtime.services.serviceGuard.status().circuits,
    maintenance: runtime.discovery.registry.servicesInMaintenance(),
    uptimeSeconds: Math.max(0, Math.floor((now - runtime.startedAt) / 1000)),
  };
}

const RETRY_AFTER_SECONDS = 5;

/**
 * GET /health: 200 `{ status: 'ok', …fields }` while the bus is up; otherwise (connecting, blocked by a broker
 * alarm, down) 503 in the error body
 * (SERVICE_UNAVAILABLE, Retry-After) with `status: 'unavailable'` and the same fields, so a probe and a person
 * both see why. Zero contracts is still healthy: the gateway works, nothing has announced yet — unless it cannot
 * hear announcements (the broker refuses its listener, e.g. at the vhost's queue limit): then it has no route to
 * serve and will not learn any, so 503 too. Deaf with contracts, it serves them (their leases are held): 200
 * `degraded`; so too while the broker refuses another of its channels (`bus.refused`: the requests to a service
 * whose reply consumer is refused are answered 503, the others are served). A rate-limit store that fails is `degraded`, still 200: requests are served (or refused 503 by
 * rateLimitOnStoreFailure), and taking the gateway out of a load balancer would not bring Redis back.
 */
export function healthHandler(runtime: Runtime) {
  return (req: Request, res: Response): void => health(runtime, req, res);
}

function health(runtime: Runtime, req: Request, res: Response): void {
  const trace = traceOf(req, res);
  res.setHeader('Cache-Control', 'no-store');
  const fields = healthFields(runtime);
  const { announcements } = fields;
  const deafAndEmpty = announcements.state !== 'heard' && fields.contracts === 0;
  if (fields.bus.state === 'up' && !deafAndEmpty) {
    const ok =
      fields.rateLimitStore.state === 'ok' && announcements.state === 'heard' && fields.bus.refused === undefined;
    sendJson(res, 200, { status: ok ? 'ok' : 'degraded', ...fields });
    return;
  }
  const message =
    fields.bus.state === 'up'
      ? `The gateway cannot hear the services' announcements (${announcements.reason}): no route is known`
      : `The message bus is ${fields.bus.state}${fields.bus.reason === undefined ? '' : ` (${fields.bus.reason})`}`;
  const err = serviceUnavailable(message, RETRY_AFTER_SECONDS, {
    status: 'unavailable',
    ...fields,
  });
  sendError(res, err, trace.correlationId);
}
