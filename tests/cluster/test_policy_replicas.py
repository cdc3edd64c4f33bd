"""Policy replicas against real HTTP server processes (tests/cluster/stub_replica.py) and the real
Redis: least-loaded pick with stickiness, failover on a dead or restarted replica, heartbeat
expiry, the adapter fan-out (current only when every live replica lists it), late join, the
max_loras check, and the answered-adapter check."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from halo.adapter_fanout import AdapterFanout, TooManyVersions
from halo.policy_replicas import NoReplica, ReplicaPool, ReplicaRegistry, WrongAdapter
from halo.schemas.cluster import ReplicaRecord
from tests.cluster.replicas import StubReplica, start_replicas

pytestmark = pytest.mark.slow  # each test starts server processes: seconds, more under load


@pytest.fixture
async def pool(redis_url: str, key_prefix: str):
    client = aioredis.from_url(redis_url)
    replicas_pool = ReplicaPool(ReplicaRegistry(client, f"{key_prefix}:", ttl_s=60.0))
    yield replicas_pool
    await replicas_pool.aclose()
    await client.aclose()


@pytest.fixture
def stubs():
    started: list[StubReplica] = []
    yield started
    for stub in started:
        stub.kill()


def record(stub: StubReplica, max_loras: int = 4) -> ReplicaRecord:
    return ReplicaRecord(replica_id=stub.replica_id, url=stub.url, max_loras=max_loras)


async def join_all(fanout: AdapterFanout, replicas: list[StubReplica]) -> None:
    for stub in replicas:
        await fanout.join(record(stub))


def ask(model: str) -> dict:
    return {"model": model, "messages": [{"role": "user", "content": "go"}]}


async def test_least_loaded_first_then_the_job_stays_on_its_replica(pool, stubs) -> None:
    stubs += start_replicas(3, "--latency-ms", "300")
    await join_all(AdapterFanout(pool), stubs)
    registry = pool.registry
    async with registry.using("job-a") as first, registry.using("job-b") as second:
        assert second.replica_id != first.replica_id, "a loaded replica was picked over an idle one"
        async with registry.using("job-c") as third:
            assert third.replica_id not in {first.replica_id, second.replica_id}
            # job-a stays on its replica though it is now the most loaded.
            async with registry.using("job-a") as again:
                assert again.replica_id == first.replica_id
    samples = await asyncio.gather(*(pool.chat(f"job-{i}", ask("tiny-base")) for i in range(6)))
    assert len({s.replica_id for s in samples}) == 3, "six concurrent jobs did not spread over three replicas"
    assert all(s.adapter == "tiny-base" for s in samples)


async def test_a_dead_replica_fails_over_without_an_error_reaching_the_caller(pool, stubs) -> None:
    stubs += start_replicas(2, "--latency-ms", "10")
    await join_all(AdapterFanout(pool), stubs)
    before = await pool.chat("job-x", ask("tiny-base"))
    dead = next(s for s in stubs if s.replica_id == before.replica_id)
    dead.kill()
    after = await pool.chat("job-x", ask("tiny-base"))
    assert after.replica_id != dead.replica_id
    assert (await pool.chat("job-x", ask("tiny-base"))).replica_id == after.replica_id, "not sticky after failover"
    assert dead.replica_id not in {r.replica_id for r in await pool.registry.live()}
    assert (await pool.registry.counters())["failover_down"] == 1
    next(s for s in stubs if s is not dead).kill()
    with pytest.raises(NoReplica, match="replicas failed|no live policy replica"):
        await pool.chat("job-x", ask("tiny-base"))


async def test_a_replica_is_live_while_its_heartbeat_runs_and_expires_after(redis_url, key_prefix, stubs) -> None:
    client = aioredis.from_url(redis_url)
    registry = ReplicaRegistry(client, f"{key_prefix}:", ttl_s=0.6)
    pool = ReplicaPool(registry)
    stubs += start_replicas(1)
    fanout = AdapterFanout(pool)
    beating = asyncio.create_task(registry.heartbeat(record(stubs[0]), 0.2, lambda: fanout.served(record(stubs[0]))))
    await asyncio.sleep(1.5)
    (live,) = await registry.live()
    assert live.replica_id == "r0" and live.adapters == ["tiny-base"]
    stubs[0].kill()  # the heartbeat goes on but cannot reach the replica: it must expire
    await asyncio.sleep(1.2)
    assert await registry.live() == []
    beating.cancel()
    await pool.aclose()
    with pytest.raises(NoReplica):
        async with registry.using("job"):
            pass
    await client.aclose()


async def test_an_adapter_is_current_only_when_every_live_replica_lists_it(pool, stubs) -> None:
    fanout = AdapterFanout(pool)
    stubs += start_replicas(3, "--load-ms", "50")
    await join_all(fanout, stubs)
    result = await fanout.publish("run-v1", "/adapters/v1")
    assert result.current and set(result.per_replica_s) == {"r0", "r1", "r2"}
    for stub in stubs:
        assert "run-v1" in await fanout.served(record(stub))
    assert await fanout.current() == "run-v1"
    # One replica that cannot take another adapter: the version must not become current.
    (full,) = start_replicas(1, "--max-loras", "1", prefix="full")
    stubs.append(full)
    await fanout.join(ReplicaRecord(replica_id="full0", url=full.url, max_loras=4))  # it claims more than it has
    result = await fanout.publish("run-v2", "/adapters/v2")
    assert not result.current and list(result.missing) == ["full0"] and "load failed" in result.missing["full0"]
    assert await fanout.current() == "run-v1", "a version missing on a live replica became current"
    assert (await pool.registry.counters())["fanout_incomplete"] == 1


async def test_a_restarted_replica_catches_up_before_it_serves(pool, stubs) -> None:
    fanout = AdapterFanout(pool)
    stubs += start_replicas(2)
    await join_all(fanout, stubs)
    assert (await fanout.publish("run-v1", "/adapters/v1")).current
    restarted = stubs[1]
    restarted.kill()
    restarted.start().wait_ready()  # same port, no adapters: what a restarted vLLM serves
    # Until it re-joins, the registry still holds its old record: a job sent there gets 404 and is
    # moved to the other replica, so no adapter-not-found reaches the caller.
    samples = [await pool.chat(f"job-{i}", ask("run-v1")) for i in range(6)]
    assert {s.adapter for s in samples} == {"run-v1"}
    assert await fanout.join(record(restarted)) == ["run-v1"]
    samples = await asyncio.gather(*(pool.chat(f"late-{i}", ask("run-v1")) for i in range(8)))
    assert restarted.replica_id in {s.replica_id for s in samples}
    assert {s.adapter for s in samples} == {"run-v1"}


async def test_more_versions_than_max_loras_are_refused_with_the_numbers(pool, stubs) -> None:
    fanout = AdapterFanout(pool)
    stubs += start_replicas(1, "--max-loras", "2")
    await fanout.join(record(stubs[0], max_loras=2))
    assert (await fanout.publish("run-v1", "/a/1")).current
    assert (await fanout.publish("run-v2", "/a/2")).current
    with pytest.raises(TooManyVersions, match="keeping 3 adapter versions .* at most 2"):
        await fanout.publish("run-v3", "/a/3")
    await fanout.retire("run-v1")
    assert (await fanout.publish("run-v3", "/a/3")).current
    assert await fanout.served(record(stubs[0])) == {"tiny-base", "run-v2", "run-v3"}


async def test_an_answer_from_another_version_is_an_infrastructure_failure(pool, stubs) -> None:
    fanout = AdapterFanout(pool)
    stubs += start_replicas(1, "--answer-as", "run-v0")
    await fanout.join(record(stubs[0]))
    assert (await fanout.publish("run-v1", "/a/1")).current
    with pytest.raises(WrongAdapter, match="answered from 'run-v0', asked 'run-v1'"):
        await pool.chat("job", ask("run-v1"))
    assert (await pool.registry.counters())["wrong_adapter"] == 1
