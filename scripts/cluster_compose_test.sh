#!/usr/bin/env bash
# The cluster's Compose files started here, on one machine without a GPU (`make cluster-compose-test`,
# docs/cluster.md "Deploy"): the head's Redis, Ray head and supervisor from
# docker-compose.cluster-head.yml, and one rollout node from docker-compose.cluster-node.yml, built
# from the GPU images (halo-gpu-base: `make gpu-images-test` builds it). The supervisor must place
# the node's actor, whose sites, env and reward services answer on the node's address; then the
# node's raylet is SIGKILLed, and the container's restart policy and the supervisor must bring the
# node back (a new Ray node, running, its services answering); then the Ray head's container is
# restarted, and the supervisor and the node must come back by themselves. Not started:
# the trainer and the node's policy replica (each reserves a GPU; the images themselves are smoke-
# tested by `make gpu-images-test`) and the http store's data-server (a profile).
#
# Both files use host networking. Here the head and the node share the machine's loopback: the head
# on 127.0.0.2, the node on 127.0.0.3 (the machine's own Redis keeps 127.0.0.1:6379). Where no
# registry answers, Redis and Chromium come from Debian's packages: HALO_REDIS_IMAGE and
# HALO_NODE_BASE_IMAGE/HALO_NODE_CHROMIUM_PATH name local builds instead of redis:7-alpine and
# Playwright's download. Figures go to bench/results/cluster_compose.json.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BASE="${HALO_GPU_BASE_IMAGE:-halo-gpu-base:latest}"
DEBIAN_IMAGE="${HALO_GPU_DEBIAN_IMAGE:-halo-debian:bookworm}"
REDIS_IMAGE=halo-redis:local
NODE_BASE=halo-gpu-base-chromium:local
HEAD_IP=127.0.0.2
NODE_IP=127.0.0.3
PLACE_TIMEOUT_S="${HALO_CLUSTER_COMPOSE_TIMEOUT_S:-420}"
log() { printf '[cluster-compose %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
now() { date +%s; }
fail() { log "FAILED: $*"; exit 1; }
compose() { if command -v docker-compose >/dev/null 2>&1; then docker-compose "$@"; else docker compose "$@"; fi; }

docker info >/dev/null 2>&1 || { log "no Docker engine answers (docs/compose.md: install docker.io, start dockerd)"; exit 1; }
docker image inspect "$BASE" >/dev/null 2>&1 || { log "no $BASE image: make gpu-images-test builds it"; exit 1; }
. "$ROOT/scripts/extra_ca_certs.sh"

t0=$(now)
log "building $REDIS_IMAGE and $NODE_BASE from Debian's packages"
docker build -q --network host -t "$REDIS_IMAGE" - >/dev/null <<EOF
FROM $DEBIAN_IMAGE
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/*
EOF
docker build -q --network host -t "$NODE_BASE" - >/dev/null <<EOF
FROM $BASE
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    chromium fonts-liberation fonts-dejavu-core && rm -rf /var/lib/apt/lists/*
EOF

work=$(mktemp -d)
env_file="$work/cluster.env"
cat > "$env_file" <<EOF
HALO_CLUSTER_HEAD_IP=$HEAD_IP
HALO_NODE_IP=$NODE_IP
HALO_NODE_NAME=n1
HALO_REDIS_PASSWORD=$(openssl rand -hex 16)
HALO_CLUSTER_TOKEN=$(openssl rand -hex 32)
HALO_TRAINER_API_TOKEN=$(openssl rand -hex 16)
HALO_CLUSTER_DATA=$work/data
HALO_CLUSTER_ROLLOUT_NODES=1
HALO_CLUSTER_WORKERS_PER_NODE=1
HALO_REDIS_IMAGE=$REDIS_IMAGE
HALO_NODE_BASE_IMAGE=$NODE_BASE
HALO_NODE_CHROMIUM_PATH=/usr/bin/chromium
HALO_ENV_FILE=$work/cluster.env
EOF
password=$(sed -n 's/^HALO_REDIS_PASSWORD=//p' "$env_file")
echo "HALO_CLUSTER_REDIS_URL=redis://:$password@$HEAD_IP:6379/0" >> "$env_file"
mkdir -p "$work/data"
head=(-p halo-cluster-head -f docker-compose.cluster-head.yml --env-file "$env_file")
node=(-p halo-cluster-node -f docker-compose.cluster-node.yml --env-file "$env_file")
cleanup() {
  log "down"
  compose "${node[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  compose "${head[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

log "building the head's and the node's images (Dockerfile.trainer, Dockerfile.env on the locked base)"
compose "${head[@]}" build -q ray-head supervisor >/dev/null
compose "${node[@]}" build -q rollout-node >/dev/null
t_build=$(( $(now) - t0 ))

log "the head: redis, ray-head, supervisor"
t1=$(now)
compose "${head[@]}" up -d redis ray-head supervisor >/dev/null
log "the node: rollout-node (ray start --address $HEAD_IP:6380)"
compose "${node[@]}" up -d rollout-node >/dev/null

status() { compose "${head[@]}" exec -T supervisor python -m halo_cluster status "$@"; }
# Running, with every process of the node alive and its services answering on the node's address
# (the supervisor reads a node's processes on the look after the one that saw it start).
check_node() {
  python3 - "$1" "$NODE_IP" <<'EOF'
import json, sys, urllib.request
record, node_ip = json.loads(sys.argv[1]), sys.argv[2]
[node] = record["nodes"]
assert node["state"] == "running" and node["address"] == node_ip, node
alive = [p["name"] for p in node["processes"] if p["alive"]]
assert len(alive) == len(node["processes"]) >= 4, node["processes"]  # sites, env, reward, a worker
urls = node["urls"]
assert {"sites", "env", "reward"} <= set(urls), urls
for name, url in urls.items():
    assert node_ip in url, (name, url)
    urllib.request.urlopen(f"{url}/health", timeout=10).read()
print(f"{node['name']} running on {node['address']}: {', '.join(alive)} alive; {', '.join(sorted(urls))} answered")
EOF
}
t_running=""
while (( $(now) - t1 < PLACE_TIMEOUT_S )); do
  if record=$(status --json 2>/dev/null) && check_node "$record" 2>/dev/null; then t_running=$(( $(now) - t1 )); break; fi
  sleep 3
done
status || true
[ -n "$t_running" ] || {
  check_node "$(status --json 2>/dev/null)" || true
  compose "${head[@]}" logs --tail 40 supervisor ray-head >&2 || true
  compose "${node[@]}" logs --tail 60 rollout-node >&2 || true
  fail "the rollout node was not running with its services within ${PLACE_TIMEOUT_S}s"
}
check_node "$record"

log "the node's raylet SIGKILLed: its container exits, restarts (restart: unless-stopped) and the node is placed again"
node_id() { python3 -c "import json, sys; print(json.loads(sys.argv[1])['nodes'][0]['node_id'])" "$1"; }
# Until the node runs again as another Ray node than $1, its services answering: sets `record` and
# `placed_after_s` (seconds since $2; empty when it was not placed within PLACE_TIMEOUT_S).
await_placed_again() {
  local before=$1 since=$2
  placed_after_s=""
  while (( $(now) - since < PLACE_TIMEOUT_S )); do
    if record=$(status --json 2>/dev/null) && check_node "$record" >/dev/null 2>&1 && [ "$(node_id "$record")" != "$before" ]; then
      placed_after_s=$(( $(now) - since )); return
    fi
    sleep 3
  done
}
before=$(node_id "$record")
container=$(compose "${node[@]}" ps -q rollout-node)
# The raylet is the process whose argv[0] ends in /raylet (ps is not in the image).
compose "${node[@]}" exec -T rollout-node python -c "
import os, signal
for pid in filter(str.isdigit, os.listdir('/proc')):
    try:
        argv0 = open(f'/proc/{pid}/cmdline', 'rb').read().split(b'\0')[0]
    except OSError:
        continue
    if argv0.endswith(b'/raylet'):
        os.kill(int(pid), signal.SIGKILL)
" || true
await_placed_again "$before" "$(now)"
t_back=$placed_after_s
restarts=$(docker inspect -f '{{.RestartCount}}' "$container")
status || true
[ -n "$t_back" ] || fail "the node was not placed again within ${PLACE_TIMEOUT_S}s of its raylet's kill (container restarts: $restarts)"
(( restarts >= 1 )) || fail "the node's container did not restart (RestartCount $restarts)"
check_node "$record"

log "the Ray head's container restarted: the supervisor (in its process namespace) and the node's raylet lose it; both must come back by themselves and the node be placed again"
before=$(node_id "$record")
head_container=$(compose "${head[@]}" ps -q ray-head)
supervisor_container=$(compose "${head[@]}" ps -q supervisor)
node_restarts_before=$(docker inspect -f '{{.RestartCount}}' "$container")
compose "${head[@]}" restart ray-head >/dev/null
await_placed_again "$before" "$(now)"
t_head=$placed_after_s
supervisor_restarts=$(docker inspect -f '{{.RestartCount}}' "$supervisor_container")
node_restarts=$(( $(docker inspect -f '{{.RestartCount}}' "$container") - node_restarts_before ))
status || true
[ -n "$t_head" ] || {
  compose "${head[@]}" logs --tail 40 supervisor ray-head >&2 || true
  compose "${node[@]}" logs --tail 40 rollout-node >&2 || true
  fail "the node was not placed again within ${PLACE_TIMEOUT_S}s of the Ray head's restart (supervisor restarts: $supervisor_restarts, node: $node_restarts)"
}
check_node "$record"
log "placed again ${t_head}s after the head's restart (supervisor container restarts: $supervisor_restarts; node container restarts: $node_restarts; head container $head_container)"

mkdir -p bench/results
printf '{"date": "%s", "builds_s": %s, "up_to_node_running_s": %s, "raylet_kill_to_node_running_again_s": %s, "container_restarts": %s, "ray_head_restart_to_node_running_again_s": %s, "after_head_restart": {"supervisor_container_restarts": %s, "node_container_restarts": %s}, "started": ["redis", "ray-head", "supervisor", "rollout-node"], "not_started": ["trainer (GPU)", "policy (GPU)", "data-server (http-store profile)"]}\n' \
  "$(date -u +%F)" "$t_build" "$t_running" "$t_back" "$restarts" "$t_head" "$supervisor_restarts" "$node_restarts" | tee bench/results/cluster_compose.json
log "passed: the head's and a node's Compose files start, the node is placed and serves, and again after its raylet's kill and after the Ray head's restart"
