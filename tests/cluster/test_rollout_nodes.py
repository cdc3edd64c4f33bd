"""Rollout nodes on a real Ray cluster (a head and two raylets on the loopback): placement one per
node, jobs through the real Redis queue, a node that cannot be placed reported and then taken by a
node that joins, a dead process restarted, a failed start reported with its reason."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
import redis

from halo.schemas.cluster import ClusterStatus
from halo.settings.cluster import ClusterSettings
from halo_cluster.node_plan import NodePlan, ProcessSpec
from tests.cluster.stub_node import publish_stub_jobs
from tests.cluster.stub_plan import stub_plan

ray = pytest.importorskip("ray")

from halo_cluster.supervisor import Supervisor, status_key  # noqa: E402  (needs ray)


@pytest.fixture
def prefix(key_prefix: str) -> str:
    return f"{key_prefix}:"


def make_supervisor(redis_url: str, prefix: str, plan: NodePlan, **overrides) -> Supervisor:
    settings = ClusterSettings(key_prefix=prefix, supervise_every_s=0.2, **overrides)
    return Supervisor(settings, plan, redis.Redis.from_url(redis_url))


def tick_until(sup: Supervisor, done, timeout_s: float = 90.0) -> ClusterStatus:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = sup.tick()
        if done(status):
            return status
        time.sleep(0.3)
    raise AssertionError(f"not reached in {timeout_s} s: {status.model_dump_json(indent=1)}")


def states(status: ClusterStatus) -> list[str]:
    return [n.state for n in status.nodes]


async def publish_jobs(redis_url: str, prefix: str, count: int, steps: int = 2) -> list[str]:
    return await publish_stub_jobs(redis_url, prefix, count, steps)


def wait_jobs_done(redis_url: str, prefix: str, ids: list[str], timeout_s: float = 60.0) -> dict[str, str]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ran_on = client.hgetall(f"{prefix}ran_on")
        if all(i in ran_on for i in ids):
            return ran_on
        time.sleep(0.3)
    raise AssertionError(f"{len(set(ids) - set(ran_on))} of {len(ids)} jobs not done after {timeout_s} s")


@pytest.mark.slow
def test_one_actor_per_rollout_node_and_jobs_spread_over_both(ray_cluster, redis_url, prefix) -> None:
    sup = make_supervisor(redis_url, prefix, stub_plan(workers=2, redis_url=redis_url, prefix=prefix), rollout_nodes=2)
    try:
        status = tick_until(sup, lambda s: states(s) == ["running", "running"])
        assert len({n.node_id for n in status.nodes}) == 2, "both actors landed on one node"
        assert all(n.urls["env"].startswith("http://") for n in status.nodes)
        # What `halo cluster status` reads is the same record, in Redis.
        stored = ClusterStatus.model_validate_json(redis.Redis.from_url(redis_url).get(status_key(sup.settings)))
        assert [n.node_id for n in stored.nodes] == [n.node_id for n in status.nodes]
        ids = asyncio.run(publish_jobs(redis_url, prefix, 16))
        ran_on = wait_jobs_done(redis_url, prefix, ids)
        assert len(set(ran_on.values())) == 2, f"jobs ran on one node only: {set(ran_on.values())}"
        assert int(redis.Redis.from_url(redis_url).get(f"{prefix}transitions")) >= 32
    finally:
        sup.shutdown()


@pytest.mark.slow
def test_a_node_that_cannot_be_placed_is_reported_then_taken_by_a_joining_node(ray_cluster, redis_url, prefix) -> None:
    cluster, _nodes = ray_cluster
    plan = stub_plan(workers=1, redis_url=redis_url, prefix=prefix)
    sup = make_supervisor(redis_url, prefix, plan, rollout_nodes=3, create_deadline_s=3.0)
    joined = None
    try:
        status = tick_until(sup, lambda s: sorted(states(s)) == ["running", "running", "unplaceable"])
        (stuck,) = [n for n in status.nodes if n.state == "unplaceable"]
        assert "all 2 rollout nodes are taken" in stuck.reason
        started = time.monotonic()
        sup.tick()
        assert time.monotonic() - started < 5, "a tick waited on the actor that cannot be placed"
        joined = cluster.add_node(num_cpus=1, resources={"rollout_node": 1})
        status = tick_until(sup, lambda s: states(s) == ["running"] * 3)
        assert len({n.node_id for n in status.nodes}) == 3
    finally:
        sup.shutdown()
        if joined is not None:
            cluster.remove_node(joined)


@pytest.mark.slow
def test_a_dead_worker_process_is_restarted_on_its_node(ray_cluster, redis_url, prefix) -> None:
    sup = make_supervisor(redis_url, prefix, stub_plan(workers=1, redis_url=redis_url, prefix=prefix), rollout_nodes=1)
    try:
        status = tick_until(sup, lambda s: states(s) == ["running"] and s.nodes[0].processes)
        worker = next(p for p in status.nodes[0].processes if p.name == "worker")
        os.kill(worker.pid, signal.SIGKILL)
        status = tick_until(
            sup, lambda s: any(p.name == "worker" and p.restarts == 1 and p.alive for p in s.nodes[0].processes)
        )
        restarted = next(p for p in status.nodes[0].processes if p.name == "worker")
        assert restarted.pid != worker.pid and restarted.last_exit == -signal.SIGKILL
    finally:
        sup.shutdown()


@pytest.mark.slow
def test_a_node_whose_processes_cannot_start_is_reported_with_the_reason(ray_cluster, redis_url, prefix) -> None:
    import sys

    broken = NodePlan(
        processes=(
            ProcessSpec("env", (sys.executable, "-c", "raise SystemExit('no browser here')"), {}, "http://{host}:1/"),
        ),
        ready_timeout_s=10,
    )
    sup = make_supervisor(redis_url, prefix, broken, rollout_nodes=1, actor_max_restarts=1)
    try:
        status = tick_until(sup, lambda s: states(s) == ["stopped"])
        assert "gave up after 1 restarts" in status.nodes[0].reason
        assert "no browser here" in status.nodes[0].reason
    finally:
        sup.shutdown()


@pytest.mark.slow
def test_a_node_lost_mid_run_loses_no_job_and_is_reported(ray_cluster, redis_url, prefix) -> None:
    """A raylet removed while its workers hold jobs: its actor's processes die with it, the jobs
    they held are reclaimed from Redis by the other node's workers, every job is done exactly once
    and no job is dead-lettered; the supervisor says which node is gone instead of waiting."""
    cluster, _nodes = ray_cluster
    extra = cluster.add_node(num_cpus=1, resources={"rollout_node": 1})
    plan = stub_plan(workers=2, redis_url=redis_url, prefix=prefix, env_ms=30, policy_ms=30)
    sup = make_supervisor(redis_url, prefix, plan, rollout_nodes=3, create_deadline_s=5.0)
    try:
        status = tick_until(sup, lambda s: states(s) == ["running"] * 3)
        ids = asyncio.run(publish_jobs(redis_url, prefix, 60, steps=4))
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        while client.hlen(f"{prefix}ran_on") < 10:
            time.sleep(0.2)
        cluster.remove_node(extra)
        extra = None
        ran_on = wait_jobs_done(redis_url, prefix, ids, timeout_s=120)
        assert set(ran_on) == set(ids)
        done_counts = [int(n) for n in client.hvals(f"{prefix}done_count")]
        assert len(done_counts) == len(ids) and max(done_counts) == 1, "a job was completed twice"
        assert client.xlen(f"{prefix}jobs:dead") == 0
        status = tick_until(sup, lambda s: any(n.state in ("restarting", "unplaceable") for n in s.nodes))
        lost = [n for n in status.nodes if n.state != "running"]
        assert len(lost) == 1 and lost[0].reason, status.model_dump_json(indent=1)
    finally:
        sup.shutdown()
        if extra is not None:
            cluster.remove_node(extra)
