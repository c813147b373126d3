# Sidecar image: the gateway with this plugin. Minimal for now; the packaging issue hardens it.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
RUN npm ci --no-audit --no-fund
COPY plugin ./plugin
COPY policies ./policies
COPY conditions ./conditions
COPY sdk ./sdk
COPY examples ./examples
COPY scripts ./scripts
COPY test ./test
RUN npx tsc -p .

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0 EG_CONFIG_DIR=/var/lib/gateway START_REFERENCE_SERVICES=false
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY --from=build /app/dist ./dist
COPY config ./config
RUN mkdir -p /var/lib/gateway && chown node:node /var/lib/gateway
USER node
EXPOSE 8080
CMD ["node", "dist/scripts/start.js"]
