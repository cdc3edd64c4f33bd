#!/usr/bin/env bash
# `make compose-test`: the Compose stack built and run for real on a machine without a GPU (the
# pre-release check of docs/compose.md). In order:
#   1. base images: a Debian bookworm root from Debian's packages (scripts/build_base_image.sh, skipped
#      when HALO_CPU_DEBIAN_IMAGE names an existing image) and halo-cpu-base (Dockerfile.cpu-base);
#   2. the service images (scripts/compose_cpu.sh build; Docker's layer cache makes reruns quick);
#   3. `up -d`, then every container's healthcheck polled until healthy (Compose v1 has no `up --wait`;
#      the one-shot `model` step must have exited 0);
#   4. the host side, as a user runs it, from a shell with no virtual environment (`env -i`, a system
#      PATH; the Makefile's compose path must not name .venv): `make up STACK=compose-cpu` (which
#      records HALO_STACK in its env file and finds the stack healthy), then `make train DOMAIN=playground
#      ...` with no STACK (the env file's HALO_STACK picks the stack), which runs the CLI inside the
#      trainer container and follows the run to its end. vLLM must then list the run's adapter
#      `<run>-v1` (or later) in /v1/models, and runs/<id>/metrics.jsonl must be on the shared data
#      volume (read from the policy container, not the trainer that wrote it);
#   5. `down -v`, then no container of the project may be left, and `make train` must now fail
#      (asking for `make up`) instead of falling back to the host's setup and local stack.
# The last line of stdout is a JSON summary (tests/compose reads it). Exit status 0 = every check passed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export HALO_CPU_PROJECT="${HALO_CPU_PROJECT:-halo-cpu}"
DEBIAN_IMAGE="${HALO_CPU_DEBIAN_IMAGE:-halo-debian:bookworm}"
BASE_IMAGE="${HALO_CPU_BASE_IMAGE:-halo-cpu-base:latest}"
export HALO_CPU_BASE_IMAGE="$BASE_IMAGE"
POLICY_URL="http://127.0.0.1:${HALO_CPU_POLICY_PORT:-18000}"
HEALTHY_TIMEOUT_S="${HALO_COMPOSE_HEALTHY_TIMEOUT_S:-1500}"
RUN_TIMEOUT_S="${HALO_COMPOSE_RUN_TIMEOUT_S:-900}"
# A short run: 8 step-group episodes of one Playground task, groups of 4, no evaluation: two updates.
TRAIN_VARS=(DOMAIN=playground TASK=local.playground-1 "EPISODES=${HALO_COMPOSE_EPISODES:-8}"
            "ARGS=--num-generations 4 --eval-every 0 --name compose")
