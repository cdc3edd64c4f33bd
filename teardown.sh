#!/usr/bin/env bash
# Stops the Compose stack before the box is stopped: `make down` (containers and network removed;
# the data, Redis and model-cache volumes kept, so the next ./launch.sh starts quickly).
# --volumes also deletes the volumes: run data, adapters, Redis and the downloaded model.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: ./teardown.sh [--volumes] [--stack STACK]

Stops the Compose stack (`make down`). The volumes (runs and adapters, Redis, the model cache) are
kept unless --volumes is given.

  --volumes        also delete the stack's volumes (run data, adapters, Redis, the downloaded model)
  --stack STACK    compose (a GPU box, the default) or compose-cpu (docker-compose.cpu.yml)
  -h, --help       this help
USAGE
}

die() {
  echo "teardown.sh: $*" >&2
  usage | head -n1 >&2
  echo "Try './teardown.sh --help'." >&2
  exit 2
}

volumes=""
stack=""
while [ $# -gt 0 ]; do
  case "$1" in
    --volumes | -v) volumes=1 ;;
    -h | --help) usage; exit 0 ;;
    --stack)
      [ $# -ge 2 ] && [ -n "$2" ] && [ "${2#--}" = "$2" ] || die "--stack needs a value"
      stack="$2"; shift ;;
    --stack=*) stack="${1#*=}" ;;
    *) die "unknown argument '$1'" ;;
  esac
  shift
done
case "$stack" in
  "" | compose | compose-cpu) ;;
  *) die "--stack '$stack': compose or compose-cpu" ;;
esac

cd "$(dirname "${BASH_SOURCE[0]}")"
command -v make >/dev/null 2>&1 || { echo "teardown.sh: make is not installed (sudo apt-get install -y make)" >&2; exit 1; }
make_vars=()
[ -n "$stack" ] && make_vars+=("STACK=$stack")
[ -n "$volumes" ] && make_vars+=("VOLUMES=1")
exec make down "${make_vars[@]}"
