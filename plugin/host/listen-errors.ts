import { subscribe } from 'node:diagnostics_channel';
import type { Server } from 'node:net';

/** Exit status when the gateway cannot listen (EX_UNAVAILABLE), so a supervisor can tell it from a crash. */
export const CANNOT_LISTEN_EXIT_CODE = 69;

const CHANNEL = 'tracing:net.server.listen:asyncStart';

/**
 * The host calls server.listen() with no 'error' listener, so a port already in use ends the process with Node's
 * stack trace. Every server that starts listening after this gets a listener that, only when nothing else handles
 * the error, writes one line naming the address and exits non-zero (as a bad setting does). Once per process
 * (manifest.ts): a second subscription would add a second listener, and each would leave the error to the other.
 */
export function reportListenErrors(write: (line: string) => void = (l) => process.stderr.write(l)): void {
  subscribe(CHANNEL, (message) => watch((message as { server: Server }).server, write));
}

function watch(server: Server, write: (line: string) => void): void {
  const onError = (err: NodeJS.ErrnoException & { address?: string; port?: number }): void => {
    // Another listener handles it: not ours to end the process.
    if (server.listenerCount('error') > 1 || err.syscall !== 'listen') return;
    write(`[contracts] ${cannotListen(err)}. The gateway does not start.\n`);
    process.exit(CANNOT_LISTEN_EXIT_CODE);
  };
  server.on('error', onError);
  server.once('listening', () => server.removeListener('error', onError));
}

function cannotListen(err: NodeJS.ErrnoException & { address?: string; port?: number }): string {
  const where =
    err.port !== undefined ? `port ${err.port}${err.address ? ` on ${err.address}` : ''}` : 'the configured address';
  if (err.code === 'EADDRINUSE') return `cannot listen on ${where}: it is already in use (PORT / HOST)`;
  if (err.code === 'EACCES') return `cannot listen on ${where}: permission denied (PORT / HOST)`;
  if (err.code === 'EADDRNOTAVAIL') return `cannot listen on ${where}: no such address on this machine (PORT / HOST)`;
  return `cannot listen on ${where}: ${err.code ?? err.message}`;
}
