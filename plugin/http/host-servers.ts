import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { onClientError } from './client-error';

/** What the host's event bus offers for its servers ('http-ready' / 'https-ready'). */
export interface ServerEvents {
  on(event: string, listener: (payload: { httpServer?: Server }) => void): unknown;
}

/**
 * Hooks every server the host starts: `observe` sees every request before the host's app does (trace ids on every
 * answer, even those none of our policies give, and metrics, the server span and the access log:
 * plugin/observability), and requests Node's parser refuses get the error body. Once per process (manifest.ts).
 */
export function hookHostServers(events: ServerEvents, observe: (req: IncomingMessage, res: ServerResponse) => void): void {
  const hook = ({ httpServer }: { httpServer?: Server }): void => {
    if (!httpServer) return;
    httpServer.prependListener('request', observe);
    httpServer.on('clientError', onClientError);
  };
  events.on('http-ready', hook);
  events.on('https-ready', hook);
}
