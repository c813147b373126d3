import express from 'express';
import type { Request, Response } from 'express';
import { GatewayError } from '../errors/gateway-error';
import { keepRawBody, replayBodyForProxy } from './replay-body';
import { DEFAULT_MAX_JSON_DEPTH, nestedDeeperThan } from './json-depth';
import type { RequestContext } from './context';

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

/** The body of a request that has none: a method without a body, or no content. */
const NO_BODY: Record<string, unknown> = Object.freeze({});

/**
 * True when the request carries a body that is not read yet: a method with a body and some content, neither read
 * nor refused before. The runner (plugin/lifecycle/runner.ts) reads it, with readBody, before the first step that
 * needs it; a request without a body (GET) is told at once, without looking at its state.
 */
export function bodyToRead(ctx: RequestContext, req: Request): boolean {
  if (!BODY_METHODS.has(req.method)) return false;
  const headers = req.headers;
  if (headers['transfer-encoding'] === undefined) {
    const length = headers['content-length'];
    if (length === undefined || length === '0') return false;
  }
  return ctx.body === undefined && ctx.bodyError === undefined;
}

/**
 * Reads the JSON body into the request's context, or keeps why it could not be (bodyOf throws that to every step that
 * asks): a content type that is not JSON → 415, a declared length over the limit → 413 (the connection closed after
 * the answer rather than left open for bytes nobody wants), too large once read → 413, nested deeper than
 * maxJsonDepth → 400 VALIDATION_ERROR, malformed → 400. Errors carry no parser text. Returns a promise only when the
 * stream is read; it never rejects.
 */
export function readBody(
  ctx: RequestContext,
  req: Request,
  res: Response,
  limits: BodyLimits = DEFAULT_LIMITS,
): Promise<void> | undefined {
  if (!bodyToRead(ctx, req)) return undefined;
  const type = req.headers['content-type'];
  if (!type || !/^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(type)) {
    ctx.bodyError = new GatewayError(
      'UNSUPPORTED_MEDIA_TYPE',
      'Request bodies must be JSON (Content-Type: application/json)',
    );
    return undefined;
  }
  // The parser would read (and drop) a body it refuses before answering: a declared length over the limit is refused now.
  if (Number(req.headers['content-length']) > limits.bodyLimitBytes) {
    res.setHeader('Connection', 'close');
    ctx.bodyError = tooLarge(limits);
    return undefined;
  }
  return parseBody(ctx, req, res, limits);
}

/**
 * The request's JSON body, `{}` when it has none. Throws why it could not be read (readBody); a body still unread is
 * a step that did not declare that it needs it (plugin/lifecycle/runner.ts), a bug.
 */
export function bodyOf(ctx: RequestContext, req: Request): Record<string, unknown> {
  if (!bodyToRead(ctx, req)) {
    if (!BODY_METHODS.has(req.method)) return NO_BODY;
    if (ctx.bodyError !== undefined) throw ctx.bodyError;
    return ctx.body ?? NO_BODY;
  }
  throw new Error('the request body was asked for before it was read: the step must declare that it needs it');
}

function tooLarge(limits: BodyLimits): GatewayError {
  return new GatewayError('PAYLOAD_TOO_LARGE', `The request body is larger than ${limits.bodyLimitBytes} bytes`);
}

function parseBody(ctx: RequestContext, req: Request, res: Response, limits: BodyLimits): Promise<void> {
  return new Promise<void>((resolve) => {
    parserFor(limits)(req, res, (err?: unknown) => {
      const body: unknown = req.body;
      if (err) ctx.bodyError = bodyError(err, limits);
      else if (body === undefined || body === null) ctx.body = NO_BODY;
      else if (typeof body !== 'object' || Array.isArray(body))
        ctx.bodyError = new GatewayError('BAD_REQUEST', 'The request body must be a JSON object');
      else {
        ctx.body = body as Record<string, unknown>;
        replayBodyForProxy(ctx, req);
      }
      resolve();
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
