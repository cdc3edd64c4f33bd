"""The replica sidecar against a real replica process: it joins only with every live version
loaded, drops a replica that stops answering, and after a restart takes it back only once the
restarted (empty) replica has loaded the live versions again."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis.asyncio as aioredis

from halo.adapter_fanout import AdapterFanout
from halo.policy_replicas import ReplicaPool, ReplicaRegistry
from halo.schemas.cluster import ReplicaRecord
from halo_cluster.replica_sidecar import run_sidecar
from tests.cluster.replicas import start_replicas

pytestmark = pytest.mark.slow  # starts a server process twice


async def until(check, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.1)


async def test_the_sidecar_keeps_only_a_caught_up_replica_registered(redis_url, key_prefix) -> None:
    client = aioredis.from_url(redis_url)
    pool = ReplicaPool(ReplicaRegistry(client, f"{key_prefix}:", ttl_s=2.0))
    fanout = AdapterFanout(pool)
    (stub,) = start_replicas(1, "--load-ms", "20")
    record = ReplicaRecord(replica_id=stub.replica_id, url=stub.url, max_loras=4)
    # A version already live before this replica exists (published to another replica, gone since).
    await client.hset(f"{key_prefix}:versions", "run-v1", "/adapters/v1")
    stopping = False
    sidecar = asyncio.create_task(run_sidecar(fanout, record, 0.2, lambda: stopping))
    try:

        async def registered_with_v1() -> bool:
            live = await pool.registry.live()
            return bool(live) and "run-v1" in live[0].adapters

        await until(registered_with_v1)
        assert "run-v1" in await fanout.served(record), "registered before loading the live version"

        stub.kill()

        async def gone() -> bool:
            return await pool.registry.live() == []

        await until(gone, timeout_s=5)

        seen_without_v1: list[bool] = []
        stub.start()

        async def back() -> bool:
            live = await pool.registry.live()
            if live:
                seen_without_v1.append("run-v1" not in await fanout.served(record))
            return bool(live)

        await asyncio.to_thread(stub.wait_ready)
        await until(back)
        assert not any(seen_without_v1), "the restarted replica was registered before it had the live version"
        sample = await pool.chat("job", {"model": "run-v1", "messages": []})
        assert sample.adapter == "run-v1"
    finally:
        stopping = True
        await sidecar
        stub.kill()
        left = await pool.registry.live()
        await pool.aclose()
        await client.aclose()
    assert left == [], "a stopped sidecar left its replica registered"
