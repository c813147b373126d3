import type { Request, Response } from 'express';
import type { CachedDocument } from '../openapi/cache';
import { traceOf } from '../request/trace';
import { NOTHING_CSP, setHardeningHeaders } from './docs-page';

/**
 * GET /api-docs/openapi.json (and /api-docs/asyncapi.json): the runtime's cached text, with an ETag
 * (If-None-Match → 304).
 */
export function openApiHandler(cache: { current(): CachedDocument }) {
  return (req: Request, res: Response): void => {
    traceOf(req, res);
    // Never sniffed into HTML or script, whatever text the contracts put in it.
    setHardeningHeaders(res, NOTHING_CSP);
    const { json, etag } = cache.current();
    res.setHeader('ETag', etag);
    res.setHeader('Cache-Control', 'no-cache');
    if (req.headers['if-none-match'] === etag) {
      res.status(304).end();
      return;
    }
    res.status(200).setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end(json);
  };
}
