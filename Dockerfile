# Sidecar image: Express Gateway with express-gateway-plugin-contracts, configured by environment.
# The runtime stage installs the packed plugin with scripts/container/install.sh and starts it with
# scripts/container/start.sh; test/packaging runs the same two scripts, so image and tests cannot drift.
#
#   docker build -t contracts-gateway .
#   docker run -p 8080:8080 -e BUS_URL=amqp://guest:guest@rabbitmq:5672 -e JWT_SECRET=... contracts-gateway
#   docker build --target reference-services -t contracts-reference-services .   # the example services

# ---- build: compile and pack the plugin exactly as it is published (npm pack) ----
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.json ./
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
RUN npx tsc -p . && npm pack --ignore-scripts --pack-destination /tmp/pack && mv /tmp/pack/*.tgz /tmp/plugin.tgz

# ---- runtime: the gateway only (production dependencies, non-root) ----
FROM node:20-bookworm-slim AS gateway
ENV NODE_ENV=production \
    APP_DIR=/app \
    PORT=8080 \
    HOST=0.0.0.0 \
    EG_CONFIG_DIR=/var/lib/gateway \
    EG_CONFIG_SOURCE=/etc/gateway \
    BUS_URL=embedded \
    SHUTDOWN_GRACE_MS=8000
COPY scripts/container/ /opt/contracts/
COPY --from=build /tmp/plugin.tgz /tmp/plugin.tgz
# install.sh runs `npm ci --omit=dev` in /app.
RUN /opt/contracts/install.sh /tmp/plugin.tgz /app \
 && rm /tmp/plugin.tgz \
 && mkdir -p /var/lib/gateway /etc/gateway \
 && chown -R node:node /var/lib/gateway
USER node
WORKDIR /app
EXPOSE 8080
# The plugin rewrites gateway.config.yml here; mount your hand-written files at /etc/gateway (read-only is fine).
VOLUME ["/var/lib/gateway"]
# Docker's default stop timeout is 10 s: SHUTDOWN_GRACE_MS (8 s here) stays below it; raise both together.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["node", "/app/healthcheck.js"]
CMD ["/app/start.sh"]

# ---- reference-services: the example users and auth services (docker-compose.yml), not for production ----
FROM node:20-bookworm-slim AS reference-services
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /src/dist ./dist
# Without DATABASE_URL the services keep their data in the embedded database here (one container at a time).
ENV DATA_DIR=/var/lib/reference-services
RUN mkdir -p /var/lib/reference-services && chown node:node /var/lib/reference-services && chmod 700 /var/lib/reference-services
VOLUME ["/var/lib/reference-services"]
USER node
CMD ["node", "dist/scripts/reference-services.js"]

# The last stage is what a plain `docker build` produces: the gateway.
FROM gateway
