"""Prometheus metrics of the env service (namespace ``env_``), exported on /metrics."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

STEPS = Counter("env_steps_total", "Steps taken", ["outcome"])  # ok | agent_error | infra_error
STEP_SECONDS = Histogram(
    "env_step_seconds",
    "Wall time of one step (action, settle, observation)",
    buckets=(0.05, 0.1, 0.2, 0.5, 1, 2, 5, 15),
)
# kind: reset | fork | restore; method: setup (the site's /config) | rewind | snapshot | replay
RESETS = Counter("env_resets_total", "Sessions created", ["kind", "method"])
RESET_SECONDS = Histogram(
    "env_reset_seconds", "Wall time of creating one session", buckets=(0.1, 0.25, 0.5, 1, 2, 5, 15)
)
INFRA_ERRORS = Counter(
    "env_infra_errors_total", "Browser crashes, timeouts and other infrastructure failures", ["cause"]
)
BLOCKED = Counter("env_blocked_requests_total", "Requests and navigations refused by the allowlist")
SESSIONS = Gauge("env_sessions", "Open sessions")
REAPED = Counter("env_sessions_reaped_total", "Sessions closed after sitting idle past the TTL")
LEASE_EXPIRED_SESSIONS = Counter(
    "env_lease_expired_sessions_total", "Sessions closed because their lease's heartbeat stopped"
)
