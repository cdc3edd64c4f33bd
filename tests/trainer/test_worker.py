"""The rollout worker on the real job stream (real Redis), playing through the in-process stand-ins."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis

from halo.schemas import PolicyVersion, RolloutResult
from halo.settings.trainer import TrainerSettings
from halo_trainer import keys
from halo_trainer.rollout.worker import work
from halo_trainer.streams import current_policy_reader, jobs_queue, results_queue, set_current_policy
from tests.trainer.loop_harness import TIMEOUT_S
from tests.trainer.stand_ins import EnvStandIn, PolicyStandIn, job_for, services

RUN = "run-w"


async def until(check, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S  # a guard against a hang, not a speed target
    while not await check():
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.05)


async def test_a_worker_plays_each_job_once_reading_the_current_policy_and_publishes_before_acknowledging(
    clean_redis,
):
    redis = aioredis.from_url(clean_redis)
    settings = TrainerSettings(job_claim_idle_s=30)
    await set_current_policy(redis, PolicyVersion(run_id=RUN, version=3, adapter_name=f"{RUN}-v3", created_at=0.0))
    env, policy = EnvStandIn(), PolicyStandIn()
    svc = services(env, policy, current=current_policy_reader(redis))
    jobs = jobs_queue(redis, settings)
    job = job_for(RUN, group_size=2, max_steps=1)
    for _ in range(2):  # published twice (a producer retried): played once
        await jobs.publish(job, dedup_id=job.job_id)
    other = job_for(RUN, job_id=f"{RUN}-j1", group_id=f"{RUN}-j1", group_size=2, max_steps=1)
    await jobs.publish(other, dedup_id=other.job_id)

    stop = asyncio.Event()
    worker = asyncio.create_task(work("w0", redis, svc, settings, stop))
    results = results_queue(redis, RUN)

    async def settled() -> bool:
        return await redis.xlen(results.stream) == 2 and (await jobs.stats())["pending"] == 0

    await until(settled, "both jobs played and acknowledged")
    await asyncio.sleep(0.5)  # the duplicate entry has been taken too by now (block 1 s per poll)
    assert env.leases == 1  # the worker holds its env session lease while it works
    stop.set()
    await worker
    assert env.leases == 0
    entries = await redis.xrange(results.stream)
    played = [RolloutResult.model_validate_json(f[b"data"]) for _, f in entries]
    assert sorted(r.job_id for r in played) == [job.job_id, other.job_id]
    assert len(env.resets) == 2 and (await jobs.stats())["length"] == 3
    assert await jobs.is_done(job.job_id) and await jobs.is_done(other.job_id)
    # Every sample asked for the run's current version, as the loop set it in Redis.
    assert {r["model"] for r in policy.requests} == {f"{RUN}-v3"}
    assert {t.policy_version for r in played for t in r.transitions} == {3}
    await redis.aclose()


async def test_a_worker_drops_the_queued_jobs_of_a_stopped_run_without_playing_them(clean_redis):
    redis = aioredis.from_url(clean_redis)
    settings = TrainerSettings(job_claim_idle_s=30)
    env = EnvStandIn()
    jobs = jobs_queue(redis, settings)
    await redis.sadd(keys.STOPPED_RUNS, RUN)
    await jobs.publish(job_for(RUN), dedup_id=f"{RUN}-j0")

    stop = asyncio.Event()
    worker = asyncio.create_task(work("w0", redis, services(env), settings, stop))

    async def taken() -> bool:
        stats = await jobs.stats()
        return stats["lag"] == 0 and stats["pending"] == 0

    await until(taken, "the stopped run's job taken and acknowledged")
    stop.set()
    await worker
    assert env.resets == [] and await redis.xlen(keys.results(RUN)) == 0
    await redis.aclose()
