"""Rollout workers: take jobs from the shared Redis stream, play them, publish their results.

Run inside the trainer (``rollout_workers`` tasks) or as extra processes on any host that reaches
the same Redis and services: ``python -m halo_trainer.worker``. A worker that dies mid-job leaves
the job pending; another worker reclaims it after ``job_claim_idle_s`` (live workers send a
heartbeat, so a long job is never stolen from a worker that is still playing it).

What plays a job is decided in one place, ``PLAYERS``, by the job's kind (``halo.schemas.RolloutJob``).
The table sits above ``rollout`` and ``mcts`` so that neither imports the other to dispatch: a new
kind of job is one schema member and one entry here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import get_args

import redis.asyncio as aioredis

from halo.logging import setup_logging
from halo.queue import Delivery, StreamQueue
from halo.schemas import EpisodeGroupJob, EvalJob, RolloutJob, RolloutResult, SearchJob, StepGroupJob
from halo.settings.trainer import TrainerSettings
from halo_trainer import keys
from halo_trainer.mcts.jobs import run_search_job
from halo_trainer.rollout.play import Services, StopCheck, run_job
from halo_trainer.rollout.services import make_services
from halo_trainer.streams import jobs_queue, results_queue

logger = logging.getLogger("halo.trainer.worker")

Player = Callable[[Services, RolloutJob, Path, StopCheck | None], Awaitable[RolloutResult]]


async def _rollouts(services: Services, job: RolloutJob, runs_dir: Path, stopped: StopCheck | None) -> RolloutResult:
    """Step groups, episode groups and evaluation episodes (``halo_trainer.rollout.play``)."""
    return await run_job(services, job, stopped)


async def _search(services: Services, job: RolloutJob, runs_dir: Path, stopped: StopCheck | None) -> RolloutResult:
    """An MCTS search (``halo_trainer.mcts``); the tree goes to the run folder."""
    return await run_search_job(services, job, runs_dir, stopped)


PLAYERS: dict[type, Player] = {
    StepGroupJob: _rollouts,
    EpisodeGroupJob: _rollouts,
    SearchJob: _search,
    EvalJob: _rollouts,
}


def job_kinds() -> set[type]:
    """Every member of the ``RolloutJob`` union (what ``PLAYERS`` must cover)."""
    (union, *_) = get_args(RolloutJob)  # Annotated[A | B | ..., Field(discriminator=...)]
    return set(get_args(union))


async def play(services: Services, job: RolloutJob, runs_dir: Path, stopped: StopCheck | None = None) -> RolloutResult:
    """Play ``job`` as its kind says (``PLAYERS``)."""
    player = PLAYERS.get(type(job))
    if player is None:
        raise TypeError(f"no player for a job of kind {type(job).__name__}: add it to halo_trainer.worker.PLAYERS")
    return await player(services, job, runs_dir, stopped)


async def work(
    name: str, redis: aioredis.Redis, services: Services, settings: TrainerSettings, stop: asyncio.Event
) -> None:
    """The worker loop: one job at a time, heartbeat while it plays, results then ack."""
    jobs = jobs_queue(redis, settings)

    async def handle(delivery: Delivery[RolloutJob]) -> None:
        job = delivery.message
        if await redis.sismember(keys.STOPPED_RUNS, job.run_id):
            logger.info("%s: dropping job %s of stopped run %s", name, job.job_id, job.run_id)
            return
        heartbeat = asyncio.create_task(_heartbeat(jobs, name, delivery, settings.job_claim_idle_s / 3))

        async def stopped() -> bool:
            return bool(await redis.sismember(keys.STOPPED_RUNS, job.run_id))

        try:
            result = await play(services, job, settings.runs_dir, stopped)
        finally:
            heartbeat.cancel()
        # Published before the job is acknowledged: a crash in between replays the job, and the
        # learner drops the duplicate result by job id.
        await results_queue(redis, job.run_id).publish(result, dedup_id=job.job_id)

    # The process's browser sessions belong to one env session lease (shared by its workers): if
    # the process dies, the env closes them within seconds instead of after its idle TTL.
    async with services.env.hold_lease():
        while not stop.is_set():
            try:
                await jobs.process(name, handle, block_ms=1000)
            except (aioredis.ConnectionError, aioredis.TimeoutError) as exc:
                logger.warning("%s: Redis unavailable (%s); retrying", name, exc)
                await asyncio.sleep(1)


async def _heartbeat(queue: StreamQueue, consumer: str, delivery: Delivery, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        await queue.touch(consumer, delivery)


async def main(workers: int) -> None:  # pragma: no cover - process entry point
    settings = TrainerSettings()
    setup_logging("worker", settings.log_level)
    redis = aioredis.from_url(settings.redis_url)
    services = make_services(settings, redis)
    stop = asyncio.Event()
    host = f"{socket.gethostname()}-{os.getpid()}"
    await asyncio.gather(*(work(f"worker-{host}-{i}", redis, services, settings, stop) for i in range(workers)))


if __name__ == "__main__":  # pragma: no cover
    asyncio.run(main(int(os.environ.get("HALO_WORKERS", "2"))))
