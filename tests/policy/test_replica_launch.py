"""The policy launcher as one replica of a cluster (``HALO_POLICY_REPLICA_ID``): the sidecar it
plans and starts, that sidecar keeping the server registered, and nothing of it on one box."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from halo.policy_replicas import ReplicaRegistry
from halo.settings.policy import PolicySettings
from halo_policy.replica import ReplicaConfigError, Sidecar, sidecar_plan
from halo_policy.server import serve


def test_one_box_starts_no_sidecar() -> None:
    assert sidecar_plan(PolicySettings(_env_file=None)) is None


def test_a_replica_plans_the_clusters_sidecar_with_the_policys_redis_and_prefix() -> None:
    settings = PolicySettings(
        _env_file=None,
        replica_id="node2-gpu0",
        host="10.0.0.2",
        port=8001,
        max_loras=6,
        redis_url="redis://:pw@10.0.0.1:6379/0",
        replica_prefix="halo:c1:",
    )
    plan = sidecar_plan(settings, base_env={"HALO_DATA_DIR": "/data"})
    assert plan is not None
    assert plan.argv == [
        sys.executable,
        "-m",
        "halo_cluster",
        "replica",
        "--id",
        "node2-gpu0",
        "--url",
        "http://10.0.0.2:8001",
        "--max-loras",
        "6",
    ]
    assert plan.env == {
        "HALO_DATA_DIR": "/data",
        "HALO_REDIS_URL": "redis://:pw@10.0.0.1:6379/0",
        "HALO_CLUSTER_KEY_PREFIX": "halo:c1:",
    }
    explicit = PolicySettings(_env_file=None, replica_id="r", host="0.0.0.0", replica_url="http://10.0.0.3:8000/")
    assert sidecar_plan(explicit, base_env={}).argv[7] == "http://10.0.0.3:8000"


def test_a_replica_bound_to_every_address_needs_its_url_and_the_launcher_says_so(caplog, tmp_path) -> None:
    # A model folder that is there: the missing-folder refusal comes first and would hide this one.
    settings = PolicySettings(_env_file=None, replica_id="gpu0", host="0.0.0.0", model=str(tmp_path))
    with pytest.raises(ReplicaConfigError, match="HALO_POLICY_REPLICA_URL"):
        sidecar_plan(settings)
    assert serve(settings) == 2  # before vLLM starts
    assert "HALO_POLICY_REPLICA_URL" in caplog.text


async def _until(check, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.2)


@pytest.mark.slow  # a stand-in replica and the sidecar as processes
async def test_the_planned_sidecar_registers_the_server_and_deregisters_it_when_stopped(
    redis_url: str, key_prefix: str
) -> None:
    from tests.cluster.replicas import start_replicas

    (stub,) = start_replicas(1, "--load-ms", "10")
    rid = f"cpu-{uuid.uuid4().hex[:6]}"
    settings = PolicySettings(
        _env_file=None, replica_id=rid, port=stub.port, redis_url=redis_url, replica_prefix=f"{key_prefix}:"
    )
    plan = sidecar_plan(settings)
    assert plan is not None
    client = aioredis.from_url(redis_url)
    registry = ReplicaRegistry(client, f"{key_prefix}:")
    sidecar = Sidecar(plan)
    try:
        sidecar.start()

        async def registered() -> bool:
            assert sidecar.proc.poll() is None, "the sidecar exited"
            return [r.replica_id for r in await registry.live()] == [rid]

        await _until(registered, 60)
        (record,) = await registry.live()
        assert record.url == stub.url and record.max_loras == settings.max_loras
        await asyncio.to_thread(sidecar.stop)
        assert sidecar.proc.returncode == 0
        assert await registry.live() == [], "a stopped sidecar left the replica registered"
    finally:
        sidecar.stop()
        stub.kill()
        await client.aclose()


@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.release  # starts a vLLM of its own (about 2 min here): make test-release, not make test
async def test_the_real_launcher_registers_its_vllm_and_leaves_the_registry_with_it(
    tiny_model_dir: Path, tmp_path: Path, redis_url: str, key_prefix: str
) -> None:
    import psutil

    from tests.policy.conftest import start_policy_server, stop_policy_server, wait_listening

    rid = f"cpu-{uuid.uuid4().hex[:6]}"
    log = tmp_path / "server.log"
    proc, port = start_policy_server(
        tiny_model_dir,
        log,
        HALO_POLICY_WARMUP="false",
        HALO_POLICY_REPLICA_ID=rid,
        HALO_POLICY_REPLICA_PREFIX=f"{key_prefix}:",
        HALO_REDIS_URL=redis_url,
    )
    client = aioredis.from_url(redis_url)
    registry = ReplicaRegistry(client, f"{key_prefix}:")
    try:
        await asyncio.to_thread(wait_listening, proc, log)

        async def registered() -> bool:
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            return [r.replica_id for r in await registry.live()] == [rid]

        await _until(registered, 60)
        (record,) = await registry.live()
        assert record.url == f"http://127.0.0.1:{port}"
        sidecars = [
            p for p in psutil.Process(proc.pid).children(recursive=True) if "halo_cluster" in " ".join(p.cmdline())
        ]
        assert len(sidecars) == 1
        os.kill(proc.pid, signal.SIGTERM)  # the launcher this test started
        assert await asyncio.to_thread(proc.wait, 120) == 0
        assert await registry.live() == [], "the stopped launcher left its replica registered"
        assert not sidecars[0].is_running() or sidecars[0].status() == psutil.STATUS_ZOMBIE
    finally:
        stop_policy_server(proc)
        await client.aclose()
