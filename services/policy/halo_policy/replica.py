"""The replica sidecar beside vLLM, when ``HALO_POLICY_REPLICA_ID`` makes this server one policy
replica of a cluster (docs/cluster.md, "Policy replicas").

The sidecar is the cluster's own command (``python -m halo_cluster replica``), started as a child
once vLLM is healthy and warm: it loads the live adapter versions before it registers the replica,
so starting it earlier would only make it wait. It runs in its own process group and is stopped
before vLLM (so the replica leaves the registry before it stops answering) and again whenever vLLM
exits. Unset, the default, nothing is started: the one-box launcher is unchanged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

from halo.settings.policy import PolicySettings
from halo_policy.process_group import terminate_group

logger = logging.getLogger("halo.policy.replica")
RESTART_AFTER_S = 5.0  # a sidecar that keeps dying (Redis away) is restarted at most this often


class ReplicaConfigError(ValueError):
    """The replica settings cannot work (the message says which and why)."""


@dataclass(frozen=True)
class SidecarPlan:
    argv: list[str]
    env: dict[str, str]


def replica_url(settings: PolicySettings) -> str:
    if settings.replica_url:
        return settings.replica_url.rstrip("/")
    if settings.host in ("0.0.0.0", "::"):
        # base_url would say 127.0.0.1, which a worker on another machine cannot reach.
        raise ReplicaConfigError(
            f"HALO_POLICY_REPLICA_ID={settings.replica_id} with HALO_POLICY_HOST={settings.host}: set "
            "HALO_POLICY_REPLICA_URL to this server's URL as the workers reach it, or bind HALO_POLICY_HOST "
            "to that address"
        )
    return settings.base_url


def sidecar_plan(settings: PolicySettings, base_env: dict[str, str] | None = None) -> SidecarPlan | None:
    """The sidecar's command and environment, or None when this server is no replica."""
    if not settings.replica_id:
        return None
    argv = [
        sys.executable,
        "-m",
        "halo_cluster",
        "replica",
        "--id",
        settings.replica_id,
        "--url",
        replica_url(settings),
        "--max-loras",
        str(settings.max_loras),
    ]
    env = dict(os.environ if base_env is None else base_env)
    # The sidecar reads the cluster's settings; these two come from the policy's own.
    env["HALO_REDIS_URL"] = settings.redis_url
    env["HALO_CLUSTER_KEY_PREFIX"] = settings.replica_prefix
    return SidecarPlan(argv, env)


@dataclass
class Sidecar:
    """The running sidecar, restarted if it dies while vLLM serves."""

    plan: SidecarPlan
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    restarts: int = 0
    stopped: bool = field(default=False)

    def start(self) -> None:
        logger.info("starting the replica sidecar: %s", " ".join(self.plan.argv))
        self.proc = subprocess.Popen(self.plan.argv, env=self.plan.env, start_new_session=True)
        self.started_at = time.monotonic()

    def check(self) -> None:
        """Restart a sidecar that exited on its own (not more often than every RESTART_AFTER_S)."""
        if self.stopped or self.proc is None or self.proc.poll() is None:
            return
        if time.monotonic() - self.started_at < RESTART_AFTER_S:
            return
        self.restarts += 1
        logger.warning(
            "the replica sidecar exited with %s; restarting it (restart %d)", self.proc.returncode, self.restarts
        )
        self.start()

    def signal_stop(self) -> None:
        """Ask it to deregister and exit (from a signal handler: no waiting here)."""
        self.stopped = True
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)

    def stop(self, grace_s: float = 15.0) -> None:
        self.stopped = True
        if self.proc is not None:
            terminate_group(self.proc, grace_s)
