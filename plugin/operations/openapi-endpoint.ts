import type { Request, Response } from 'express';
import { currentRuntime, gatewayStarting } from '../runtime';
import { openApiCacheFor, type OpenApiCache } from '../openapi';
import { traceOf } from '../request/trace';
import { sendError } from '../http/respond';

/** The document cache of the process's runtime (built on the registry's changes, never per request). */
export function runtimeOpenApi(): OpenApiCache | undefined {
  const runtime = currentRuntime();
  if (!runtime) return undefined;
  return openApiCacheFor(
    runtime.registry,
    () => ({
      prefix: runtime.settings.generatedPrefix,
      debugEndpoints: runtime.settings.debugEndpoints,
      rateLimited: runtime.settings.rateLimitMax !== undefined,
    }),
    runtime.log,
  );
}

/** GET /api-docs/openapi.json: the cached text, with an ETag (If-None-Match → 304). */
export function openApiHandler(req: Request, res: Response): void {
  const trace = traceOf(req, res);
  const cache = runtimeOpenApi();
  if (!cache) {
    sendError(res, gatewayStarting(), trace.correlationId);
    return;
  }
  const { json, etag } = cache.current();
  res.setHeader('ETag', etag);
  res.setHeader('Cache-Control', 'no-cache');
  if (req.headers['if-none-match'] === etag) {
    res.status(304).end();
    return;
  }
  res.status(200).setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(json);
}
