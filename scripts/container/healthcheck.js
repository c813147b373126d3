// The image's HEALTHCHECK: GET /health on the gateway's own port; healthy only on 200.
const port = process.env.PORT || 8080;
fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(3000) }).then(
  (res) => process.exit(res.status === 200 ? 0 : 1),
  () => process.exit(1),
);
