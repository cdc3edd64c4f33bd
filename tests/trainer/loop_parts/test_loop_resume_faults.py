"""A run killed after a job failed on infrastructure since its last checkpoint resumes without waiting.

The restarted loop's counters are the checkpoint's: a job the dead loop published after it is
published again, and a worker skips that copy when the job already ran (the job stream's done-mark).
The job's result is what answers it. A failed one is replayed from the learner's pending list like
any other, so the new loop must know from it that the job is answered (and replaced), or it waits
for a result that never comes until ``JOB_TIMEOUT_S``.

Real Redis, the real loop, learner and checkpoints, a scripted worker (tests/trainer/loop_harness.py).
"""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from halo.schemas import RolloutJob, RolloutResult
from tests.trainer.loop_harness import (
    Killed,
    episode,
    infra,
    make_loop,
    published_job_ids,
    results_pending,
    run_with_worker,
    used_job_ids,
)


@pytest.mark.parametrize("prefetch", [0, 1], ids=["synchronous", "prefetch1"])
async def test_a_job_failed_after_the_checkpoint_is_not_waited_on_after_a_restart(
    clean_redis, vllm_admin, base_model, tmp_path, monkeypatch, prefetch
):
    # The wait the bug caused, made short: a resumed loop that waits on a job whose result will
    # never come times it out (jobs_timed_out) instead of hanging the test for 15 minutes.
    monkeypatch.setattr("halo_trainer.loop_parts.pipeline.JOB_TIMEOUT_S", 10.0)
    redis = aioredis.from_url(clean_redis)
    run_dir = tmp_path / "run"
    # 12 one-episode jobs, 2 an update: 6 updates, checkpointed after updates 3 and 6.
    run = {"episodes": 12, "checkpoint_every": 3, "prefetch_updates": prefetch}
    first = make_loop(redis, run_dir, vllm_admin.url, base_model, **run)
    checkpointed: list[int] = []  # jobs_published as each checkpoint saved it
    save = first.parts.durability.checkpoint

    async def checkpoint() -> None:
        checkpointed.append(first.c.jobs_published)
        await save()

    first.parts.durability.checkpoint = checkpoint
    failed: list[str] = []

    async def play(job: RolloutJob) -> RolloutResult:
        index = int(job.job_id.rsplit("-j", 1)[-1])
        # The first job published after the checkpoint of update 3 breaks; the loop replaces it.
        if len(checkpointed) == 1 and index >= checkpointed[0] and not failed:
            failed.append(job.job_id)
            return infra(job, "env: 503 no browser context is free")
        return episode(job)

    async def report(status) -> None:
        # Killed at the first update after the failure was routed (and replaced), before update 6's checkpoint.
        if first.c.infra_failed_jobs and status.updates % 3:
            raise Killed

    first.parts.status_cb = report
    with pytest.raises(Killed):
        await run_with_worker(first, play)
    assert len(checkpointed) == 1 and len(failed) == 1
    assert 3 < first.c.updates < 6 and first.c.infra_failed_jobs == 1
    assert any(job_id.endswith(f"-j{first.c.jobs_published - 1}") for job_id in await published_job_ids(redis))

    second = make_loop(redis, run_dir, vllm_admin.url, base_model, **run)
    outcome, _ = await run_with_worker(second, play)
    assert outcome == "finished"
    c = second.c
    assert (c.updates, c.episodes_done) == (6, 12)
    assert c.jobs_timed_out == 0  # nothing was waited on that no worker would answer
    # Exact accounting: every published job used once or replaced (never both), none in flight.
    published = set(await published_job_ids(redis))
    used = await used_job_ids(redis)
    assert len(used) == 12 and used.isdisjoint(failed) and published == used | set(failed)
    assert c.jobs_published == len(published) == len(used) + c.infra_failed_jobs + len(c.inflight)
    assert c.infra_failed_jobs == 1 and c.inflight == {}
    assert await results_pending(redis) == 0
    await redis.aclose()
