import { createServer, type Server } from 'node:http';
import type { GatewayMetrics } from './metrics';
import type { Logger } from '../logger';
import { errorMessage } from '../errors/describe';

const METRICS_PATH = '/metrics';

/**
 * Whether a scrape's Accept header prefers OpenMetrics 1.0 to the Prometheus text format. Prometheus asks with
 * `application/openmetrics-text;version=1.0.0;q=0.5,…,text/plain;version=0.0.4;q=0.3,…` and any type at 0.2 (3.x adds
 * `escaping=…` to each): the media ranges are weighed by `q`; of the other parameters only OpenMetrics' `version` counts
 * (1.0.0 or none: what prom-client writes). A tie goes to OpenMetrics, named where the text format is only accepted.
 */
export function prefersOpenMetrics(accept: string | undefined): boolean {
  let open = 0;
  let text = 0;
  for (const range of (accept ?? '').split(',')) {
    const [type, ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const param = (name: string): string | undefined =>
      params.find((p) => p.startsWith(`${name}=`))?.slice(name.length + 1);
    const weight = param('q');
    const q = weight === undefined ? 1 : Number(weight);
    if (!(q > 0 && q <= 1)) continue;
    if (type === 'application/openmetrics-text') {
      const version = param('version');
      if (version === undefined || version === '1.0.0') open = Math.max(open, q);
    } else if (type === 'text/plain' || type === 'text/*' || type === '*/*') text = Math.max(text, q);
  }
  return open > 0 && open >= text;
}

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
    metrics.exposition(prefersOpenMetrics(req.headers.accept)).then(
      ({ contentType, body }) =>
        res
          .writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store', Vary: 'Accept' })
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
