import type express from 'express';
import type { Runtime } from '../runtime';
import { healthHandler } from './health';
import { discoveryHandler } from './discovery';
import { debugHandler } from './debug';
import { ASYNCAPI_PATH, mountDocsPage, OPENAPI_PATH } from './docs-page';
import { openApiHandler } from './openapi-endpoint';

const HEALTH_PATH = '/health';
const DISCOVERY_PATH = '/api/discovery/contracts';
const DEBUG_PATH = '/debug/contracts';

/**
 * The gateway's own routes on the runtime, for ctx.registerGatewayRoute. The host mounts gateway routes before the
 * pipelines, so these win over any apiEndpoint with the same path. Handlers read the runtime per request (settings,
 * registry), and a second call with the same app (the host replays its first plugins' routes after a failed reload)
 * mounts nothing.
 */
export function operationsRoutes(runtime: Runtime): (app: express.Express) => void {
  const mounted = new WeakSet<express.Express>();
  return (app) => {
    if (mounted.has(app)) return;
    mounted.add(app);
    // Built when the runtime was made and again at each attach of the host, then on the first request after a change.
    const { openApi, asyncApi } = runtime.documents;
    app.get(HEALTH_PATH, healthHandler(runtime));
    app.get(DISCOVERY_PATH, discoveryHandler(runtime));
    app.get(
      DEBUG_PATH,
      debugHandler(runtime, () => {
        const doc = openApi.current();
        return { version: doc.version, generatedAt: doc.generatedAt };
      }),
    );
    app.get(OPENAPI_PATH, openApiHandler(openApi));
    app.get(ASYNCAPI_PATH, openApiHandler(asyncApi));
    mountDocsPage(app);
  };
}