# The host side runs with this PATH only: the system's, no virtual environment.
HOST_PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PY="$ROOT/.venv/bin/python"
[ -x "$PY" ] || PY=python3
compose() { bash "$ROOT/scripts/compose_cpu.sh" "$@"; }
log() { printf '[compose-test %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
now() { date +%s; }

# docker-compose.yml requires a trainer token; the stack of this check gets a fresh one unless given.
if [ -z "${HALO_TRAINER_API_TOKEN:-}" ]; then
  HALO_TRAINER_API_TOKEN="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
fi
export HALO_TRAINER_API_TOKEN
. "$ROOT/scripts/extra_ca_certs.sh"

docker info >/dev/null 2>&1 || { log "no Docker engine answers (docs/compose.md: install docker.io, start dockerd)"; exit 1; }
command -v docker-compose >/dev/null 2>&1 || { log "docker-compose is missing (make setup installs it)"; exit 1; }

stack_up=0
host_env=$(mktemp -d)  # this check's env file, and the host side's logs (step 4)
# Its own env file (the Makefile's ENV_FILE; by default .env), holding this stack's token, for every
# Compose call here (the trainer's `env_file` names it): the check neither needs nor touches the
# checkout's .env, which a fresh clone does not have; `make up` (step 4) adds HALO_STACK to it.
env_file="$host_env/env"
printf 'HALO_TRAINER_API_TOKEN=%s\n' "$HALO_TRAINER_API_TOKEN" > "$env_file"
chmod 600 "$env_file"
export HALO_ENV_FILE="$env_file"
cleanup() {
  local rc=$?
  if [ "$stack_up" = 1 ]; then
    if [ "$rc" != 0 ]; then
      log "failed (exit $rc); last log lines of each service:"
      compose logs --no-color --tail 40 >&2 || true
    fi
    compose down -v --remove-orphans >/dev/null 2>&1 || true
  fi
  rm -rf "$host_env"
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
# In the background: Compose v1's `up` itself waits for `depends_on` (the model step's exit, then the
# healthchecks), and the poll below should see each service turn healthy, not only the last.
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
    [ -n "$cid" ] && state=$(docker inspect -f '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}} {{.State.ExitCode}}' "$cid" 2>/dev/null || echo missing)
    case "$state" in
      "running healthy "*) healthy_at[$svc]=$(( $(now) - t_up )); log "$svc healthy after ${healthy_at[$svc]}s" ;;
      "exited none 0") healthy_at[$svc]=$(( $(now) - t_up )); log "$svc (one-shot) done after ${healthy_at[$svc]}s" ;;
      *unhealthy* | exited* | dead*) log "$svc is '$state'"; exit 1 ;;
      *) pending=1 ;;  # missing (not created yet), created, starting, restarting, a one-shot running
    esac
  done
  [ "$pending" = 0 ] && break
  (( $(now) - t_up > HEALTHY_TIMEOUT_S )) && { log "not healthy after ${HEALTHY_TIMEOUT_S}s"; exit 1; }
  sleep 2
done
wait "$up_pid" || { log "docker-compose up failed"; exit 1; }
t_healthy=$(( $(now) - t_up ))
log "every service healthy after ${t_healthy}s"

# --- 4: the host side: make up, make train (the CLI in the trainer container), no .venv ---------
# What reaches the host commands: a system PATH, HOME (Docker's client settings), the env file, and
# the variables that name this check's project, ports and images (HALO_CPU_*, the build's CA text).
host_vars=(PATH="$HOST_PATH" HOME="$HOME" ENV_FILE="$env_file" HALO_EXTRA_CA_CERTS="$HALO_EXTRA_CA_CERTS")
[ -n "${DOCKER_HOST:-}" ] && host_vars+=(DOCKER_HOST="$DOCKER_HOST")
for v in $(compgen -e | grep '^HALO_CPU_' || true); do host_vars+=("$v=${!v}"); done
host() { env -i "${host_vars[@]}" "$@"; }
case ":$HOST_PATH:" in *"/.venv/"* | *"$ROOT"*) log "the host PATH names a virtual environment: $HOST_PATH"; exit 1 ;; esac
dry=$(host make -s -n up train STACK=compose-cpu "${TRAIN_VARS[@]}" 2>&1) || { log "make -n failed: $dry"; exit 1; }
if grep -q '\.venv\|scripts/setup\.sh' <<<"$dry"; then
  log "the Makefile's compose path names the host's .venv or setup.sh:"; grep -n '\.venv\|setup\.sh' <<<"$dry" >&2; exit 1
