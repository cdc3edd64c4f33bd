#!/usr/bin/env bash
# `make compose-test`: the Compose stack built and run for real on a machine without a GPU (the
# pre-release check of docs/compose.md). In order:
#   1. base images: a Debian bookworm root from Debian's packages (scripts/build_base_image.sh, skipped
#      when HALO_CPU_DEBIAN_IMAGE names an existing image) and halo-cpu-base (Dockerfile.cpu-base);
#   2. the service images (scripts/compose_cpu.sh build; Docker's layer cache makes reruns quick);
#   3. `up -d`, then every container's healthcheck polled until healthy (Compose v1 has no `up --wait`);
#   4. a short training run through the stack's run API (curl POST /runs), which must make vLLM list
#      the adapter `<run>-v1` (or later) in /v1/models and write runs/<id>/metrics.jsonl to the shared
#      data volume (read from the policy container, not the trainer that wrote it);
#   5. `down -v`, then no container of the project may be left.
# The last line of stdout is a JSON summary (tests/compose reads it). Exit status 0 = every check passed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export HALO_CPU_PROJECT="${HALO_CPU_PROJECT:-halo-cpu}"
DEBIAN_IMAGE="${HALO_CPU_DEBIAN_IMAGE:-halo-debian:bookworm}"
BASE_IMAGE="${HALO_CPU_BASE_IMAGE:-halo-cpu-base:latest}"
export HALO_CPU_BASE_IMAGE="$BASE_IMAGE"
TRAINER_URL="http://127.0.0.1:${HALO_CPU_TRAINER_PORT:-18400}"
POLICY_URL="http://127.0.0.1:${HALO_CPU_POLICY_PORT:-18000}"
HEALTHY_TIMEOUT_S="${HALO_COMPOSE_HEALTHY_TIMEOUT_S:-1500}"
RUN_TIMEOUT_S="${HALO_COMPOSE_RUN_TIMEOUT_S:-900}"
# A short run: 8 step-group episodes of one Playground task, groups of 4, no evaluation: two updates.
RUN_SPEC="${HALO_COMPOSE_RUN_SPEC:-{\"domain\": \"playground\", \"tasks\": [\"local.playground-1\"], \"episodes\": 8, \"num_generations\": 4, \"eval_every\": 0, \"name\": \"compose\"}}"
PY="$ROOT/.venv/bin/python"
[ -x "$PY" ] || PY=python3
compose() { bash "$ROOT/scripts/compose_cpu.sh" "$@"; }
log() { printf '[compose-test %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
now() { date +%s; }
json_field() { "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d.get(sys.argv[1]) if d.get(sys.argv[1]) is not None else "")' "$1"; }

# docker-compose.yml requires a trainer token; the stack of this check gets a fresh one unless given.
if [ -z "${HALO_TRAINER_API_TOKEN:-}" ]; then
  HALO_TRAINER_API_TOKEN="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
fi
export HALO_TRAINER_API_TOKEN
AUTH="Authorization: Bearer $HALO_TRAINER_API_TOKEN"
if [ -z "${HALO_EXTRA_CA_CERTS+set}" ]; then
  HALO_EXTRA_CA_CERTS="$(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true)"
  export HALO_EXTRA_CA_CERTS
fi

docker info >/dev/null 2>&1 || { log "no Docker engine answers (docs/compose.md: install docker.io, start dockerd)"; exit 1; }
command -v docker-compose >/dev/null 2>&1 || { log "docker-compose is missing (make setup installs it)"; exit 1; }

stack_up=0
cleanup() {
  local rc=$?
  if [ "$stack_up" = 1 ]; then
    if [ "$rc" != 0 ]; then
      log "failed (exit $rc); last log lines of each service:"
      compose logs --no-color --tail 40 >&2 || true
    fi
    compose down -v --remove-orphans >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# --- 1-2: images -------------------------------------------------------------------------------
t0=$(now)
if [ "$DEBIAN_IMAGE" = "halo-debian:bookworm" ]; then
  bash scripts/build_base_image.sh "$DEBIAN_IMAGE"
fi
docker image inspect "$DEBIAN_IMAGE" >/dev/null
log "building $BASE_IMAGE FROM $DEBIAN_IMAGE"
docker build -q --network host -f Dockerfile.cpu-base \
  --build-arg DEBIAN_IMAGE="$DEBIAN_IMAGE" --build-arg EXTRA_CA_CERTS="$HALO_EXTRA_CA_CERTS" \
  -t "$BASE_IMAGE" . >/dev/null
t_base=$(( $(now) - t0 ))
log "building the service images"
compose build -q
t_build=$(( $(now) - t0 ))
log "images ready after ${t_build}s (base ${t_base}s)"

# --- 3: up and healthy -------------------------------------------------------------------------
compose down -v --remove-orphans >/dev/null 2>&1 || true
stack_up=1
t_up=$(now)
# In the background: Compose v1's `up` itself waits for `depends_on: service_healthy`, and the poll
# below should see each service turn healthy, not only the last.
compose up -d >&2 &
up_pid=$!
services=$(compose config --services)
log "waiting for the healthchecks of: $(echo $services)"
declare -A healthy_at=()
while :; do
  pending=0
  for svc in $services; do
    [ -n "${healthy_at[$svc]:-}" ] && continue
    # By label, not `compose ps`: Compose itself is busy in `up`, and this is cheaper under load.
    cid=$(docker ps -a -q --filter "label=com.docker.compose.project=$HALO_CPU_PROJECT" \
            --filter "label=com.docker.compose.service=$svc" | head -n1)
    state="missing"
    [ -n "$cid" ] && state=$(docker inspect -f '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$cid" 2>/dev/null || echo missing)
    case "$state" in
      "running healthy") healthy_at[$svc]=$(( $(now) - t_up )); log "$svc healthy after ${healthy_at[$svc]}s" ;;
      *unhealthy | exited* | dead*) log "$svc is '$state'"; exit 1 ;;
      *) pending=1 ;;  # missing (not created yet), created, starting, restarting
    esac
  done
  [ "$pending" = 0 ] && break
  (( $(now) - t_up > HEALTHY_TIMEOUT_S )) && { log "not healthy after ${HEALTHY_TIMEOUT_S}s"; exit 1; }
  sleep 2
done
wait "$up_pid" || { log "docker-compose up failed"; exit 1; }
t_healthy=$(( $(now) - t_up ))
log "every service healthy after ${t_healthy}s"

# --- 4: a short training run through the stack --------------------------------------------------
t_run=$(now)
status=$(curl -sS --fail-with-body -X POST "$TRAINER_URL/runs" -H "$AUTH" -H 'content-type: application/json' -d "$RUN_SPEC")
run_id=$(printf '%s' "$status" | json_field run_id)
[ -n "$run_id" ] || { log "POST /runs answered: $status"; exit 1; }
log "run $run_id created"
adapter=""
while :; do
  models=$(curl -sS --fail "$POLICY_URL/v1/models" || true)
  adapter=$(printf '%s' "$models" | "$PY" -c '
import json, re, sys
ids = [m["id"] for m in json.load(sys.stdin).get("data", [])] if sys.argv[2] else []
vs = [int(m.group(1)) for i in ids if (m := re.fullmatch(re.escape(sys.argv[1]) + r"-v(\d+)", i))]
print(f"{sys.argv[1]}-v{max(vs)}" if vs and max(vs) >= 1 else "")
' "$run_id" "$models" 2>/dev/null || true)
  [ -n "$adapter" ] && break
  status=$(curl -sS --fail "$TRAINER_URL/runs/$run_id" || true)
  state=$(printf '%s' "$status" | json_field state 2>/dev/null || true)
  case "$state" in
    failed | stopped) log "run $run_id $state before an adapter reached vLLM: $status"; exit 1 ;;
  esac
  (( $(now) - t_run > RUN_TIMEOUT_S )) && { log "no adapter of $run_id in vLLM after ${RUN_TIMEOUT_S}s: $status"; exit 1; }
  sleep 5
done
t_adapter=$(( $(now) - t_run ))
log "vLLM lists $adapter after ${t_adapter}s"
# Read through the policy container: the file is on the shared volume, not only in the trainer.
metrics_lines=$(compose exec -T policy sh -c "test -s /data/runs/$run_id/metrics.jsonl && wc -l < /data/runs/$run_id/metrics.jsonl" | tr -d '[:space:]' || true)
[ -n "$metrics_lines" ] && [ "$metrics_lines" -ge 1 ] || { log "no metrics in /data/runs/$run_id/metrics.jsonl"; exit 1; }
log "runs/$run_id/metrics.jsonl holds $metrics_lines line(s) on the shared volume"
curl -sS -X POST "$TRAINER_URL/runs/$run_id/stop" -H "$AUTH" >/dev/null || true

# --- 5: down, nothing left ---------------------------------------------------------------------
t_down=$(now)
compose down -v --remove-orphans
stack_up=0
t_down=$(( $(now) - t_down ))
left=$(docker ps -a -q --filter "label=com.docker.compose.project=$HALO_CPU_PROJECT" | wc -l)
[ "$left" = 0 ] || { log "$left container(s) of $HALO_CPU_PROJECT left after down"; docker ps -a --filter "label=com.docker.compose.project=$HALO_CPU_PROJECT" >&2; exit 1; }
log "down after ${t_down}s; no container left"
printf '{"run_id": "%s", "adapter": "%s", "metrics_lines": %s, "containers_left": %s, "build_s": %s, "healthy_s": %s, "adapter_s": %s, "down_s": %s}\n' \
  "$run_id" "$adapter" "$metrics_lines" "$left" "$t_build" "$t_healthy" "$t_adapter" "$t_down"
