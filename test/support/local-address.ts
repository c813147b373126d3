import { type Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';

export interface Answer {
  status: number;
  ms: number;
  retryAfter?: string;
  body: string;
}

/**
 * A JSON POST from a loopback address of its own (127.0.0.0/8 is all loopback on Linux): the gateway sees it as the
 * caller's address (req.ip), as it would a distinct client's.
 */
export function postFrom(
  agent: Agent | false,
  localAddress: string,
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        localAddress,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            ms: performance.now() - started,
            retryAfter: res.headers['retry-after'] as string | undefined,
            body: text,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** A GET with no token from `localAddress`, on a connection of its own. */
export function getFrom(localAddress: string, url: string): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, localAddress }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, ms: performance.now() - started, body: '' }));
    });
    req.on('error', reject);
    req.end();
  });
}
