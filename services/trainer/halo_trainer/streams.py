"""The trainer's Redis queues and the current-policy record, built in one place beside their keys.

Every producer and consumer of a stream (the run loop, the in-process workers, extra worker
processes, the tests) gets its queue here, so they agree on the consumer group, the message type
and the delivery limits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import redis.asyncio as aioredis

from halo.queue import StreamQueue
from halo.schemas import PolicyVersion, RolloutJob, RolloutResult
from halo.settings.trainer import TrainerSettings
from halo_trainer import keys

LEARNER = "learner"  # the results stream's one consumer group, and its one consumer


def jobs_queue(redis: aioredis.Redis, settings: TrainerSettings) -> StreamQueue[RolloutJob]:
    """The job stream every run publishes to and every worker takes from."""
    return StreamQueue(
        redis,
        keys.JOBS,
        "workers",
        RolloutJob,
        claim_idle_ms=int(settings.job_claim_idle_s * 1000),
        max_deliveries=settings.job_max_deliveries,
    )


def results_queue(redis: aioredis.Redis, run_id: str) -> StreamQueue[RolloutResult]:
    """One run's results. Their done-marks are the job ids used in a checkpointed update.

    A result is consumed by exactly one learner and never reclaimed by another consumer; its
    done-mark never expires, so a duplicate is recognised however late the run resumes.
    """
    return StreamQueue(redis, keys.results(run_id), LEARNER, RolloutResult, claim_idle_ms=10**12, done_ttl_s=None)


def current_policy_reader(redis: aioredis.Redis) -> Callable[[str], Awaitable[PolicyVersion]]:
    """What workers call before every sample: the run's current version, as the loop last set it."""

    async def current(run_id: str) -> PolicyVersion:
        raw = await redis.get(keys.policy(run_id))
        if raw is None:
            raise RuntimeError(f"run {run_id} has no current policy version in Redis")
        return PolicyVersion.model_validate_json(raw)

    return current


async def set_current_policy(redis: aioredis.Redis, record: PolicyVersion) -> None:
    """Make ``record`` the version new samples of its run use."""
    await redis.set(keys.policy(record.run_id), record.model_dump_json())
