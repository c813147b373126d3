import type express from 'express';
import { healthHandler } from './health';
import { discoveryHandler } from './discovery';
import { debugHandler } from './debug';
import { mountDocsPage, OPENAPI_PATH } from './docs-page';
import { openApiHandler, runtimeOpenApi } from './openapi-endpoint';

export const HEALTH_PATH = '/health';
export const DISCOVERY_PATH = '/api/discovery/contracts';
export const DEBUG_PATH = '/debug/contracts';

const mounted = new WeakSet<object>();

/**
 * The gateway's own routes, for ctx.registerGatewayRoute. The host mounts gateway routes before the pipelines, so
 * these win over any apiEndpoint with the same path. Handlers read the runtime per request (settings, registry),
 * and a second call with the same app (the host replays its first plugins' routes after a failed reload) mounts
 * nothing.
 */
export function mountOperationsRoutes(app: express.Express): void {
  if (mounted.has(app)) return;
  mounted.add(app);
  app.get(HEALTH_PATH, healthHandler);
  app.get(DISCOVERY_PATH, (req, res) => void discoveryHandler(req, res));
  app.get(DEBUG_PATH, debugHandler(() => {
    const doc = runtimeOpenApi()?.current();
    return doc && { version: doc.version, generatedAt: doc.generatedAt };
  }));
  app.get(OPENAPI_PATH, openApiHandler);
  mountDocsPage(app);
  // Built now rather than on the first request, and from then on on every change of the contracts.
  runtimeOpenApi();
}
