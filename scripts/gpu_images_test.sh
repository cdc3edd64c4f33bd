#!/usr/bin/env bash
# The GPU images built here from requirements/gpu-lock.txt and smoke-tested without a GPU
# (`make gpu-images-test`, docs/compose.md "The GPU images"). What a card adds (the driver, through the
# NVIDIA container runtime) is the one thing not exercised:
#   1. halo-gpu-base (Dockerfile.gpu-base) FROM a Debian root (scripts/build_base_image.sh where no
#      registry answers), then the trainer and policy images FROM it, as `make up` builds them;
#   2. the base holds exactly the GPU lock's versions (pip freeze against requirements/gpu-lock.txt),
#      torch and vLLM are CUDA builds, the packages import;
#   3. the policy image's vLLM is 0.32.0 and its OpenAI server imports (`vllm serve --help`
#      itself needs a device: see step 3), and its resolved command on the gpu target has the gpu flags
#      (bfloat16, the memory share, runtime LoRA);
#   3b. the policy image holds the cluster replica's sidecar (halo_cluster, typer, rich, Ray at the
#      lock's version) and its launcher plans `python -m halo_cluster replica` for HALO_POLICY_REPLICA_ID;
#   4. the trainer image answers `halo memory-plan` for an 80 GB card (fits) and a 40 GB one (refused);
#   5. the trainer started on the gpu target with no card refuses within a minute with its one line.
# Sizes and times go to bench/results/gpu_images.json.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DEBIAN_IMAGE="${HALO_GPU_DEBIAN_IMAGE:-halo-debian:bookworm}"
BASE="${HALO_GPU_BASE_IMAGE:-halo-gpu-base:latest}"
TRAINER=halo-gpu-trainer:smoke
POLICY=halo-gpu-policy:smoke
log() { printf '[gpu-images %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
now() { date +%s; }
fail() { log "FAILED: $*"; exit 1; }

docker info >/dev/null 2>&1 || { log "no Docker engine answers (docs/compose.md: install docker.io, start dockerd)"; exit 1; }
. "$ROOT/scripts/extra_ca_certs.sh"

t0=$(now)
if ! docker image inspect "$DEBIAN_IMAGE" >/dev/null 2>&1 && ! docker pull -q "$DEBIAN_IMAGE" >/dev/null 2>&1; then
  bash scripts/build_base_image.sh "$DEBIAN_IMAGE"
fi
log "building $BASE FROM $DEBIAN_IMAGE (requirements/gpu-lock.txt: a few GB of wheels the first time)"
docker build -q --network host -f Dockerfile.gpu-base -t "$BASE" \
  --build-arg DEBIAN_IMAGE="$DEBIAN_IMAGE" --build-arg EXTRA_CA_CERTS="$HALO_EXTRA_CA_CERTS" . >/dev/null
t_base=$(( $(now) - t0 ))
log "building the trainer and policy images FROM it"
docker build -q --network host -f Dockerfile.trainer -t "$TRAINER" --build-arg BASE_IMAGE="$BASE" . >/dev/null
docker build -q --network host -f Dockerfile.vllm -t "$POLICY" --build-arg VLLM_IMAGE="$BASE" . >/dev/null
t_build=$(( $(now) - t0 ))

log "2. the base's packages are the GPU lock's"
docker run --rm --network none "$BASE" pip freeze --all > "${TMPDIR:-/tmp}/gpu-freeze.txt"
python3 - "${TMPDIR:-/tmp}/gpu-freeze.txt" <<'EOF' || fail "the image's versions differ from requirements/gpu-lock.txt"
import re, sys
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
def read(path):
    out = {}
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, _, version = line.partition("==")
            out[norm(name)] = version.lstrip("=")
    return out
lock, image = read("requirements/gpu-lock.txt"), read(sys.argv[1])
wrong = {n: (v, image.get(n)) for n, v in lock.items() if image.get(n) != v}
if wrong:
    sys.exit(f"lock vs image: {wrong}")
print(f"{len(lock)} packages at the lock's versions")
EOF
docker run --rm --network none "$BASE" python -c "
import torch, vllm, transformers, peft, xgrammar
assert torch.version.cuda, 'torch is not a CUDA build'
print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'vllm', vllm.__version__, 'transformers', transformers.__version__)
" || fail "the base does not import"

