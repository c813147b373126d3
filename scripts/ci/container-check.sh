#!/usr/bin/env bash
# CI's container check: builds both Dockerfile targets with podman and runs the images as a platform team would.
#   scripts/ci/container-check.sh            (from the repository; .ci/run calls it after npm test)
# Checks, each printed as `ok`/`FAIL`; the first failure ends the script with a non-zero status:
#   the build from the lockfile (installed versions = package-lock.json, no dev dependency), no build-only file,
#   tarball or secret in any layer of the image's own; HEALTHCHECK, user node (uid 1000), node as PID 1, /health,
#   read-only root filesystem, graceful stop on SIGTERM within the grace period; the walk-through of
#   docs/walk-through.md (walkthrough.mjs) with the gateway and reference-services containers over the local
#   RabbitMQ (127.0.0.1:5672, guest/guest); then
#   docker-compose.yml with podman-compose (compose-check.sh).
# Leaves nothing behind but the base images (the stand-ins, where built): containers, their volumes, the images it
# built (kept with KEEP_IMAGES=1) and the broker exchanges of its prefix are removed, on failure too.
#
# Environment:
#   CONTAINER_BASE        base image for the Dockerfile's NODE_IMAGE (default: node:24-bookworm-slim if it can be
#                         pulled, else a stand-in built once from Debian's packages, see stand-in-base.sh)
#   CONTAINER_CHECK_DIR   work directory (default: a temporary one, removed at the end)
#   KEEP_IMAGES=1         keep contracts-gateway:ci, contracts-reference-services:ci and the build cache (for a
#                         developer's repeated runs; CI leaves them out)
#   CHECK_PERSISTENCE=0   leave out the check that the walk-through's data survives a restart of the
#                         reference-services container (their embedded database lives on the image's volume
#                         /var/lib/reference-services; pass REFERENCE_ENV="-e DATABASE_URL=postgres://…" for PostgreSQL)
#   REFERENCE_ENV         extra `podman run` arguments for the reference-services container
#   COMPOSE_CHECK=0       leave out docker-compose.yml with podman-compose (compose-check.sh: 2 to 4 minutes, as
#                         podman-compose builds OCI images, which share no layer cache with the docker-format build)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
. scripts/ci/lib.sh
export DEBIAN_FRONTEND=noninteractive
W=${CONTAINER_CHECK_DIR:-$(mktemp -d /tmp/container-check.XXXXXX)}
mkdir -p "$W"
RUN_ID=ci$$
GATEWAY_IMAGE=localhost/contracts-gateway:ci
REFERENCE_IMAGE=localhost/contracts-reference-services:ci
OFFICIAL_BASE=docker.io/library/node:24-bookworm-slim
STAND_IN_BASE=localhost/contracts-ci/node:24-bookworm-slim
GRACE_SECONDS=10          # podman's and Docker's default stop timeout; the image's SHUTDOWN_GRACE_MS is 8000
ADMIN_PASSWORD=change-me-please
PREFIX=$RUN_ID-$RANDOM
BUS_URL=amqp://guest:guest@127.0.0.1:5672

step() { printf '\n== %s (%ss)\n' "$*" "$SECONDS"; }
PASSED=0
ok() { echo "ok   $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL $*"; exit 1; }
# check <description> <command…>: runs the command quietly, prints ok/FAIL with its output on failure.
check() {
  local what=$1 out
  shift
  if out=$("$@" 2>&1); then ok "$what${out:+ ($(tail -n 1 <<<"$out"))}"; else echo "$out" | tail -n 20; fail "$what"; fi
}

CONTAINERS=()
cleanup() {
  local status=$?
  set +e
  # One at a time: podman 4.3 skips all names of a `rm` when one of them is unknown.
  for c in "${CONTAINERS[@]}"; do podman rm -f -v -i -t 0 "$c" >/dev/null 2>&1; done
  node -e "
    const amqp = require('amqplib');
    amqp.connect('$BUS_URL').then(async (c) => {
      for (const x of ['requests', 'discovery']) { const ch = await c.createChannel(); ch.on('error', () => {}); await ch.deleteExchange('$PREFIX.' + x).catch(() => {}); }
      await c.close();
    }).catch(() => {});" 2>/dev/null
  if [ "${KEEP_IMAGES:-}" != 1 ]; then
    podman rmi -i "$GATEWAY_IMAGE" "$REFERENCE_IMAGE" >/dev/null 2>&1
    # The build stages' intermediate images (no name) of this and earlier runs; named images, the base included, stay.
    podman image prune -f >/dev/null 2>&1
  fi
  [ -n "${CONTAINER_CHECK_DIR:-}" ] || rm -rf "$W"
  if [ $status -eq 0 ]; then step "container check: all $PASSED checks passed"; else step "container check: FAILED after $PASSED checks passed"; fi
  exit $status
}
trap cleanup EXIT

