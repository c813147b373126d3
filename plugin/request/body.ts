import express from 'express';
import type { Request, Response } from 'express';
import { GatewayError } from '../errors/gateway-error';
import { keepRawBody, replayBodyForProxy } from './replay-body';
import { DEFAULT_MAX_JSON_DEPTH, nestedDeeperThan } from './json-depth';
import { requestState } from './state';
import type { Maybe } from '../pipeline/maybe';

declare module './state' {
  interface RequestState {
    /** The JSON body, once read (the request stream can be read only once). */
    body?: Record<string, unknown>;
  }
}

const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** The limits a body is read under (the plugin settings bodyLimitBytes and maxJsonDepth). */
export interface BodyLimits {
  bodyLimitBytes: number;
  maxJsonDepth: number;
}

const DEFAULT_LIMITS: BodyLimits = { bodyLimitBytes: DEFAULT_BODY_LIMIT, maxJsonDepth: DEFAULT_MAX_JSON_DEPTH };

/** Marks the error the depth check throws from express.json's verify hook (body-parser keeps a thrown `type`). */
const TOO_DEEP = 'entity.too.deep';

/** Methods whose body becomes input. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const parsers = new Map<string, ReturnType<typeof express.json>>();

function parserFor({ bodyLimitBytes: limit, maxJsonDepth }: BodyLimits): ReturnType<typeof express.json> {
  const key = `${limit}:${maxJsonDepth}`;
  let p = parsers.get(key);
  if (!p) {
    // strict: a body must be an object or array; the type check is ours (415 below), so accept any here.
    // verify runs on the raw bytes before JSON.parse: the depth check comes first, then the bytes are kept.
    const verify = (req: Parameters<typeof keepRawBody>[0], res: unknown, buf: Buffer, encoding: string): void => {
      if (tooDeep(buf, encoding, maxJsonDepth)) throw Object.assign(new Error('nested too deep'), { type: TOO_DEEP });
      keepRawBody(req, res, buf);
    };
    p = express.json({ limit, strict: true, type: () => true, verify });
    parsers.set(key, p);
  }
  return p;
}

/** The depth check on the bytes; a body in another Unicode encoding is decoded first. */
function tooDeep(buf: Buffer, encoding: string, max: number): boolean {
  if (/^utf-?8$/i.test(encoding)) return nestedDeeperThan(buf, max);
  return nestedDeeperThan(Buffer.from(new TextDecoder(encoding).decode(buf), 'utf8'), max);
}

/**
 * The body when it needs no reading: read already, or none (a method without a body, no content), which is `{}`.
 * Undefined when the stream has to be read (readBody). A body whose content type is not JSON → 415, thrown.
 */
export function bodyAtHand(req: Request): Record<string, unknown> | undefined {
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
  return undefined;
}

/**
 * Reads the JSON body once per request; at once (no promise) when bodyAtHand has it. Too large → 413, nested deeper
 * than maxJsonDepth → 400 VALIDATION_ERROR and malformed → 400, the promise rejected. Errors carry no parser text.
 */
export function readBody(req: Request, res: Response, limits: BodyLimits = DEFAULT_LIMITS): Maybe<Record<string, unknown>> {
  const atHand = bodyAtHand(req);
  if (atHand) return atHand;
  // The parser would read (and drop) a body it refuses before answering: a declared length over the limit is
  // answered now, and the connection closed after the answer rather than left open for bytes nobody wants.
  if (Number(req.headers['content-length']) > limits.bodyLimitBytes) {
    res.setHeader('Connection', 'close');
    return Promise.reject(tooLarge(limits));
  }
  return parseBody(req, res, limits);
}

function tooLarge(limits: BodyLimits): GatewayError {
  return new GatewayError('PAYLOAD_TOO_LARGE', `The request body is larger than ${limits.bodyLimitBytes} bytes`);
}

function parseBody(req: Request, res: Response, limits: BodyLimits): Promise<Record<string, unknown>> {
  return new Promise<Record<string, unknown>>((resolve, reject) => {
    parserFor(limits)(req, res, (err?: unknown) => {
      if (err) return reject(bodyError(err, limits));
      const body: unknown = req.body;
      if (body === undefined || body === null) return resolve({});
      if (typeof body !== 'object' || Array.isArray(body)) {
        return reject(new GatewayError('BAD_REQUEST', 'The request body must be a JSON object'));
      }
      const obj = body as Record<string, unknown>;
      requestState(req).body = obj;
      replayBodyForProxy(req);
      resolve(obj);
    });
  });
}

function bodyError(err: unknown, limits: BodyLimits): GatewayError {
  const type = (err as { type?: string }).type;
  if (type === 'entity.too.large') return tooLarge(limits);
  if (type === TOO_DEEP) {
    const message = `The request body nests objects or arrays deeper than ${limits.maxJsonDepth} levels`;
    return new GatewayError('VALIDATION_ERROR', message, { details: { body: message } });
  }
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
    return new GatewayError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported body encoding');
  }
  return new GatewayError('BAD_REQUEST', 'The request body is not valid JSON');
}
