#!/usr/bin/env bash
# docker-compose.yml with podman-compose, as a user runs it: `up --build -d` with the file as it is (its own
# RabbitMQ on the project's network), the walk-through of docs/walk-through.md through the published port,
# `stop` (each service must exit 0), `down`. Called by container-check.sh, which has set up podman
# (CONTAINERS_CONF) and the base.
#   compose-check.sh <node base image> <work directory> [extra podman build arguments]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
. scripts/ci/lib.sh
BASE=${1:?usage: compose-check.sh <node base image> <work directory> [podman build arguments]}
W=${2:?usage: compose-check.sh <node base image> <work directory> [podman build arguments]}
BUILD_ARGS=${3:-}
PROJECT=ci$$compose
OFFICIAL_RABBITMQ=docker.io/library/rabbitmq:3.13-alpine
STAND_IN_RABBITMQ=localhost/contracts-ci/rabbitmq:stand-in

ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; exit 1; }

command -v podman-compose >/dev/null || { apt-get update -qq && apt-get install -y -qq podman-compose >/dev/null; }
dpkg-query -W podman-compose 2>/dev/null || podman-compose version 2>&1 | head -n 1

build_rabbitmq() {
  podman build --pull=never --network host --build-arg "BASE=$BASE" -t "$STAND_IN_RABBITMQ" \
    -f scripts/ci/rabbitmq-stand-in.Containerfile scripts/ci > "$W/build-rabbitmq.log" 2>&1 || { tail -n 20 "$W/build-rabbitmq.log"; return 1; }
}
RABBITMQ_IMAGE=$(image_or_stand_in "$OFFICIAL_RABBITMQ" "$STAND_IN_RABBITMQ" build_rabbitmq) || fail "a RabbitMQ image"
echo "RabbitMQ: $RABBITMQ_IMAGE"

export NODE_IMAGE=$BASE RABBITMQ_IMAGE ADMIN_PASSWORD=change-me-please
export JWT_SECRET=$(node -p "require('crypto').randomBytes(48).toString('base64')")
export GATEWAY_PORT=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
COMPOSE=(podman-compose -p "$PROJECT")

cleanup() {
  set +e
  # rm -v first: podman-compose 1.0.3's down leaves the containers' anonymous volumes (/var/lib/gateway) behind.
  for c in $(podman ps -a -q --filter "label=io.podman.compose.project=$PROJECT"); do podman rm -f -v -t 10 "$c" >/dev/null 2>&1; done
  "${COMPOSE[@]}" down -t 10 >/dev/null 2>&1
  podman network rm -f "${PROJECT}_default" >/dev/null 2>&1   # podman-compose 1.0.3's down leaves it
  podman rmi -i "localhost/${PROJECT}_gateway" "localhost/${PROJECT}_reference-services" >/dev/null 2>&1
}
trap cleanup EXIT

# Its own build of the file's two services (the layer cache of container-check.sh's build makes it quick).
"${COMPOSE[@]}" --podman-build-args="$BUILD_ARGS" up --build -d > "$W/compose-up.log" 2>&1 ||
  { tail -n 30 "$W/compose-up.log"; fail "podman-compose up --build -d"; }
ok "podman-compose up --build -d"
node scripts/ci/walkthrough.mjs "http://127.0.0.1:$GATEWAY_PORT" "$ADMIN_PASSWORD" all > "$W/compose-walkthrough.log" 2>&1 ||
  { cat "$W/compose-walkthrough.log"; podman logs --tail 20 "${PROJECT}_reference-services_1"; podman logs --tail 20 "${PROJECT}_gateway_1"; fail "the walk-through of docs/walk-through.md through podman-compose's stack"; }
ok "the walk-through of docs/walk-through.md through podman-compose's stack (port $GATEWAY_PORT)"
podman healthcheck run "${PROJECT}_gateway_1" >/dev/null 2>&1 || fail "the gateway's compose health check"
ok "the gateway's compose health check"
"${COMPOSE[@]}" stop > "$W/compose-stop.log" 2>&1 || { tail -n 20 "$W/compose-stop.log"; fail "podman-compose stop"; }
for service in gateway reference-services; do
  code=$(podman inspect --format '{{.State.ExitCode}}' "${PROJECT}_${service}_1")
  [ "$code" = 0 ] || { podman logs --tail 20 "${PROJECT}_${service}_1"; fail "podman-compose stop: $service exits 0 (got $code)"; }
  ok "podman-compose stop: $service exits 0"
done
