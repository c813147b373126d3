import { createServer, type Server } from 'node:http';

/**
 * GET /health on `port` for an orchestrator's probes: 200 `{"status":"ok"}` when `healthy` resolves true within
 * 2 s, else 503 `{"status":"unavailable"}`, each with the fields `details` gives (the bus node); 404 for any other
 * path. Nothing else is served.
 */
export function startHealthServer(
  port: number,
  healthy: () => Promise<boolean>,
  host = '0.0.0.0',
  details: () => Record<string, unknown> = () => ({}),
): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/health') {
      res.writeHead(404).end();
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 2000)));
    void Promise.race([healthy().catch(() => false), late]).then((ok) => {
      clearTimeout(timer);
      res
        .writeHead(ok ? 200 : 503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ status: ok ? 'ok' : 'unavailable', ...details() }));
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
