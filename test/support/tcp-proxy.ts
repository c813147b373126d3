import * as net from 'node:net';

/** A URL for the same broker but another host:port (the proxy). */
export function viaPort(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

/** A TCP proxy in front of the broker that can cut every connection and refuse new ones. */
export class TcpProxy {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  refusing = false;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      const upstream = net.connect(this.target.port, this.target.host);
      this.sockets.add(client);
      this.sockets.add(upstream);
      const drop = (): void => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
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

