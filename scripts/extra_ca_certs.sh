# Sourced by the scripts that build images. Extra CA certificates for pip inside the builds: by
# default the ones this host added to its own trust store (Debian's local CA folder; empty on most
# machines). A TLS-intercepting proxy needs them. HALO_EXTRA_CA_CERTS set (even empty) wins.
if [ -z "${HALO_EXTRA_CA_CERTS+set}" ]; then
  HALO_EXTRA_CA_CERTS="$(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true)"
fi
export HALO_EXTRA_CA_CERTS
