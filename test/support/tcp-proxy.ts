import * as net from 'node:net';

/** A URL for the same broker but another host:port (the proxy). */
export function viaPort(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

/**
 * A TCP proxy in front of the broker (or Redis, or PostgreSQL) that can cut every connection, refuse new ones, and
 * stall: hold every byte both ways, connections open and new ones accepted, as a peer that hangs or a network
 * that drops packets would, until resume() delivers them in order.
 */
export class TcpProxy {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private readonly pairs = new Set<[net.Socket, net.Socket]>();
  private stalled = false;
  refusing = false;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      const upstream = net.connect(this.target.port, this.target.host);
      const pair: [net.Socket, net.Socket] = [client, upstream];
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

  /** Holds every byte of every connection, present and new, both ways; nothing is lost or answered meanwhile. */
  stall(): void {
    if (this.stalled) return;
    this.stalled = true;
    for (const pair of this.pairs) hold(pair);
  }

  /** Ends a stall: what was held is delivered, in order, and the connections go on. */
  resume(): void {
    // Only after a stall: piping a pair twice would deliver its bytes twice.
    if (!this.stalled) return;
    this.stalled = false;
    for (const pair of this.pairs) flow(pair);
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
  }

  connectionCount(): number {
    return this.sockets.size / 2;
  }

  close(): Promise<void> {
    this.refusing = true;
    this.killAll();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}


function flow([client, upstream]: [net.Socket, net.Socket]): void {
  client.pipe(upstream);
  upstream.pipe(client);
}

function hold([client, upstream]: [net.Socket, net.Socket]): void {
  client.unpipe(upstream);
  upstream.unpipe(client);
  client.pause();
  upstream.pause();
}
