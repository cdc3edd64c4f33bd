"""The run loop's bookkeeping: which results it uses, how many jobs it asks for, and what survives a crash.

Real Redis, the real loop, learner and checkpoints, a scripted worker (tests/trainer/loop_harness.py),
vLLM's admin routes stood in (conftest).
"""

from __future__ import annotations

import json
import logging

import pytest
import redis.asyncio as aioredis

from halo.schemas import EpisodeGroupJob, EvalJob, GroupMode, RolloutJob, RolloutResult, StepGroupJob
from halo_trainer.config import EVAL_SEED_OFFSET
from halo_trainer.loop_parts.parts import LoopStatus
from tests.trainer.loop_harness import (
    Killed,
    episode,
    make_loop,
    published_job_ids,
    results_pending,
    run_with_worker,
    used_job_ids,
)


def metrics_of(run_dir) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


async def test_duplicate_results_are_used_once_whether_they_arrive_together_before_or_after_the_checkpoint(
    clean_redis, vllm_admin, base_model, tmp_path
):
    redis = aioredis.from_url(clean_redis)
    # A checkpoint every 2 updates: the duplicate of a job used in the update before is either not yet
    # checkpointed (update 1 -> seen during update 2) or checkpointed (update 2 -> seen during update 3).
    loop = make_loop(redis, tmp_path / "run", vllm_admin.url, base_model, episodes=8, checkpoint_every=2)
    played: list[RolloutResult] = []

    async def play(job: RolloutJob) -> list[RolloutResult]:
        result = episode(job)
        played.append(result)
        # Its own result twice (a worker that died between publishing and acknowledging is replayed),
        # and again the result of the job two before it: a late duplicate.
        late = [played[-3]] if len(played) >= 3 else []
        return [result, result, *late]

    outcome, seen = await run_with_worker(loop, play)
    assert outcome == "finished"
    assert (loop.c.episodes_done, loop.c.updates) == (8, 4)
    assert [m["rollout/episodes_done"] for m in metrics_of(tmp_path / "run")] == [2.0, 4.0, 6.0, 8.0]
    assert len(seen) == 8 and await used_job_ids(redis) == {j.job_id for j in seen}
    assert await results_pending(redis) == 0  # the dropped copies were acknowledged too
    await redis.aclose()


async def test_eval_results_are_scored_apart_and_never_trained_on(clean_redis, vllm_admin, base_model, tmp_path):
    redis = aioredis.from_url(clean_redis)
    loop = make_loop(redis, tmp_path / "run", vllm_admin.url, base_model, episodes=4, eval_every=2, eval_episodes=3)

    async def play(job: RolloutJob) -> list[RolloutResult]:
        evaluation = isinstance(job, EvalJob)
        result = episode(job, success=evaluation)  # evaluations succeed, training never does
        return [result, result] if evaluation else [result]  # an eval result arrives twice

    outcome, seen = await run_with_worker(loop, play)
    assert outcome == "finished" and (loop.c.episodes_done, loop.c.updates) == (4, 2)
    evals = [json.loads(x) for x in (tmp_path / "run" / "eval.jsonl").read_text().splitlines()]
    assert [e["update"] for e in evals] == [0, 2]
    assert all(e["eval/success_rate"] == 1.0 and e["eval/episodes"] == 3 for e in evals)
    assert all(m["rollout/success_rate"] == 0.0 for m in metrics_of(tmp_path / "run"))
    eval_jobs = [j for j in seen if isinstance(j, EvalJob)]
    assert len(eval_jobs) == 6
    assert {(j.kind, j.temperature, j.group_size) for j in eval_jobs} == {("eval", 0.0, 1)}
    assert sorted(j.seed for j in eval_jobs) == sorted([EVAL_SEED_OFFSET + i for i in range(3)] * 2)
    # Only training jobs count as used; every result, both eval copies included, was acknowledged.
    assert await used_job_ids(redis) == {j.job_id for j in seen if not isinstance(j, EvalJob)}
    assert await results_pending(redis) == 0
    await redis.aclose()


async def test_jobs_published_never_exceed_what_the_episodes_need(clean_redis, vllm_admin, base_model, tmp_path):
    redis = aioredis.from_url(clean_redis)
    # 5 episodes, 2 jobs an update, one episode a job (step groups): 5 jobs, the last update has one.
    # Synchronous: no more than one update's jobs are ever in flight.
    loop = make_loop(
        redis, tmp_path / "run", vllm_admin.url, base_model, episodes=5, group_mode=GroupMode.STEP, prefetch_updates=0
    )
    in_flight: list[int] = []

    async def play(job: RolloutJob) -> RolloutResult:
        in_flight.append(len(await published_job_ids(redis)) - len(in_flight))  # published, not yet answered
        return episode(job)

    outcome, seen = await run_with_worker(loop, play)
    assert outcome == "finished" and (loop.c.episodes_done, loop.c.updates) == (5, 3)
    published = await published_job_ids(redis)
    assert len(published) == len(set(published)) == loop.c.jobs_published == 5
    assert max(in_flight) <= loop.cfg.jobs_per_update
    assert all(isinstance(j, StepGroupJob) for j in seen)  # the run's group mode is the jobs' kind
    await redis.aclose()


