#!/usr/bin/env bash
# One command on a GPU box: the Compose stack up (images built, the model downloaded, every service
# healthy), then a training run in the trainer container. A thin wrapper over the Makefile:
#   make up                                   (skipped with --skip-setup)
#   make train DOMAIN=... TASK=... EPISODES=...
# Needs git, Docker with the NVIDIA runtime, and make. ./teardown.sh stops the stack.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: ./launch.sh [--skip-setup] [--domain NAME] [--task ID]... [--episodes N] [--stack STACK]

Brings the Compose stack up (`make up`: builds the images, downloads the model into the stack's
cache, waits for every healthcheck), then trains (`make train`, run inside the trainer container).

  --skip-setup     the stack is already up: train only
  --domain NAME    the site: playground, gomail, gocalendar, omnizon, zilloft, ... (default: the
                   site of the first --task, else playground)
  --task ID        a task id such as v2.omnizon-1 (repeatable; default: the domain's tasks)
  --episodes N     episodes to run (a positive integer; default from configs/rl_config.yaml)
  --stack STACK    compose (a GPU box, the default) or compose-cpu (docker-compose.cpu.yml,
                   a machine without a GPU; docs/compose.md)
  -h, --help       this help

Examples:
  ./launch.sh
  ./launch.sh --skip-setup --task v2.omnizon-1 --episodes 20
EOF
}

die() {  # a usage error: exit 2
  echo "launch.sh: $*" >&2
  usage | head -n1 >&2
  echo "Try './launch.sh --help'." >&2
  exit 2
}

skip_setup=0
domain=""
episodes=""
stack=""
tasks=()
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-setup) skip_setup=1 ;;
    -h | --help) usage; exit 0 ;;
    --domain | --task | --episodes | --stack)
      [ $# -ge 2 ] && [ -n "$2" ] && [ "${2#--}" = "$2" ] || die "$1 needs a value"
      case "$1" in
        --domain) domain="$2" ;;
        --task) tasks+=("$2") ;;
        --episodes) episodes="$2" ;;
        --stack) stack="$2" ;;
      esac
      shift ;;
    --domain=* | --task=* | --episodes=* | --stack=*)
      value="${1#*=}"
      [ -n "$value" ] || die "${1%%=*} needs a value"
      case "$1" in
        --domain=*) domain="$value" ;;
        --task=*) tasks+=("$value") ;;
        --episodes=*) episodes="$value" ;;
        --stack=*) stack="$value" ;;
      esac ;;
    *) die "unknown argument '$1'" ;;
  esac
  shift
done

if [ -n "$domain" ] && ! [[ "$domain" =~ ^[a-z][a-z0-9_-]*$ ]]; then
  die "--domain '$domain': a site name such as omnizon (the trainer checks that it has tasks)"
fi
if [ -n "$episodes" ] && ! [[ "$episodes" =~ ^[1-9][0-9]*$ ]]; then
  die "--episodes '$episodes': a positive integer"
fi
case "$stack" in
  "" | compose | compose-cpu) ;;
  *) die "--stack '$stack': compose or compose-cpu" ;;
esac
for t in "${tasks[@]}"; do
  [[ "$t" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "--task '$t': a task id such as v2.omnizon-1"
done
# The domain of a task id <registry>.<site>-<n> (v2.omnizon-1, local.playground-1) when not given.
if [ -z "$domain" ] && [ ${#tasks[@]} -gt 0 ]; then
  site="${tasks[0]#*.}"
  domain="${site%-*}"
fi

cd "$(dirname "${BASH_SOURCE[0]}")"
command -v make >/dev/null 2>&1 || { echo "launch.sh: make is not installed (sudo apt-get install -y make)" >&2; exit 1; }
command -v docker >/dev/null 2>&1 || { echo "launch.sh: docker is not installed (docs/compose.md)" >&2; exit 1; }

make_vars=()
[ -n "$stack" ] && make_vars+=("STACK=$stack")
if [ "$skip_setup" = 0 ]; then
  make up "${make_vars[@]}"
fi
# After `make up`, .env names the Compose stack (HALO_STACK); STACK=compose also makes sure that a
# --skip-setup launch on a box where `make up` never ran fails instead of training on the host.
[ -n "$stack" ] || make_vars+=("STACK=$(sed -n 's/^HALO_STACK=//p' "${ENV_FILE:-.env}" 2>/dev/null | tail -n1 | grep -x 'compose-cpu' || echo compose)")
train_vars=("DOMAIN=${domain:-playground}")
[ -n "$episodes" ] && train_vars+=("EPISODES=$episodes")
[ ${#tasks[@]} -gt 0 ] && train_vars+=("TASK=${tasks[*]}")
exec make train "${make_vars[@]}" "${train_vars[@]}"
