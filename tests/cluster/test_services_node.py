"""The real rollout node: the clone sites, env and reward services and a real rollout worker,
started by the node's actor from ``services_plan`` on a raylet of a real Ray cluster. Each service
listens on the node's address and is ready (the env's readiness includes reaching that node's
sites), and the worker is running: the plan's settings names are the services' own."""

from __future__ import annotations

import time

import httpx
import pytest
import redis

from halo.settings.cluster import ClusterSettings
from halo_cluster.node_plan import services_plan

ray = pytest.importorskip("ray")

from halo_cluster.supervisor import Supervisor  # noqa: E402  (needs ray)


@pytest.mark.slow
def test_a_rollout_node_runs_its_own_services_and_workers(ray_cluster, redis_url, key_prefix, tmp_path) -> None:
    plan = services_plan(workers=1, redis_url=redis_url, policy_url="http://127.0.0.1:9", data_dir=str(tmp_path))
    settings = ClusterSettings(key_prefix=f"{key_prefix}:", rollout_nodes=1, create_deadline_s=240.0)
    sup = Supervisor(settings, plan, redis.Redis.from_url(redis_url), log_root=str(tmp_path / "nodes"))
    try:
        deadline = time.monotonic() + 300
        while (status := sup.tick()).nodes[0].state != "running" or not status.nodes[0].processes:
            assert status.nodes[0].state in ("placing", "running"), status.model_dump_json(indent=1)
            assert time.monotonic() < deadline, "the rollout node did not start in 300 s"
            time.sleep(1.0)
        node = status.nodes[0]
        assert set(node.urls) == {"sites", "env", "reward"}
        for name, url in node.urls.items():
            assert url.startswith(f"http://{node.address}:"), url
            response = httpx.get(url + "/ready", timeout=30)
            assert response.status_code == 200, f"{name} not ready: {response.text}"
        time.sleep(3)  # a worker that exits on a bad setting does so at once
        status = sup.tick()
        assert [(p.name, p.alive, p.restarts) for p in status.nodes[0].processes] == [
            ("sites", True, 0),
            ("env", True, 0),
            ("reward", True, 0),
            ("worker", True, 0),
        ]
    finally:
        sup.shutdown()
