"""The stub rollout node's plan: one fixed-latency env and K workers that use it."""

from __future__ import annotations

import sys

from halo.settings import REPO_ROOT
from halo_cluster.node_plan import NodePlan, ProcessSpec


def stub_plan(*, workers: int, redis_url: str, prefix: str, env_ms: float = 40.0, policy_ms: float = 40.0) -> NodePlan:
    env_url = "http://{host}:{port.env}"
    run = {"PYTHONPATH": str(REPO_ROOT)}
    return NodePlan(
        processes=(
            ProcessSpec(
                "env",
                (
                    sys.executable,
                    "-m",
                    "tests.cluster.stub_node",
                    "env",
                    "--host",
                    "{host}",
                    "--port",
                    "{port.env}",
                    "--latency-ms",
                    str(env_ms),
                ),
                run,
                env_url + "/health",
            ),
            ProcessSpec(
                "worker",
                (
                    sys.executable,
                    "-m",
                    "tests.cluster.stub_node",
                    "worker",
                    "--env-url",
                    env_url,
                    "--policy-ms",
                    str(policy_ms),
                    "--redis-url",
                    redis_url,
                    "--prefix",
                    prefix,
                    "--node",
                    "{host}:{port.env}",
                ),
                run,
                count=workers,
            ),
        ),
        ports=("env",),
        urls={"env": env_url},
        ready_timeout_s=60.0,
    )