step "container engine: podman, runc, mmdebstrap"
if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v mmdebstrap >/dev/null; then
  apt-get update -qq && apt-get install -y -qq podman runc mmdebstrap >/dev/null
fi
# This kind of VM: root lacks CAP_SYS_RESOURCE, so podman's default rlimits (nofile 1048576) fail in the runtime
# ("setrlimit RLIMIT_NOFILE: Operation not permitted"): use the host's own limits. crun 1.8 refuses the hybrid
# cgroup v1/v2 layout ("cgroups in hybrid mode not supported"): use runc.
cat > "$W/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=32768:32768"]
[engine]
runtime = "runc"
EOF
export CONTAINERS_CONF=$W/containers.conf
podman --version

# npm inside the build must trust what the host's npm trusts (this machine reaches the registry through a
# TLS-inspecting proxy whose CA is only in the host's bundle). Mounted at build time only (podman build -v at npm's
# global config directory, /usr/local/etc), so nothing of it ends up in a layer; the layer check below proves it.
mkdir -p "$W/buildca"
BUILD=(podman build --pull=never --format docker --network host)
CA_MOUNT=
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$W/buildca/"
  echo 'cafile=/usr/local/etc/ca-certificates.crt' > "$W/buildca/npmrc"
  CA_MOUNT="-v $W/buildca:/usr/local/etc:ro"
  BUILD+=(-v "$W/buildca:/usr/local/etc:ro")
fi

step "base image"
BASE=${CONTAINER_BASE:-$(image_or_stand_in "$OFFICIAL_BASE" "$STAND_IN_BASE" \
  bash "$REPO/scripts/ci/stand-in-base.sh" "$STAND_IN_BASE" "$W/base")} || fail "a base image"
echo "base: $BASE (node $(podman run --rm "$BASE" node --version))"
BUILD+=(--build-arg "NODE_IMAGE=$BASE")

step "build the gateway image (default target)"
start=$SECONDS
"${BUILD[@]}" -t "$GATEWAY_IMAGE" . > "$W/build-gateway.log" 2>&1 || { tail -n 40 "$W/build-gateway.log"; fail "build the gateway image"; }
ok "gateway image built in $((SECONDS - start)) s"
step "build the reference-services image (--target reference-services)"
start=$SECONDS
"${BUILD[@]}" --target reference-services -t "$REFERENCE_IMAGE" . > "$W/build-reference.log" 2>&1 ||
  { tail -n 40 "$W/build-reference.log"; fail "build the reference-services image"; }
ok "reference-services image built in $((SECONDS - start)) s"
podman image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -F -e "$GATEWAY_IMAGE" -e "$REFERENCE_IMAGE" -e "$BASE"
podman history --format '{{.Size}}\t{{.CreatedBy}}' "$GATEWAY_IMAGE" | cut -c1-150 | head -n 12

step "gateway image: configuration, contents, layers"
inspect() { podman image inspect --format "$1" "$GATEWAY_IMAGE"; }
check "HEALTHCHECK runs node /app/healthcheck.js" grep -q '/app/healthcheck.js' <<<"$(inspect '{{json .Config.Healthcheck}}')"
check "runs as user node" test "$(inspect '{{.Config.User}}')" = node
check "stops with SIGTERM" test "$(inspect '{{.Config.StopSignal}}')" = SIGTERM
# Linked folders of the repository (file: helpers of the tests) are lockfile entries never installed in the image.
check "installed versions are package-lock.json's, no dev dependency" \
  podman run --rm --no-healthcheck --entrypoint node -v "$REPO/package-lock.json:/tmp/repo-lock.json:ro" "$GATEWAY_IMAGE" -e '
    const repo = require("/tmp/repo-lock.json").packages, inst = require("/app/node_modules/.package-lock.json").packages;
    const bad = [];
    for (const [path, e] of Object.entries(repo)) {
      if (!path || e.link || !path.startsWith("node_modules/")) continue;
      const got = inst[path];
      if (e.dev && got) bad.push(`${path}: a dev dependency is installed`);
      if (!e.dev && !e.optional && !e.devOptional && (!got || got.version !== e.version || got.integrity !== e.integrity)) bad.push(`${path}: ${got ? got.version : "missing"}, lockfile ${e.version}`);
    }
    for (const path of Object.keys(inst)) if (!repo[path] && path !== "node_modules/express-gateway-plugin-contracts") bad.push(`${path}: not in the lockfile`);
    if (bad.length) { console.error(bad.slice(0, 20).join("\n")); process.exit(1); }'
