#!/usr/bin/env bash
# Builds a Debian bookworm root image from Debian's own packages (debootstrap + `docker import`),
# for machines where no image registry is reachable: `docker pull debian:bookworm-slim` fails there,
# but apt's mirror works. The result stands in for the registry's Debian image as the base of
# Dockerfile.cpu-base (see docs/compose.md). Idempotent: does nothing when the image exists.
#
#   scripts/build_base_image.sh [IMAGE]      default IMAGE: halo-debian:bookworm
#   HALO_DEBIAN_MIRROR=<uri>                 default: the first Debian mirror apt is configured with
set -euo pipefail

IMAGE="${1:-halo-debian:bookworm}"
log() { printf '[base-image] %s\n' "$*" >&2; }

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "$IMAGE exists"; exit 0
fi
[ "$(id -u)" = 0 ] || { log "debootstrap needs root"; exit 1; }
command -v debootstrap >/dev/null 2>&1 || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
}

# The mirror apt already uses here, so the image resolves packages exactly as the host does.
mirror="${HALO_DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  mirror=$(grep -hoE '^URIs:\s*\S+' /etc/apt/sources.list.d/*.sources 2>/dev/null \
             | awk '{print $2}' | grep -v security | head -n1 || true)
fi
if [ -z "$mirror" ]; then
  mirror=$(grep -hoE '^deb\s+\S+' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | head -n1 || true)
fi
[ -n "$mirror" ] || { log "no Debian mirror found; set HALO_DEBIAN_MIRROR"; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
log "debootstrap bookworm from $mirror (about 1.5 min)"
debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
# apt inside the image uses the same mirror (debootstrap leaves only the main suite configured).
printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$mirror" "$mirror" \
  > "$root/etc/apt/sources.list"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import - "$IMAGE" >/dev/null
log "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | numfmt --to=iec))"
