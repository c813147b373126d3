import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One keep-alive TCP connection on which requests are written by hand, so a test controls exactly when a request
 * arrives on an already open connection (fetch pools connections out of the test's sight).
 */
export class RawConnection {
  private buffer = Buffer.alloc(0);
  private readonly waiters: Array<() => void> = [];
  closed = false;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, d]);
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => undefined);
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve(new RawConnection(s)));
      s.once('error', reject);
    });
  }

  send(method: string, path: string, body?: unknown): void {
    const payload = body === undefined ? '' : JSON.stringify(body);
    const head = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: keep-alive'];
    if (payload) head.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(payload)}`);
    this.socket.write(`${head.join('\r\n')}\r\n\r\n${payload}`);
  }

  /** Writes bytes as they are (a request in pieces: headers now, its body later or never). */
  write(bytes: string): void {
    this.socket.write(bytes);
  }

  /** Resolves true once the server has closed the connection, false if it is still open after `timeoutMs`. */
  async closedWithin(timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (!this.closed && Date.now() < until) {
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(50, Math.max(1, until - Date.now())));
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
    return this.closed;
  }

  /** The next complete response (Content-Length bodies only, which is what the gateway sends). */
  async next(timeoutMs = 15000): Promise<RawResponse> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const parsed = this.take();
      if (parsed) return parsed;
      if (this.closed) throw new Error('connection closed before a complete response');
      if (Date.now() > until) throw new Error('no response in time');
      await new Promise<void>((r) => {
        const t = setTimeout(r, 50);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  destroy(): void {
    this.socket.destroy();
  }

  private take(): RawResponse | undefined {
    const parsed = parseResponse(this.buffer);
    if (parsed) this.buffer = this.buffer.subarray(parsed.length);
    return parsed?.response;
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

/** The first complete response in `buffer` (Content-Length bodies only) and how many bytes it took. */
function parseResponse(buffer: Buffer): { response: RawResponse; length: number } | undefined {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const lines = buffer.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  if (buffer.length < end + 4 + length) return undefined;
  const body = buffer.subarray(end + 4, end + 4 + length).toString('utf8');
  return { response: { status: Number(lines[0].split(' ')[1]), headers, body }, length: end + 4 + length };
}

/**
 * Writes `bytes` as they are on a new connection (requests fetch refuses to send: bad headers, unknown methods) and
 * resolves with the response once the server closes the connection.
 */
export function rawExchange(port: number, bytes: string): Promise<RawResponse & { raw: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', reject);
    socket.on('close', () => {
      const all = Buffer.concat(chunks);
      const parsed = parseResponse(all);
      if (!parsed) return reject(new Error(`no complete response: ${JSON.stringify(all.toString('latin1'))}`));
      resolve({ ...parsed.response, raw: all.toString('latin1') });
    });
  });
}
