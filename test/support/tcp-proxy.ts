import * as net from 'node:net';

/** A URL for the same server (broker, database) but another host:port (the proxy). */
export function viaPort(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  flowing: boolean;
}

/**
 * A TCP proxy in front of a server (the broker, PostgreSQL) that can cut every connection, refuse new ones, and
 * stall: keep every connection open but pass no byte either way (new ones too) until resumed, as a hung server
 * or a network that drops packets would.
 */
export class TcpProxy {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private readonly pairs = new Set<Pair>();
  private stalled = false;
  refusing = false;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      const upstream = net.connect(this.target.port, this.target.host);
      const pair: Pair = { client, upstream, flowing: false };
      this.sockets.add(client);
      this.sockets.add(upstream);
      this.pairs.add(pair);
      const drop = (): void => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
        this.pairs.delete(pair);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      if (this.stalled) hold(pair);
      else flow(pair);
    });
  }

  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve((this.server.address() as net.AddressInfo).port));
    });
  }

  /** Cuts every proxied connection, as a broker restart or a network failure would. */
  killAll(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    this.pairs.clear();
  }

  /** From now on no byte passes, on open connections and on new ones; they stay open. */
  stall(): void {
    this.stalled = true;
    for (const pair of this.pairs) hold(pair);
  }

  /** Bytes pass again, those held first. */
  resume(): void {
    this.stalled = false;
    for (const pair of this.pairs) flow(pair);
  }

  connectionCount(): number {
    return this.sockets.size / 2;
  }

  close(): Promise<void> {
    this.refusing = true;
    this.stalled = false;
    this.killAll();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function flow(pair: Pair): void {
  if (pair.flowing) return;
  pair.flowing = true;
  pair.client.pipe(pair.upstream);
  pair.upstream.pipe(pair.client);
}

function hold(pair: Pair): void {
  pair.flowing = false;
  pair.client.unpipe(pair.upstream);
  pair.upstream.unpipe(pair.client);
  pair.client.pause();
  pair.upstream.pause();
}
