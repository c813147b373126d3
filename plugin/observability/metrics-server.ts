import { createServer, type Server } from 'node:http';
import type { GatewayMetrics } from './metrics';
import type { Logger } from '../logger';
import { errorMessage } from '../errors/describe';

const METRICS_PATH = '/metrics';

/**
 * The Prometheus scrape endpoint on a port of its own: the API's port never serves it, so publishing the API does
 * not publish the gateway's internals, and a scrape never waits behind API traffic in the host's pipeline.
 */
export function startMetricsServer(metrics: GatewayMetrics, port: number, host: string, log: Logger): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== METRICS_PATH || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Not found: GET /metrics\n');
      return;
    }
    metrics.exposition().then(
      ({ contentType, body }) =>
        res
          .writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' })
          .end(req.method === 'HEAD' ? undefined : body),
      (err) => {
        log.error(`metrics: scrape failed: ${errorMessage(err)}`);
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n');
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      log.info(`metrics on http://${host}:${port}${METRICS_PATH}`);
      resolve(server);
    });
  });
}
