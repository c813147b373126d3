import { dirname } from 'node:path';
import express, { type NextFunction, type Request, type Response } from 'express';
import { setRouteTemplate } from '../observability/route-label';
import { FRESH_IDEMPOTENCY_KEY } from '../openapi/examples';

const DOCS_PATH = '/api-docs';
export const OPENAPI_PATH = '/api-docs/openapi.json';
export const ASYNCAPI_PATH = '/api-docs/asyncapi.json';
export const ASSETS_PATH = '/api-docs/assets';
/** The route label of Swagger UI's files (metrics, span names). */
export const ASSET_ROUTE = `${ASSETS_PATH}/:file`;

/** Swagger UI's files, from the npm package, served by the gateway itself: the page works offline, no CDN. */
const SWAGGER_UI_DIR = dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS = new Set(['swagger-ui.css', 'swagger-ui-bundle.js', 'favicon-32x32.png', 'favicon-16x16.png']);

/** Our initialiser (the package's own points at the petstore). A file, not inline, so a strict CSP can allow 'self' only. */
export const INIT_SCRIPT = `// The document's Idempotency-Key example is one fixed UUID: each request tried here sends a new key instead.
function freshIdempotencyKey(request) {
  var headers = request.headers || {};
  for (var name in headers) {
    if (name.toLowerCase() === 'idempotency-key' && headers[name] === ${JSON.stringify(FRESH_IDEMPOTENCY_KEY)}) headers[name] = newKey();
  }
  return request;
}
// randomUUID needs a secure context (https or localhost); getRandomValues does not.
function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return Array.prototype.map.call(crypto.getRandomValues(new Uint8Array(16)), function (b) { return (b + 256).toString(16).slice(1); }).join('');
}
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(OPENAPI_PATH)},
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    validatorUrl: null,
    displayOperationId: true,
    showExtensions: true,
    persistAuthorization: false,
    requestInterceptor: freshIdempotencyKey
  });
});
`;

const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>API documentation</title>
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <link rel="stylesheet" href="${ASSETS_PATH}/swagger-ui.css">
  <link rel="icon" type="image/png" href="${ASSETS_PATH}/favicon-32x32.png" sizes="32x32">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${ASSETS_PATH}/swagger-ui-bundle.js"></script>
  <script src="${ASSETS_PATH}/init.js"></script>
</body>
</html>
`;

/**
 * The page's Content-Security-Policy: nothing but the gateway itself. Scripts and styles are files from 'self' (no
 * inline script, no eval); images may be data: URIs (Swagger UI's icons); fetches go to the gateway only (the
 * document and "Try it out"). Whatever a contract smuggles into the document can then neither run nor call out.
 */
const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self' 'report-sample'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers on the page, its assets and the OpenAPI document, besides their own Content-Security-Policy. */
const HARDENING_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
});

/** For what is not a page (the document, the assets): it may load nothing and be framed by no one. */
export const NOTHING_CSP = "default-src 'none'; frame-ancestors 'none'";

export function setHardeningHeaders(res: Response, csp: string): void {
  for (const [name, value] of Object.entries(HARDENING_HEADERS)) res.setHeader(name, value);
  res.setHeader('Content-Security-Policy', csp);
}

function hardened(csp: string) {
  return (_req: Request, res: Response, next: NextFunction): void => {
    setHardeningHeaders(res, csp);
    next();
  };
}

/** Only what the page uses: the package also holds a demo page wired to a remote petstore. */
function onlyKnownAssets(req: Request, _res: Response, next: NextFunction): void {
  const name = req.path.replace(/^\//, '');
  if (!ASSETS.has(name)) return next('router');
  // A served asset is counted as the docs page's, not with the 404s (`unmatched`).
  setRouteTemplate(req, ASSET_ROUTE);
  next();
}

/** Mounts GET /api-docs (the page) and /api-docs/assets/* on the gateway's express app. */
export function mountDocsPage(app: express.Express): void {
  app.get([DOCS_PATH, `${DOCS_PATH}/`], (_req, res) => {
    setHardeningHeaders(res, DOCS_CSP);
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.end(DOCS_HTML);
  });
  app.get(`${ASSETS_PATH}/init.js`, (_req, res) => {
    setHardeningHeaders(res, NOTHING_CSP);
    res.setHeader('Content-Type', 'text/javascript; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.end(INIT_SCRIPT);
  });
  const assets = express.Router();
  assets.use(
    onlyKnownAssets,
    hardened(NOTHING_CSP),
    express.static(SWAGGER_UI_DIR, { index: false, fallthrough: true, maxAge: '1h' }),
  );
  app.use(ASSETS_PATH, assets);
}
