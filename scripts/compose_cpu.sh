#!/usr/bin/env bash
# docker-compose on the CPU target: docker-compose.yml with docker-compose.cpu.yml on top, run as
# project "halo-cpu" (HALO_CPU_PROJECT). Any docker-compose arguments pass through:
#
#   scripts/compose_cpu.sh build | up -d | ps | logs policy | down -v
#
# `make up STACK=compose-cpu` / `make train` use it too (the Makefile's compose-cpu stack).
#
# Compose merges lists from an override by union and (v1) cannot delete keys, so two things of the
# GPU file survive any override: the NVIDIA device reservations (the engine refuses to start a
# container that asks for a GPU driver it does not have) and the published ports (meaningless with
# host networking). This script resolves both files with `docker-compose config`, drops exactly
# those two keys, and runs Compose on the result (var/compose/cpu.yml). Nothing else changes.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PROJECT="${HALO_CPU_PROJECT:-halo-cpu}"
# The YAML step needs a Python with PyYAML: the system's python3 (Debian's docker-compose 1.29 depends
# on python3-yaml), else the project's .venv; `make up`/`make train` on this path need no .venv.
PY="${HALO_PYTHON_BIN:-}"
if [ -z "$PY" ]; then
  if python3 -c 'import yaml' >/dev/null 2>&1; then PY=python3; else PY="$ROOT/.venv/bin/python"; fi
fi
# HALO_ENV_FILE: the file Compose reads variables from (the trainer token), default .env here.
env_file=()
if [ -n "${HALO_ENV_FILE:-}" ]; then
  [ -f "$HALO_ENV_FILE" ] || { echo "compose_cpu.sh: HALO_ENV_FILE=$HALO_ENV_FILE does not exist" >&2; exit 2; }
  env_file=(--env-file "$HALO_ENV_FILE")
fi

. "$ROOT/scripts/extra_ca_certs.sh"

# The resolved file holds the trainer's token (interpolated from the environment or .env).
umask 077
mkdir -p var/compose
resolved="var/compose/cpu.yml"
# Resolved first, on its own: a file Compose cannot resolve (a missing env file, a bad variable) stops
# here with Compose's own message, not as a YAML error below.
# HALO_CPU_OVERRIDES: more Compose files (colon-separated) merged after those two, e.g. a test's
# failure at start (tests/compose/test_make_up_failures.py).
more=()
IFS=: read -ra overrides <<<"${HALO_CPU_OVERRIDES:-}"
for f in "${overrides[@]}"; do [ -n "$f" ] && more+=(-f "$f"); done
config=$(docker-compose -p "$PROJECT" "${env_file[@]}" -f docker-compose.yml -f docker-compose.cpu.yml "${more[@]}" config) \
  || { echo "compose_cpu.sh: docker-compose could not resolve the stack's files (above)" >&2; exit 2; }
tmp=$(mktemp "$resolved.XXXXXX")  # its own file: two calls at once must not interleave
"$PY" -c '
import sys, yaml
doc = yaml.safe_load(sys.stdin)
for svc in doc["services"].values():
    reservations = svc.get("deploy", {}).get("resources", {}).get("reservations", {})
    reservations.pop("devices", None)
    if svc.get("network_mode") == "host":
        svc.pop("ports", None)
yaml.safe_dump(doc, sys.stdout, sort_keys=False)
' <<<"$config" > "$tmp"
mv "$tmp" "$resolved"
exec docker-compose -p "$PROJECT" --project-directory "$ROOT" -f "$resolved" "$@"
