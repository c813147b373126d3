import { createServer } from 'node:net';

/** A TCP port free on 127.0.0.1 now (the OS picks it), for a process the benchmark starts. */
export function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}