# Every layer the Dockerfile adds (not the base's): no tarball, npm cache or config, sources, compiler or key.
podman save --format docker-archive -o "$W/gateway.tar" "$GATEWAY_IMAGE" >/dev/null 2>&1
tar -xf "$W/gateway.tar" -C "$W" manifest.json
base_layers=$(podman image inspect --format '{{len .RootFS.Layers}}' "$BASE")
: > "$W/layer-files.txt"
for layer in $(node -e "console.log(require('$W/manifest.json')[0].Layers.slice($base_layers).join('\n'))"); do
  tar -xOf "$W/gateway.tar" "$layer" | tar -t >> "$W/layer-files.txt"
done
rm -f "$W/gateway.tar"
# Files the build could have left behind, and none that could carry a secret: matches are listed and fail the
# check. Inside the dependencies (app/node_modules) only the compiler and test runner are looked for: their own
# files (a package's test fixtures, say) are theirs, pinned by the lockfile.
leftovers() {
  grep -E '\.tgz$|(^|/)\.?npmrc$|^root/|^src/|^tmp/.|^opt/contracts|node_modules/(typescript|mocha)/|^app/node_modules/express-gateway-plugin-contracts/.*(\.map|[^d]\.ts)$' \
    "$W/layer-files.txt" > "$W/leftovers.txt" || true
  grep -v '^app/node_modules/' "$W/layer-files.txt" | grep -E '\.pem$|\.key$|\.crt$|(^|/)\.env' >> "$W/leftovers.txt" || true
  if [ -s "$W/leftovers.txt" ]; then head -n 20 "$W/leftovers.txt"; return 1; fi
}
check "no tarball, npm cache or config, source, compiler, key or CA bundle in the image's $(wc -l < "$W/layer-files.txt") added files" leftovers

GW_PORT=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
GW=http://127.0.0.1:$GW_PORT
JWT_SECRET=$(node -p "require('crypto').randomBytes(48).toString('base64')")
health() { curl -fs -o /dev/null --max-time 3 "$GW/health"; }
await_health() { for _ in $(seq 60); do health && return 0; sleep 1; done; return 1; }
# stops container $1, checks exit 0 within the grace period and the gateway's log line
graceful_stop() {
  local name=$1 start=$SECONDS
  podman stop -t "$GRACE_SECONDS" "$name" >/dev/null
  local took=$((SECONDS - start)) code
  code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
  [ "$code" = 0 ] || { echo "exit status $code after ${took}s"; podman logs --tail 20 "$name"; return 1; }
  [ "$took" -lt "$GRACE_SECONDS" ] || { echo "took ${took}s, the grace period is ${GRACE_SECONDS}s"; return 1; }
  echo "stopped in ${took}s"
}

# start <name> <podman run arguments…>: detached, on the host's network (the local RabbitMQ), read-only root.
# --read-only-tmpfs=false: no writable /tmp either, as with Docker's --read-only and Kubernetes'
# readOnlyRootFilesystem; the gateway's only writable place is its /var/lib/gateway volume. podman's complaints
# that it cannot schedule health checks through systemd (none here) go to podman.log: the check runs them itself.
start() {
  local name=$1
  shift
  CONTAINERS+=("$name")
  podman run -d --name "$name" --network host --read-only --read-only-tmpfs=false "$@" >/dev/null 2>>"$W/podman.log" ||
    { tail -n 20 "$W/podman.log"; fail "start $name"; }
}

