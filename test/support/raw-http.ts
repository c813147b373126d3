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
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const lines = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':');
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    if (this.buffer.length < end + 4 + length) return undefined;
    const body = this.buffer.subarray(end + 4, end + 4 + length).toString('utf8');
    this.buffer = this.buffer.subarray(end + 4 + length);
    return { status: Number(lines[0].split(' ')[1]), headers, body };
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}
