"""A rollout node checks the head's probe before it starts anything, on a real Ray cluster: a node
whose data folder is not the head's is refused and reported with the probe's path; a node that
reaches the head's data over HTTP (no shared folder) starts."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
import redis

from halo.schemas.cluster import ClusterStatus
from halo.settings.cluster import ClusterSettings
from halo.settings.store import StoreSettings
from halo.store import store_env, write_probe
from halo_cluster.node_plan import NodePlan
from tests.cluster.data_server import serve_data
from tests.cluster.stub_plan import stub_plan
from tests.conftest import stop_services

ray = pytest.importorskip("ray")

from halo_cluster.supervisor import Supervisor  # noqa: E402  (needs ray)


def run_until(redis_url: str, prefix: str, plan: NodePlan, done, timeout_s: float = 120.0) -> ClusterStatus:
    settings = ClusterSettings(key_prefix=prefix, supervise_every_s=0.2, rollout_nodes=1, actor_max_restarts=1)
    sup = Supervisor(settings, plan, redis.Redis.from_url(redis_url))
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status = sup.tick()
            if done(status):
                return status
            time.sleep(0.3)
        raise AssertionError(f"not reached in {timeout_s} s: {status.model_dump_json(indent=1)}")
    finally:
        sup.shutdown()


@pytest.mark.slow
def test_a_node_that_cannot_see_the_heads_folder_is_refused_with_the_probe(
    ray_cluster, redis_url, key_prefix, tmp_path: Path
) -> None:
    probe = write_probe(tmp_path / "head")
    own = tmp_path / "node-own"
    plan = dataclasses.replace(
        stub_plan(workers=1, redis_url=redis_url, prefix=f"{key_prefix}:"),
        store={"HALO_DATA_DIR": str(own)},
        probe=probe,
    )
    status = run_until(redis_url, f"{key_prefix}:", plan, lambda s: s.nodes and s.nodes[0].state == "stopped")
    reason = status.nodes[0].reason
    assert f"{own}/cluster/store-probe does not exist here" in reason, reason
    assert not status.nodes[0].processes, "a refused node started processes"


@pytest.mark.slow
def test_a_node_that_reaches_the_heads_data_over_http_starts(ray_cluster, redis_url, key_prefix, tmp_path) -> None:
    head = tmp_path / "head"
    probe = write_probe(head)
    server, url = serve_data(head, "cluster-token")
    try:
        store = store_env(StoreSettings(_env_file=None, backend="http", head_url=url), "cluster-token")
        plan = dataclasses.replace(
            stub_plan(workers=1, redis_url=redis_url, prefix=f"{key_prefix}:"),
            store={"HALO_DATA_DIR": str(tmp_path / "node-own"), **store},
            probe=probe,
        )
        status = run_until(
            redis_url,
            f"{key_prefix}:",
            plan,
            lambda s: s.nodes and s.nodes[0].state == "running" and s.nodes[0].processes,
        )
        assert all(p.alive for p in status.nodes[0].processes)
    finally:
        stop_services([server])
