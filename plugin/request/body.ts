import express from 'express';
import type { Request, Response } from 'express';
import { GatewayError } from '../errors';
import { keepRawBody, replayBodyForProxy } from './replay-body';
import { requestState } from './state';
import type { Maybe } from '../pipeline/maybe';

declare module './state' {
  interface RequestState {
    /** The JSON body, once read (the request stream can be read only once). */
    body?: Record<string, unknown>;
  }
}

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** Methods whose body becomes input. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const parsers = new Map<number, ReturnType<typeof express.json>>();

function parserFor(limit: number): ReturnType<typeof express.json> {
  let p = parsers.get(limit);
  if (!p) {
    // strict: a body must be an object or array; the type check is ours (415 below), so accept any here.
    p = express.json({ limit, strict: true, type: () => true, verify: keepRawBody });
    parsers.set(limit, p);
  }
  return p;
}

/**
 * Reads the JSON body once per request; at once (no promise) when there is none or it was read already. An empty
 * body is `{}`; a non-JSON content type with a body → 415, thrown at once; too large → 413 and malformed → 400,
 * the promise rejected. Errors carry no parser text.
 */
export function readBody(req: Request, res: Response, limit = DEFAULT_BODY_LIMIT): Maybe<Record<string, unknown>> {
  const state = requestState(req);
  if (state.body) return state.body;
  if (!BODY_METHODS.has(req.method)) return {};
  const headers = req.headers;
  const length = headers['content-length'];
  const chunked = headers['transfer-encoding'] !== undefined;
  if (!chunked && (length === undefined || length === '0')) return {};
  const type = headers['content-type'];
  if (!type || !/^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(type)) {
    throw new GatewayError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be JSON (Content-Type: application/json)');
  }
  return new Promise<Record<string, unknown>>((resolve, reject) => {
    parserFor(limit)(req, res, (err?: unknown) => {
      if (err) return reject(bodyError(err, limit));
      const body: unknown = req.body;
      if (body === undefined || body === null) return resolve({});
      if (typeof body !== 'object' || Array.isArray(body)) {
        return reject(new GatewayError('BAD_REQUEST', 'The request body must be a JSON object'));
      }
      const obj = body as Record<string, unknown>;
      state.body = obj;
      replayBodyForProxy(req);
      resolve(obj);
    });
  });
}

function bodyError(err: unknown, limit: number): GatewayError {
  const type = (err as { type?: string }).type;
  if (type === 'entity.too.large') {
    return new GatewayError('PAYLOAD_TOO_LARGE', `The request body is larger than ${limit} bytes`);
  }
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
    return new GatewayError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported body encoding');
  }
  return new GatewayError('BAD_REQUEST', 'The request body is not valid JSON');
}
