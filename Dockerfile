# Sidecar image: Express Gateway with express-gateway-plugin-contracts, configured by environment.
# The install stage installs the packed plugin with scripts/container/install.sh, at the versions the repository's
# package-lock.json pins; the runtime stage copies the installed /app and starts it with scripts/container/start.sh.
# test/packaging runs the same scripts and scripts/ci/container-check.sh builds and runs this file in CI.
#
#   docker build -t contracts-gateway .
#   docker run -p 8080:8080 -e BUS_URL=amqp://guest:guest@rabbitmq:5672 -e JWT_SECRET=... contracts-gateway
#   docker build --target reference-services -t contracts-reference-services .   # the example services
# With podman, build with `--format docker` (or BUILDAH_FORMAT=docker): the OCI format drops HEALTHCHECK.
#
# Nothing of the build stages reaches the runtime images but what `COPY --from` names: no compiler, no dev
# dependency, no tarball, no npm cache. The build reads no secret; the registry is reached by `npm ci` only.

# Override to pin the base by digest or to pull it from a mirror: --build-arg NODE_IMAGE=registry/node@sha256:…
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: compile and pack the plugin exactly as it is published (npm pack) ----
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.json ./
# The SDK is a workspace of the repository: npm ci needs its package.json to read the lockfile.
COPY sdk/package.json ./sdk/package.json
RUN npm ci --no-audit --no-fund
COPY plugin ./plugin
COPY policies ./policies
COPY conditions ./conditions
COPY sdk ./sdk
COPY examples ./examples
COPY scripts ./scripts
COPY config ./config
COPY docs ./docs
COPY README.md ./
# The project's own compiler (npm run build = node_modules/.bin/tsc), never `npx tsc`, which fetches an
# unrelated package when the local one is missing. `npm pack --pack-destination` needs the folder to exist.
# /tmp/reference: the compiled JavaScript the reference services run (no tests, maps or declarations).
RUN npm run build \
 && mkdir -p /tmp/pack \
 && npm pack --ignore-scripts --pack-destination /tmp/pack \
 && mv /tmp/pack/express-gateway-plugin-contracts-*.tgz /tmp/plugin.tgz \
 && mkdir -p /tmp/reference/dist \
 && cp -R dist/plugin dist/policies dist/conditions dist/sdk dist/examples dist/scripts /tmp/reference/dist/ \
 && find /tmp/reference \( -name '*.map' -o -name '*.d.ts' \) -delete

# ---- install: /app = the plugin tarball + its production dependencies, pinned by package-lock.json ----
FROM ${NODE_IMAGE} AS install
COPY scripts/container/ /opt/contracts/
COPY package-lock.json /tmp/package-lock.json
COPY --from=build /tmp/plugin.tgz /tmp/plugin.tgz
# install.sh writes /app's lockfile from the repository's, runs `npm ci --omit=dev` and removes the tarball.
RUN /opt/contracts/install.sh /tmp/plugin.tgz /tmp/package-lock.json /app

# ---- runtime: the gateway only (production dependencies, non-root) ----
FROM ${NODE_IMAGE} AS gateway
ENV NODE_ENV=production \
    APP_DIR=/app \
    PORT=8080 \
    HOST=0.0.0.0 \
    EG_CONFIG_DIR=/var/lib/gateway \
    EG_CONFIG_SOURCE=/etc/gateway \
    BUS_URL=embedded \
    SHUTDOWN_GRACE_MS=8000
# Owned by root: the gateway (user node) can read its code but not change it.
COPY --from=install /app /app
RUN mkdir -p /var/lib/gateway /etc/gateway \
 && chown node:node /var/lib/gateway
USER node
WORKDIR /app
EXPOSE 8080
# The plugin rewrites gateway.config.yml here; mount your hand-written files at /etc/gateway (read-only is fine).
VOLUME ["/var/lib/gateway"]
# Docker's and podman's default stop timeout is 10 s: SHUTDOWN_GRACE_MS (8 s here) stays below it; raise both together.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["node", "/app/healthcheck.js"]
CMD ["/app/start.sh"]

# ---- reference-services: the example users and auth services (docker-compose.yml), not for production ----
FROM ${NODE_IMAGE} AS reference-install
WORKDIR /app
COPY package.json package-lock.json ./
COPY sdk/package.json ./sdk/package.json
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE} AS reference-services
ENV NODE_ENV=production
COPY --from=reference-install /app /app
COPY --from=build /tmp/reference/dist /app/dist
WORKDIR /app
# Without DATABASE_URL the services keep their data in the embedded database here (one container at a time).
ENV DATA_DIR=/var/lib/reference-services
RUN mkdir -p /var/lib/reference-services && chown node:node /var/lib/reference-services && chmod 700 /var/lib/reference-services
VOLUME ["/var/lib/reference-services"]
USER node
# SIGTERM withdraws the contracts and finishes the handlers in flight within 10 s (the default stop timeout).
STOPSIGNAL SIGTERM
CMD ["node", "dist/scripts/reference-services.js"]

# The last stage is what a plain `docker build` produces: the gateway.
FROM gateway
