"""A real Ray cluster on the loopback for the cluster tests: a head (no rollout slot) and two
raylets that each offer one ``rollout_node``, with Ray's token authentication on."""

from __future__ import annotations

import os
import secrets

import pytest

from halo_cluster.ray_auth import use_token_here


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    saved = {key: os.environ.get(key) for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")}
    use_token_here(secrets.token_hex(16))
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False},
    )
    nodes = [cluster.add_node(num_cpus=1, resources={"rollout_node": 1}) for _ in range(2)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, namespace="halo", logging_level="WARNING")
    try:
        yield cluster, nodes
    finally:
        ray.shutdown()
        cluster.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        from ray._raylet import AuthenticationTokenLoader, Config

        Config.initialize("")
        AuthenticationTokenLoader.instance().reset_cache()
