"""The rollout worker on the real job stream (real Redis), playing through the in-process stand-ins."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from halo.schemas import (
    EpisodeGroupJob,
    EvalJob,
    PolicyVersion,
    RolloutJob,
    RolloutResult,
    SearchJob,
    StepGroupJob,
)
from halo.schemas.search_settings import MCTSConfig
from halo.settings.trainer import TrainerSettings
from halo_trainer import keys, worker
from halo_trainer.streams import current_policy_reader, jobs_queue, results_queue, set_current_policy
from halo_trainer.worker import play, work
from tests.trainer.loop_harness import TIMEOUT_S
from tests.trainer.mcts.search_stand_ins import SnapshotEnv
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


def one_of_each(run_id: str = RUN) -> list[RolloutJob]:
    """A job of every kind, each with its own id."""
    extra = {
        "train_step_group": {"group_size": 2, "max_steps": 1},
        "train_episode_group": {"group_size": 2, "max_steps": 1},
        "search": {"mcts": MCTSConfig(simulations=2, max_children=2, max_depth=2, critic="progress")},
        "eval": {"max_steps": 1},
    }
    return [
        job_for(run_id, kind=kind, job_id=f"{run_id}-{kind}", group_id=f"{run_id}-{kind}", **fields)
        for kind, fields in extra.items()
    ]


@pytest.fixture
def runners(monkeypatch) -> list[tuple[str, RolloutJob]]:
    """The worker's two runners replaced by recorders: which one each job reached, and as what."""
    calls: list[tuple[str, RolloutJob]] = []

    def answer(job: RolloutJob) -> RolloutResult:
        return RolloutResult(job_id=job.job_id, run_id=job.run_id, purpose=job.purpose, policy_version=0)

    async def run_job(svc, job, stopped=None) -> RolloutResult:
        calls.append(("run_job", job))
        return answer(job)

    async def run_search_job(svc, job, runs_dir, stopped=None) -> RolloutResult:
        assert Path(runs_dir).name == "runs"
        calls.append(("run_search_job", job))
        return answer(job)

    monkeypatch.setattr(worker, "run_job", run_job)
    monkeypatch.setattr(worker, "run_search_job", run_search_job)
    return calls


DISPATCHED = [
    ("run_job", StepGroupJob),
    ("run_job", EpisodeGroupJob),
    ("run_search_job", SearchJob),
    ("run_job", EvalJob),
]


async def test_play_sends_each_kind_of_job_to_its_runner(runners, tmp_path):
    jobs = one_of_each()
    for job in jobs:
        assert (await play(services(), job, tmp_path / "runs")).job_id == job.job_id
    assert [(runner, type(job)) for runner, job in runners] == DISPATCHED
    assert [job for _, job in runners] == jobs  # passed on as they came, nothing rebuilt


async def test_a_worker_reads_every_kind_from_the_job_stream_and_dispatches_it(clean_redis, runners):
    redis = aioredis.from_url(clean_redis)
    settings = TrainerSettings(job_claim_idle_s=30)
    jobs = jobs_queue(redis, settings)
    for job in one_of_each():
        await jobs.publish(job, dedup_id=job.job_id)
    # A job of the shape before the kinds (purpose and group_mode strings, no kind): never guessed at.
    old = one_of_each()[0].model_dump(mode="json", exclude={"kind"}) | {"group_mode": "step", "purpose": "train"}
    await redis.xadd(jobs.stream, {"data": json.dumps(old), "dedup_id": f"{RUN}-old"})

    stop = asyncio.Event()
    task = asyncio.create_task(work("w0", redis, services(), settings, stop))
    results = results_queue(redis, RUN)

    async def settled() -> bool:
        stats = await jobs.stats()
        return await redis.xlen(results.stream) == 4 and stats["pending"] == stats["lag"] == 0

    await until(settled, "every kind played and acknowledged")
    stop.set()
    await task
    assert [(runner, type(job)) for runner, job in runners] == DISPATCHED
    played = [RolloutResult.model_validate_json(f[b"data"]) for _, f in await redis.xrange(results.stream)]
    assert [r.purpose for r in played] == ["train", "train", "search", "eval"]
    [dead] = await jobs.dead_letters()
    assert dead["dedup_id"] == f"{RUN}-old" and "StepGroupJob | EpisodeGroupJob | SearchJob | EvalJob" in dead["reason"]
    await redis.aclose()


async def test_each_kind_plays_for_real_through_the_dispatch(tmp_path):
    """The real runners behind ``play``: the kind decides how the job is played."""
    frozen = PolicyVersion(run_id=RUN, version=5, adapter_name=f"{RUN}-v5", created_at=0.0)
    current = PolicyVersion(run_id=RUN, version=6, adapter_name=f"{RUN}-v6", created_at=0.0)

    async def now(_: str) -> PolicyVersion:
        return current

    policy = PolicyStandIn()
    svc = services(SnapshotEnv(), policy, current=now)
    step, episodes, search, evaluation = one_of_each()
    evaluation = evaluation.model_copy(update={"policy": frozen})

    forked = await play(svc, step, tmp_path)  # one episode, two forks at its state
    assert forked.purpose == "train" and len(forked.episodes) == 1
    assert [t.group_id for t in forked.transitions] == [f"{step.group_id}-s0"] * 2
    grouped = await play(svc, episodes, tmp_path)  # two episodes sharing the job's group
    assert len(grouped.episodes) == 2 and {t.group_id for t in grouped.transitions} == {episodes.group_id}
    searched = await play(svc, search, tmp_path)
    assert searched.purpose == "search" and searched.infra_error is None
    assert searched.search is not None and Path(searched.search.tree_file).is_file()
    asked_before_eval = len(policy.requests)
    scored = await play(svc, evaluation, tmp_path)
    assert scored.purpose == "eval" and [e.purpose for e in scored.episodes] == ["eval"]
    # Train and search jobs sample the run's current version; an eval job its own, greedily.
    assert {r["model"] for r in policy.requests[:asked_before_eval]} == {f"{RUN}-v6"}
    assert {(r["model"], r["temperature"]) for r in policy.requests[asked_before_eval:]} == {(f"{RUN}-v5", 0.0)}
