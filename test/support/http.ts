import { mintToken } from './tokens';

export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

/** A JSON request with fetch; `body` may be an object (sent as JSON) or a raw string. */
export async function http(
  method: string,
  url: string,
  opts: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

type HttpFn = typeof http;

/** `http` with a bearer token for the given permissions on every request (explicit headers still win). */
export function httpAs(permissions: string[], sub = 'test-admin'): HttpFn {
  let token: Promise<string> | undefined;
  return async (method, url, opts = {}) => {
    token ??= mintToken({ sub, permissions });
    return http(method, url, { ...opts, headers: { authorization: `Bearer ${await token}`, ...opts.headers } });
  };
}
