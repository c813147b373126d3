import { PassThrough } from 'node:stream';
/**
 * What Express Gateway 1.16 puts on a request for one pipeline run (`req.egContext`, made in lib/gateway/pipelines.js:
 * a new one each time a request reaches a matching apiEndpoint); only what the plugin reads or sets.
 */
interface EgContext {
  /** The apiEndpoint entry of gateway.config.yml the request matched (a generated one carries its `contract:`). */
  apiEndpoint?: { contract?: unknown };
  /** What the host's `proxy` sends instead of the request when set (its request-transformer sets it too). */
  requestStream?: unknown;
}

/** The request's egContext; undefined outside the host (tests, the benchmark) or before a pipeline runs. */
function egContextOf(req: object): EgContext | undefined {
  return (req as { egContext?: EgContext }).egContext;
}

/**
 * The host's `proxy` sends `req.egContext.requestStream` instead of the request when it is set (as its own
 * request-transformer does): `raw`, the body a policy already read, is handed back there unchanged.
 */
export function handBodyToProxy(req: object, raw: Buffer): void {
  const run = egContextOf(req);
  if (!run || run.requestStream) return;
  const stream = new PassThrough();
  stream.end(raw);
  run.requestStream = stream;
}

/**
 * The host's token for the pipeline run the request is in: Express Gateway makes a new egContext each time a request
 * reaches a matching apiEndpoint, and gives no other sign that one pipeline ended and another began. Undefined
 * outside the host (tests, the benchmark): one run per request then.
 */
export function pipelineRunOf(req: object): object | undefined {
  return egContextOf(req);
}

/** The `contract:` the generated apiEndpoint entry of this pipeline run carries, if any (unchecked: the caller checks it). */
export function endpointRouteOf(req: object): unknown {
  return egContextOf(req)?.apiEndpoint?.contract;
}