fi
grep -q 'exec \$tty trainer halo train .*--no-stack' <<<"$dry" || { log "make train does not run the CLI in the trainer container: $dry"; exit 1; }
t_make_up=$(now)
host make up STACK=compose-cpu >&2 || { log "make up failed"; exit 1; }
t_make_up=$(( $(now) - t_make_up ))
grep -qx 'HALO_STACK=compose-cpu' "$env_file" || { log "make up did not record HALO_STACK=compose-cpu"; exit 1; }
log "make up (stack already healthy) returned after ${t_make_up}s and recorded HALO_STACK=compose-cpu"
t_run=$(now)
train_out="$host_env/train.log"
timeout "$RUN_TIMEOUT_S" env -i "${host_vars[@]}" make train "${TRAIN_VARS[@]}" < /dev/null 2>&1 | tee "$train_out" >&2
train_rc=${PIPESTATUS[0]}
t_run=$(( $(now) - t_run ))
run_id=$(sed -n 's/.*run \([A-Za-z0-9._-]*\) submitted.*/\1/p' "$train_out" | head -n1)
[ "$train_rc" = 0 ] || { log "make train exited $train_rc (run ${run_id:-none})"; exit 1; }
[ -n "$run_id" ] || { log "make train printed no run id"; exit 1; }
if grep -q 'scripts/setup\.sh\|\.venv/' "$train_out"; then log "make train touched the host's setup or .venv"; exit 1; fi
log "make train: run $run_id finished after ${t_run}s"
# vLLM's own log says which of the run's adapters it loaded and removed; an ended run's adapters must
# have left vLLM (the trainer unloads them at the end), so /v1/models lists none of them now.
compose logs --no-color policy > "$host_env/policy.log" 2>/dev/null || true
models=$(curl -sS --fail "$POLICY_URL/v1/models" || true)
read -r adapter adapters_left < <(printf '%s' "$models" | "$PY" -c '
import json, re, sys
run, log = sys.argv[1], open(sys.argv[2], errors="replace").read()
named = lambda verb: {int(v) for v in re.findall(verb + r" LoRA adapter: name ." + re.escape(run) + r"-v(\d+)", log)}
loaded, removed = named("Loaded new"), named("Removed")
ids = [m["id"] for m in json.load(sys.stdin).get("data", [])]
listed = [i for i in ids if re.fullmatch(re.escape(run) + r"-v\d+", i)]
left = len(listed) + len(loaded - removed)
print(f"{run}-v{max(loaded)}" if loaded and max(loaded) >= 1 else "-", left)
' "$run_id" "$host_env/policy.log" 2>/dev/null || echo "- -1")
[ "$adapter" != "-" ] || { log "vLLM's log shows no adapter of $run_id loaded"; exit 1; }
log "vLLM loaded $adapter (its log)"
[ "$adapters_left" = 0 ] || { log "$adapters_left adapter(s) of the ended run $run_id left in vLLM: $models"; exit 1; }
log "the ended run's adapters left vLLM (removed in its log, none in /v1/models)"
# Read through the policy container: the file is on the shared volume, not only in the trainer.
metrics_lines=$(compose exec -T policy sh -c "test -s /data/runs/$run_id/metrics.jsonl && wc -l < /data/runs/$run_id/metrics.jsonl" | tr -d '[:space:]' || true)
[ -n "$metrics_lines" ] && [ "$metrics_lines" -ge 1 ] || { log "no metrics in /data/runs/$run_id/metrics.jsonl"; exit 1; }
log "runs/$run_id/metrics.jsonl holds $metrics_lines line(s) on the shared volume"

# --- 5: down, nothing left, and no fallback to the host -----------------------------------------
t_down=$(now)
compose down -v --remove-orphans
stack_up=0
t_down=$(( $(now) - t_down ))
left=$(docker ps -a -q --filter "label=com.docker.compose.project=$HALO_CPU_PROJECT" | wc -l)
[ "$left" = 0 ] || { log "$left container(s) of $HALO_CPU_PROJECT left after down"; docker ps -a --filter "label=com.docker.compose.project=$HALO_CPU_PROJECT" >&2; exit 1; }
log "down after ${t_down}s; no container left"
if host make train "${TRAIN_VARS[@]}" < /dev/null > "$host_env/after.log" 2>&1; then
  log "make train succeeded with the stack down"; exit 1
fi
grep -q 'make up' "$host_env/after.log" && ! grep -q 'setup\.sh\|\.venv' "$host_env/after.log" \
  || { log "make train with the stack down did not ask for make up:"; cat "$host_env/after.log" >&2; exit 1; }
log "make train with the stack down fails and asks for make up (no host fallback)"
printf '{"run_id": "%s", "adapter": "%s", "adapters_left": %s, "metrics_lines": %s, "containers_left": %s, "build_s": %s, "healthy_s": %s, "make_up_s": %s, "train_s": %s, "down_s": %s, "host_path": "%s", "no_fallback": true}\n' \
  "$run_id" "$adapter" "$adapters_left" "$metrics_lines" "$left" "$t_build" "$t_healthy" "$t_make_up" "$t_run" "$t_down" "$HOST_PATH"