step "gateway alone (embedded bus), read-only root filesystem"
start "$RUN_ID-gateway" -e PORT="$GW_PORT" -e JWT_SECRET="$JWT_SECRET" "$GATEWAY_IMAGE"
await_health || { podman logs --tail 30 "$RUN_ID-gateway"; fail "GET /health answers 200"; }
ok "GET /health answers 200"
check "HEALTHCHECK reports healthy" podman healthcheck run "$RUN_ID-gateway"
check "runs as uid 1000" test "$(podman exec "$RUN_ID-gateway" id -u)" = 1000
# PID 1's command line, not /proc/1/comm: Node 24 names its main thread "MainThread".
check "node is PID 1" test "$(podman exec "$RUN_ID-gateway" sh -c 'tr "\0" "\n" </proc/1/cmdline | head -n 1')" = node
check "the root filesystem is read-only" podman exec "$RUN_ID-gateway" sh -c '! touch /app/x 2>/dev/null && ! touch /tmp/x 2>/dev/null'
check "the generated config is written to the /var/lib/gateway volume" podman exec "$RUN_ID-gateway" test -s /var/lib/gateway/gateway.config.yml
check "SIGTERM: exit 0 within ${GRACE_SECONDS}s" graceful_stop "$RUN_ID-gateway"
check "the gateway logged its graceful stop" sh -c "podman logs '$RUN_ID-gateway' 2>&1 | grep -q 'SIGTERM: stopping'"

if ! (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null; then fail "RabbitMQ answers on 127.0.0.1:5672 (.ci/run starts it)"; fi
step "gateway + reference services over RabbitMQ (prefix $PREFIX): the walk-through of docs/walk-through.md"
BUS=(-e "BUS_URL=$BUS_URL" -e "BUS_PREFIX=$PREFIX" -e "JWT_SECRET=$JWT_SECRET")
read -r -a EXTRA <<<"${REFERENCE_ENV:-}"
start "$RUN_ID-reference" "${BUS[@]}" -e ADMIN_PASSWORD="$ADMIN_PASSWORD" "${EXTRA[@]}" "$REFERENCE_IMAGE"
start "$RUN_ID-gateway-bus" "${BUS[@]}" -e PORT="$GW_PORT" \
  -v "$REPO/deploy/gateway.config.example.yml:/etc/gateway/gateway.config.yml:ro" "$GATEWAY_IMAGE"
await_health || { podman logs --tail 30 "$RUN_ID-gateway-bus"; fail "GET /health answers 200 with RabbitMQ"; }
check "HEALTHCHECK reports healthy with RabbitMQ" podman healthcheck run "$RUN_ID-gateway-bus"
node scripts/ci/walkthrough.mjs "$GW" "$ADMIN_PASSWORD" all ||
  { podman logs --tail 30 "$RUN_ID-reference"; podman logs --tail 30 "$RUN_ID-gateway-bus"; fail "the walk-through of docs/walk-through.md"; }
ok "the walk-through of docs/walk-through.md, gateway and reference-services containers over RabbitMQ"

if [ "${CHECK_PERSISTENCE:-1}" = 1 ]; then
  step "the reference services' data across a restart of their container"
  node scripts/ci/walkthrough.mjs "$GW" "$ADMIN_PASSWORD" persist-write || fail "create a user before the restart"
  podman restart -t "$GRACE_SECONDS" "$RUN_ID-reference" >/dev/null
  node scripts/ci/walkthrough.mjs "$GW" "$ADMIN_PASSWORD" persist-read || fail "the user is still there after the restart"
  ok "the reference services' data survives a restart of their container"
else
  echo "skip the data across a restart of the reference services (CHECK_PERSISTENCE=0)"
fi

check "reference services: SIGTERM, exit 0 within ${GRACE_SECONDS}s" graceful_stop "$RUN_ID-reference"
check "gateway: SIGTERM, exit 0 within ${GRACE_SECONDS}s" graceful_stop "$RUN_ID-gateway-bus"

if [ "${COMPOSE_CHECK:-1}" = 1 ]; then
  step "docker-compose.yml with podman-compose (its own RabbitMQ)"
  bash scripts/ci/compose-check.sh "$BASE" "$W" "$CA_MOUNT" || fail "docker-compose.yml with podman-compose"
  ok "docker-compose.yml with podman-compose"
fi