log "3. vllm's CLI and server module, and the policy's gpu command"
# Not `vllm serve --help` (nor `vllm --version`): vLLM 0.32's CLI builds its argument parser, whose
# DeviceConfig raises "Failed to infer device type" where the CUDA build sees no GPU; the version, the
# server module and the launcher's resolved command are what can be checked without a card.
docker run --rm --network none --entrypoint python3 "$POLICY" \
  -c "import vllm, vllm.entrypoints.openai.api_server; assert vllm.__version__ == '0.32.0', vllm.__version__" \
  || fail "the policy image's vLLM is not 0.32.0 or its OpenAI server does not import"
cmd=$(docker run --rm --network none --entrypoint python3 -e HALO_POLICY_TARGET=gpu "$POLICY" -m halo_policy command)
for flag in "--dtype bfloat16" "--gpu-memory-utilization 0.45" "--enable-lora" "--max-loras"; do
  [[ "$cmd" == *"$flag"* ]] || fail "the policy's gpu command lacks $flag: $cmd"
done

log "3b. the policy image as a cluster replica: its sidecar's packages and command"
# HALO_POLICY_REPLICA_ID makes the launcher start `python -m halo_cluster replica` beside vLLM
# (docs/cluster.md "Policy replicas"); the image must hold it and Ray at the lock's version.
ray_lock=$(sed -n 's/^ray==\([^ ;]*\).*/\1/p' requirements/gpu-lock.txt)
docker run --rm --network none --entrypoint python3 "$POLICY" -c "
import ray, typer, rich, halo_cluster.replica_sidecar
assert ray.__version__ == '$ray_lock', (ray.__version__, '$ray_lock')
" || fail "the policy image lacks the replica sidecar's packages or Ray $ray_lock"
docker run --rm --network none --entrypoint python3 "$POLICY" -m halo_cluster replica --help >/dev/null \
  || fail "python -m halo_cluster replica does not run in the policy image"
plan=$(docker run --rm --network none --entrypoint python3 -e HALO_POLICY_REPLICA_ID=gpu0 \
  -e HALO_POLICY_REPLICA_URL=http://10.0.0.2:8000 "$POLICY" -c "
from halo.settings.policy import PolicySettings
from halo_policy.replica import sidecar_plan
print(' '.join(sidecar_plan(PolicySettings()).argv[1:]))
")
[[ "$plan" == "-m halo_cluster replica --id gpu0 --url http://10.0.0.2:8000 --max-loras "* ]] \
  || fail "the launcher's sidecar plan in the policy image: $plan"

log "4. halo memory-plan in the trainer image"
docker run --rm --network none -e HALO_TRAINER_TARGET=gpu "$TRAINER" halo memory-plan --card h100-80gb | tail -n 1 | grep -q "^fits" \
  || fail "the plan of an 80 GB card does not fit"
if docker run --rm --network none -e HALO_TRAINER_TARGET=gpu "$TRAINER" halo memory-plan --card a100-40gb >/dev/null 2>&1; then
  fail "the plan of a 40 GB card was not refused"
fi

log "5. the trainer on the gpu target without a card"
t5=$(now)
set +e
out=$(docker run --rm --network none -e HALO_TRAINER_TARGET=gpu "$TRAINER" 2>&1)
rc=$?
set -e
t_refuse=$(( $(now) - t5 ))
[ "$rc" = 2 ] && [[ "$out" == *"torch finds no CUDA device"* ]] || fail "exit $rc: $out"
(( t_refuse < 60 )) || fail "the refusal took ${t_refuse}s"

log "5b. the trainer's learner ranks (HALO_TRAINER_LEARNER_RANKS=2) under torch's elastic launcher, on the CPU"
# No Redis in the container: rank 0's start fails, and the launcher must end rank 1 and say so.
set +e
out=$(docker run --rm --network none -e HALO_TRAINER_TARGET=cpu -e HALO_TRAINER_LEARNER_RANKS=2 "$TRAINER" 2>&1)
rc=$?
set -e
[ "$rc" = 1 ] && [[ "$out" == *"halo_trainer rank 1: stopped following rank 0"* ]] \
  && [[ "$out" == *"the learner's ranks stopped (rank 0: exit "* ]] || fail "exit $rc: $out"

size() { docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%.2f", $1 / 1e9}'; }
mkdir -p bench/results
printf '{"base_gb": %s, "trainer_gb": %s, "policy_gb": %s, "base_build_s": %s, "all_builds_s": %s, "refusal_s": %s}\n' \
  "$(size "$BASE")" "$(size "$TRAINER")" "$(size "$POLICY")" "$t_base" "$t_build" "$t_refuse" | tee bench/results/gpu_images.json
log "passed: the GPU images build from the lock and pass their smoke test (no GPU used)"