async def test_with_prefetch_the_next_updates_jobs_are_in_flight_while_the_learner_updates(
    clean_redis, vllm_admin, base_model, tmp_path
):
    redis = aioredis.from_url(clean_redis)
    # 7 step-group episodes, 2 jobs an update, one update's worth ahead: 4 updates (2, 2, 2, 1 episodes).
    loop = make_loop(
        redis, tmp_path / "run", vllm_admin.url, base_model, episodes=7, group_mode=GroupMode.STEP, prefetch_updates=1
    )
    during_update: list[tuple[int, int, int]] = []  # (update, jobs in flight, results buffered) as it learns
    learn_from = loop._learn_from

    async def learn(messages):
        during_update.append((loop.c.updates + 1, len(loop.c.inflight), len(loop.parts.pipeline.buffer)))
        return await learn_from(messages)

    loop._learn_from = learn

    outcome, seen = await run_with_worker(loop, _played)
    assert outcome == "finished" and (loop.c.episodes_done, loop.c.updates) == (7, 4)
    # While updates 1-3 learn, the next update's 2 jobs are out (in flight or already answered);
    # the last update has nothing left to ask for: 7 jobs, never an 8th beyond the budget.
    assert [n_in + n_buf for _, n_in, n_buf in during_update] == [2, 2, 1, 0]
    published = await published_job_ids(redis)
    assert len(published) == len(set(published)) == loop.c.jobs_published == len(seen) == 7
    # Every published job is used, replaced or in flight: all used at the end, nothing in flight or pending.
    used = await used_job_ids(redis)
    c = loop.c
    assert c.jobs_published == len(used) + c.infra_failed_jobs + len(c.inflight) == 7 + 0 + 0
    assert used == set(published) and await results_pending(redis) == 0
    await redis.aclose()


async def test_an_episode_group_job_counts_as_its_n_episodes_in_the_budget(
    clean_redis, vllm_admin, base_model, tmp_path
):
    redis = aioredis.from_url(clean_redis)
    # 5 episodes of episode groups of 2: 3 jobs (6 episodes), never 4 or 5.
    loop = make_loop(redis, tmp_path / "run", vllm_admin.url, base_model, episodes=5, group_mode=GroupMode.EPISODE)

    async def play(job: RolloutJob) -> RolloutResult:
        return episode(job, episodes=job.group_size)

    outcome, seen = await run_with_worker(loop, play)
    assert outcome == "finished" and (loop.c.episodes_done, loop.c.updates) == (6, 2)
    assert len(await published_job_ids(redis)) == loop.c.jobs_published == 3
    assert all(isinstance(j, EpisodeGroupJob) and j.group_size == 2 for j in seen)
    await redis.aclose()


@pytest.mark.parametrize("prefetch", [0, 1], ids=["synchronous", "prefetch1"])
async def test_a_crashed_run_resumes_at_its_checkpoint_and_replays_unacknowledged_results_exactly_once(
    clean_redis, vllm_admin, base_model, tmp_path, prefetch
):
    redis = aioredis.from_url(clean_redis)
    run_dir = tmp_path / "run"
    run = {"episodes": 8, "checkpoint_every": 2, "prefetch_updates": prefetch}
    first = make_loop(redis, run_dir, vllm_admin.url, base_model, **run)
    reported: list[LoopStatus] = []

    async def report(status: LoopStatus) -> None:
        reported.append(status)
        if status.updates == 3:  # learned from j4 and j5, not checkpointed: their results are unacknowledged
            raise Killed

    first.parts.status_cb = report
    try:
        await run_with_worker(first, lambda job: _played(job))
    except Killed:
        pass
    else:
        raise AssertionError("the first loop was not killed")
    assert [s.updates for s in reported] == [1, 2, 3] and reported[-1].episodes_done == 6
    # j4's and j5's results, delivered and not acknowledged (with prefetch, j6's and j7's may be too)
    assert await results_pending(redis) == 2 if not prefetch else 2 <= await results_pending(redis) <= 4
    assert len(await used_job_ids(redis)) == 4

    second = make_loop(redis, run_dir, vllm_admin.url, base_model, **run)
    outcome, seen = await run_with_worker(second, lambda job: _played(job))
    assert outcome == "finished"
    status = second.status()
    assert (status.updates, status.episodes_done, status.version) == (4, 8, 4)
    # j4 and j5 came back from the pending list; the new loop asked only for j6 and j7 (with
    # prefetch the dead loop had asked for them already: their results, or the jobs, were waiting).
    played = [j.job_id.rsplit("-", 1)[-1] for j in seen]
    assert played == ["j6", "j7"] if not prefetch else set(played) <= {"j6", "j7"}
    published = await published_job_ids(redis)
    # A job the dead loop published after its checkpoint is published again unless its result was
    # delivered; a worker skips the copy of a job already played (the job stream's done-mark).
    assert len(set(published)) == 8 and (len(published) == 8 or prefetch)
    assert len(played) == len(set(played))
    assert len(await used_job_ids(redis)) == 8 and await results_pending(redis) == 0
    assert [m["rollout/episodes_done"] for m in metrics_of(run_dir)] == [2.0, 4.0, 6.0, 6.0, 8.0]
    await redis.aclose()


async def _played(job: RolloutJob) -> RolloutResult:
    return episode(job)


async def test_the_final_checkpoint_is_not_written_again_when_the_last_update_just_wrote_it(
    clean_redis, vllm_admin, base_model, tmp_path, caplog
):
    redis = aioredis.from_url(clean_redis)
    loop = make_loop(redis, tmp_path / "run", vllm_admin.url, base_model, episodes=4, checkpoint_every=1)
    with caplog.at_level(logging.INFO, logger="halo_trainer.learner.checkpoint"):
        outcome, _ = await run_with_worker(loop, lambda job: _async(episode(job)))
    assert outcome == "finished" and loop.c.updates == 2
    committed = [r.getMessage() for r in caplog.records if "committed" in r.getMessage()]
    assert len(committed) == 2, committed  # one per update; the finish found nothing new to write
    assert await results_pending(redis) == 0
    await redis.aclose()


async def _async(value):
    return value
